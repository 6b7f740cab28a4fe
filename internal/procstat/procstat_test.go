package procstat

import "testing"

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
