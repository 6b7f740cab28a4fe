package shale

// Test helpers shared by the root package's tests: reading, replacing and
// damaging files of a store.

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// readFile returns the contents of a file of fs.
func readFile(t testing.TB, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && n > 0 {
		t.Fatal(err)
	}
	return b
}

// writeFile replaces (or creates) a file of fs with data, durably.
func writeFile(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	if err := fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(filepath.Dir(name)); err != nil {
		t.Fatal(err)
	}
}

// flipByte flips one bit of the byte at off of the file at path; a
// negative off counts from the end.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
