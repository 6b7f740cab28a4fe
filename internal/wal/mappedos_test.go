package wal

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestMappedWriterOSMatchesWritten: on the operating system's file system, a
// log stored through the mapping holds, byte for byte, what the same groups
// written with write(2) hold, followed by zeros while it is open and
// nothing once closed, whatever the groups' sizes: a few bytes, about a
// block, about the 1 MiB window, several windows; so that stores cross
// windows, start at a window's end, and outgrow allocation steps.
func TestMappedWriterOSMatchesWritten(t *testing.T) {
	const salt = 0x7e57
	dir := t.TempDir()
	open := func(name string) vfs.File {
		f, err := vfs.Default.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	wf, mf := open("written"), open("mapped")
	written, mapped := newWriter(wf, salt), newWriter(mf, salt)
	m, ok := mf.(vfs.Mapper)
	if !ok {
		t.Skip("the operating system's files are not Mappers here (Linux only)")
	}
	mapped.m = m

	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{7, blockSize - 40, 1 << 20, 3<<20 + 5}
	var total int
	for i := 0; total < 12<<20; i++ {
		var recs [][]byte
		for range 1 + rng.IntN(3) {
			n := sizes[rng.IntN(len(sizes))] + rng.IntN(100)
			recs = append(recs, bytes.Repeat([]byte{byte(i)}, n))
			total += n
		}
		syncNext := rng.IntN(4) == 0
		for _, w := range []*Writer{written, mapped} {
			if err := w.WriteGroup(recs, syncNext); err != nil {
				t.Fatal(err)
			}
			if syncNext {
				if err := w.Sync(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !mapped.Mapped() {
			t.Skip("this file system cannot map the log")
		}
	}
	want, err := os.ReadFile(filepath.Join(dir, "written"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "mapped"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) <= len(want) || !bytes.Equal(got[:len(want)], want) || bytes.Count(got[len(want):], []byte{0}) != len(got)-len(want) {
		t.Fatalf("the open mapped log (%d bytes) is not the written log (%d bytes) followed by zeros", len(got), len(want))
	}
	for _, w := range []*Writer{written, mapped} {
		if err := w.EndClose(); err != nil {
			t.Fatal(err)
		}
	}
	if want, err = os.ReadFile(filepath.Join(dir, "written")); err != nil {
		t.Fatal(err)
	}
	got, err = os.ReadFile(filepath.Join(dir, "mapped"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the closed mapped log (%d bytes) differs from the written one (%d bytes)", len(got), len(want))
	}
}
