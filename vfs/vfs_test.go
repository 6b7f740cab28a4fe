package vfs

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// testFS exercises the FS contract; it runs on the OS and in-memory FSes.
func testFS(t *testing.T, fs FS, dir string) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fs.MkdirAll(fs.PathJoin(dir, "sub"), 0o755))
	f, err := fs.Create(fs.PathJoin(dir, "a"))
	must(err)
	_, err = f.Write([]byte("hello "))
	must(err)
	_, err = f.Write([]byte("world"))
	must(err)
	must(f.Sync())
	if n, err := f.Size(); err != nil || n != 11 {
		t.Fatalf("Size = %d, %v", n, err)
	}
	must(f.Close())

	r, err := fs.Open(fs.PathJoin(dir, "a"))
	must(err)
	buf := make([]byte, 5)
	if _, err := r.ReadAt(buf, 6); err != nil || string(buf) != "world" {
		t.Fatalf("ReadAt = %q, %v", buf, err)
	}
	if n, err := r.ReadAt(buf, 8); n != 3 || !errors.Is(err, io.EOF) {
		t.Fatalf("short ReadAt = %d, %v; want 3, EOF", n, err)
	}
	must(r.Close())

	must(fs.Rename(fs.PathJoin(dir, "a"), fs.PathJoin(dir, "b")))
	if _, err := fs.Open(fs.PathJoin(dir, "a")); err == nil {
		t.Fatal("a still exists after rename")
	}
	names, err := fs.List(dir)
	must(err)
	if strings.Join(names, ",") != "b,sub" {
		t.Fatalf("List = %v", names)
	}
	if fi, err := fs.Stat(fs.PathJoin(dir, "b")); err != nil || fi.Size() != 11 {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	must(fs.SyncDir(dir))

	lock, err := fs.Lock(fs.PathJoin(dir, "LOCK"))
	must(err)
	if _, err := fs.Lock(fs.PathJoin(dir, "LOCK")); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock = %v, want ErrLocked", err)
	}
	must(lock.Close())
	lock, err = fs.Lock(fs.PathJoin(dir, "LOCK"))
	must(err)
	must(lock.Close())

	must(fs.Remove(fs.PathJoin(dir, "b")))
	if _, err := fs.Stat(fs.PathJoin(dir, "b")); err == nil {
		t.Fatal("b still exists after Remove")
	}
}

func TestOSFS(t *testing.T)  { testFS(t, Default, t.TempDir()) }
func TestMemFS(t *testing.T) { testFS(t, NewMem(), "dir") }

// TestCrashClone checks that a crash keeps exactly the synced bytes of the
// names made durable by SyncDir.
func TestCrashClone(t *testing.T) {
	fs := NewMem()
	write := func(name, data string, sync bool) File {
		f, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(data))
		if sync {
			f.Sync()
		}
		return f
	}
	f := write("synced", "abc", true)
	f.Write([]byte("def")) // not synced
	write("unsynced", "xyz", false)
	fs.SyncDir("")
	write("undurable-name", "123", true) // synced data, but no SyncDir after

	c := fs.CrashClone()
	check := func(name, want string) {
		t.Helper()
		f, err := c.Open(name)
		if want == "-" {
			if err == nil {
				t.Fatalf("%s survived the crash", name)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		n, _ := f.Size()
		buf := make([]byte, n)
		f.ReadAt(buf, 0)
		if string(buf) != want {
			t.Fatalf("%s = %q after crash, want %q", name, buf, want)
		}
	}
	check("synced", "abc")
	check("unsynced", "")
	check("undurable-name", "-")
}

func TestErrorFS(t *testing.T) {
	fs := NewErrorFS(NewMem())
	fs.SetInjector(func(op Op, path string) error {
		if op == OpSync && filepath.Base(path) == "bad" {
			return ErrInjected
		}
		return nil
	})
	good, _ := fs.Create("good")
	bad, _ := fs.Create("bad")
	if err := good.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := bad.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("Sync of bad = %v, want injected error", err)
	}
	fs.SetInjector(nil)
	if err := bad.Sync(); err != nil {
		t.Fatal(err)
	}
}
