package vfs

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestStartWriteback checks that the operating system's files start
// writeback on Linux, over a range written, and that the data reads back.
func TestStartWriteback(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	f, err := Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws, ok := f.(WritebackStarter)
	if !ok {
		t.Fatalf("%T cannot start writeback", f)
	}
	data := bytes.Repeat([]byte("writeback"), 1<<17)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := ws.StartWriteback(0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, err %v", len(got), err)
	}
}
