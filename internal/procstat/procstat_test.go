package procstat

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadings checks that the counters are read and move: reading
// /proc/self/io is itself a read syscall.
func TestReadings(t *testing.T) {
	a, err := ReadIO()
	if err != nil {
		t.Skip("no /proc/self/io:", err)
	}
	if _, err := ReadIO(); err != nil {
		t.Fatal(err)
	}
	b, err := ReadIO()
	if err != nil {
		t.Fatal(err)
	}
	if d := b.Sub(a); d.SyscR < 2 || d.RChar <= 0 {
		t.Fatalf("two reads of /proc/self/io counted %+v", d)
	}
	if rss, err := PeakRSS(); err != nil || rss <= 0 {
		t.Fatalf("PeakRSS() = %d, %v", rss, err)
	}
	if v, err := Status("VmRSS", "VmHWM"); err != nil || v[0] <= 0 || v[0] > v[1] {
		t.Fatalf("Status(VmRSS, VmHWM) = %v, %v; want a resident set within the peak", v, err)
	}
	if _, err := Status("NoSuchField"); err == nil {
		t.Fatal("Status of a field /proc/self/status lacks: no error")
	}
	if n, err := OpenFiles(); err != nil || n < 3 {
		t.Fatalf("OpenFiles() = %d, %v; want at least stdin, stdout and stderr", n, err)
	}
}

// TestWriteBytes checks what the benchmarks rely on to count a WAL written
// through a memory mapping: write_bytes grows by the pages dirtied through
// a shared mapping, as it does by those dirtied by write(2).
func TestWriteBytes(t *testing.T) {
	const size = 1 << 20
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := ReadIO()
	if err != nil {
		t.Skip("no /proc/self/io:", err)
	}
	if _, err := f.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	b, err := ReadIO()
	if err != nil {
		t.Fatal(err)
	}
	if b.WriteBytes == a.WriteBytes {
		t.Skip("this file system accounts no write_bytes (tmpfs?)")
	}
	if d := b.Sub(a); d.WriteBytes < size {
		t.Fatalf("write(2) of %d bytes counted %d write_bytes", size, d.WriteBytes)
	}
	if err := f.Truncate(2 * size); err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, 2*size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	for i := size; i < 2*size; i++ {
		m[i] = 1
	}
	c, err := ReadIO()
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Sub(b); d.WriteBytes < size || d.WChar > size/2 {
		t.Fatalf("stores of %d bytes through a mapping counted %d write_bytes and %d wchar; want them in write_bytes alone", size, d.WriteBytes, d.WChar)
	}
}
