package vfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreFaultIsError: a store into a mapped page the file no longer
// backs (another process cut the file) raises SIGBUS; it must come back
// as an error, not kill the process.
func TestStoreFaultIsError(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	f, err := Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := f.(Mapper)
	if err := m.StoreAt([]byte("first"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(name, 0); err != nil {
		t.Fatal(err)
	}
	err = m.StoreAt([]byte("second"), 3*4096) // inside the mapped window
	if err == nil || !strings.Contains(err.Error(), "faulted") {
		t.Fatalf("store past the file's end: %v, want a fault error", err)
	}
}
