package vfs

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMapForReadsRefused: a mapping the kernel refuses is
// ErrMappingRefused; one the file system cannot make is ErrNotMappable.
func TestMapForReadsRefused(t *testing.T) {
	name := t.TempDir() + "/f"
	if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		errno error
		want  error
	}{{unix.ENOMEM, ErrMappingRefused}, {unix.ENODEV, ErrNotMappable}} {
		SetMapCalls(t, nil, func(int, int64, int, int, int) ([]byte, error) { return nil, c.errno })
		f, err := Default.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.(ReadMapper).MapForReads(); !errors.Is(err, c.want) {
			t.Errorf("mmap failing with %v: %v, want %v", c.errno, err, c.want)
		}
		f.Close()
	}
}
