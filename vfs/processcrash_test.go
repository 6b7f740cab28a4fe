package vfs

import (
	"bytes"
	"errors"
	"io/fs"
	"sync"
	"testing"
)

// TestProcessCrashClone: a process crash keeps every byte written, synced
// or not, under every present name, and every directory; not the locks.
func TestProcessCrashClone(t *testing.T) {
	m := NewMem()
	must(t, m.MkdirAll("d/sub", 0o755))
	f, err := m.Create("d/a")
	must(t, err)
	_, err = f.Write([]byte("synced"))
	must(t, err)
	must(t, f.Sync())
	_, err = f.Write([]byte(" and not"))
	must(t, err)
	g, err := m.Create("d/sub/b") // its name never synced
	must(t, err)
	_, err = g.Write([]byte("b"))
	must(t, err)
	mapped, err := m.Create("d/log")
	must(t, err)
	must(t, mapped.(Mapper).StoreAt([]byte("stored"), 0))
	must(t, m.Rename("d/a", "d/a2")) // not synced either
	lock, err := m.Lock("d/LOCK")
	must(t, err)
	defer lock.Close()

	c := m.ProcessCrashClone()
	for name, want := range map[string]string{"d/a2": "synced and not", "d/sub/b": "b", "d/log": "stored"} {
		got := readAll(t, c, name)
		if name == "d/log" { // the zeros allocated ahead of the stores stay
			if len(got) != memAllocStep || !bytes.Equal(bytes.TrimRight(got, "\x00"), []byte(want)) {
				t.Errorf("%s: %d bytes starting %q, want %q and zeros to %d", name, len(got), got[:10], want, memAllocStep)
			}
			continue
		}
		if string(got) != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if _, err := c.Stat("d/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("d/a after the rename: %v, want it gone", err)
	}
	l, err := c.Lock("d/LOCK")
	if err != nil {
		t.Errorf("the lock held by the dead process: %v", err)
	} else {
		l.Close()
	}
	// Everything in the clone is durable: a power loss after it keeps it all.
	if got := readAll(t, c.CrashClone(), "d/sub/b"); string(got) != "b" {
		t.Errorf("after a power loss of the clone, d/sub/b = %q", got)
	}
}

// TestFileState: what a crash would find of a file.
func TestFileState(t *testing.T) {
	m := NewMem()
	f, err := m.Create("a")
	must(t, err)
	_, err = f.Write([]byte("12345"))
	must(t, err)
	must(t, f.Sync())
	_, err = f.Write([]byte("678"))
	must(t, err)
	state := func(name string) MemFileState {
		st, err := m.FileState(name)
		must(t, err)
		return st
	}
	if got, want := state("a"), (MemFileState{Size: 8, Written: 8, Synced: 5}); got != want {
		t.Errorf("FileState(a) = %+v, want %+v", got, want)
	}
	must(t, m.SyncDir("."))
	if !state("a").NameDurable {
		t.Error("FileState(a) after SyncDir: name not durable")
	}
	g, err := m.Create("log")
	must(t, err)
	must(t, g.(Mapper).StoreAt([]byte("abc"), 0))
	must(t, g.Sync())
	must(t, g.(Mapper).StoreAt([]byte("de"), 3))
	if got, want := state("log"), (MemFileState{Size: memAllocStep, Written: 5, Synced: 3}); got != want {
		t.Errorf("FileState(log) = %+v, want %+v", got, want)
	}
	if _, err := m.FileState("none"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("FileState(none) = %v, want not exist", err)
	}
}

// TestCrashCloneOneInstant: a clone copies every file as of one instant. A
// writer appends to a, syncs it, then to b, syncs it, and again; every
// clone, taken meanwhile, must find b no longer than a, under each model.
func TestCrashCloneOneInstant(t *testing.T) {
	m := NewMem()
	a, err := m.Create("a")
	must(t, err)
	b, err := m.Create("b")
	must(t, err)
	must(t, m.SyncDir("."))
	const rounds = 2000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range rounds {
			for _, f := range []File{a, b} {
				if _, err := f.Write([]byte{1}); err != nil {
					panic(err)
				}
				if err := f.Sync(); err != nil {
					panic(err)
				}
			}
		}
	}()
	for i := 0; ; i++ {
		for _, c := range []*MemFS{m.CrashClone(), m.ProcessCrashClone()} {
			la, lb := len(readAll(t, c, "a")), len(readAll(t, c, "b"))
			if lb > la {
				t.Fatalf("clone %d holds %d bytes of a and %d of b, written after a", i, la, lb)
			}
			if la == rounds && lb == rounds {
				wg.Wait()
				return
			}
		}
	}
}
