package vfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
)

// testReadMapper writes a file of several pages through fs, maps it for
// reads and checks what ViewAt shows, from several goroutines at once,
// and that a range past the mapping is an error. It returns the file, open
// and mapped, and its contents.
func testReadMapper(t *testing.T, fs FS, name string) (File, []byte) {
	t.Helper()
	want := make([]byte, 5*4096+123)
	for i := range want {
		want[i] = byte(i*7 + i>>12)
	}
	w, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(w.Sync(), w.Close()); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, ok := f.(ReadMapper)
	if !ok {
		t.Fatalf("%T is not a ReadMapper", f)
	}
	if err := m.MapForReads(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for _, r := range [][2]int{{0, 1}, {4090, 20}, {g * 4096, 4096}, {0, len(want)}, {len(want) - 1, 1}, {len(want), 0}} {
				off, n := r[0], r[1]
				err := m.ViewAt(int64(off), n, func(b []byte) error {
					if !bytes.Equal(b, want[off:off+n]) {
						return errors.New("wrong bytes")
					}
					return nil
				})
				if err != nil {
					t.Errorf("ViewAt(%d, %d): %v", off, n, err)
				}
			}
		})
	}
	wg.Wait()
	for _, r := range [][2]int64{{int64(len(want)) - 1, 2}, {int64(len(want)) + 1, 0}, {-1, 1}} {
		err := m.ViewAt(r[0], int(r[1]), func([]byte) error { t.Error("fn called for a range past the mapping"); return nil })
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("ViewAt(%d, %d) past the mapping: %v, want io.ErrUnexpectedEOF", r[0], r[1], err)
		}
	}
	fnErr := errors.New("fn's error")
	if err := m.ViewAt(0, 1, func([]byte) error { return fnErr }); err != fnErr {
		t.Errorf("ViewAt returned %v, not fn's error", err)
	}
	return f, want
}

func TestReadMapperOS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the operating system's files are ReadMappers on Linux only")
	}
	name := t.TempDir() + "/f"
	f, want := testReadMapper(t, Default, name)
	// Cut the file short under the mapping: a view of the pages it no
	// longer has faults (SIGBUS), which must be an error, not a crash.
	if err := os.Truncate(name, 4096); err != nil {
		t.Fatal(err)
	}
	m := f.(ReadMapper)
	if err := m.ViewAt(100, 10, func(b []byte) error {
		if !bytes.Equal(b, want[100:110]) {
			return errors.New("wrong bytes")
		}
		return nil
	}); err != nil {
		t.Fatalf("a view of the page left: %v", err)
	}
	var seen int
	err := m.ViewAt(4000, 8192, func(b []byte) error {
		for _, c := range b {
			seen += int(c)
		}
		return nil
	})
	if !errors.Is(err, ErrReadFault) {
		t.Fatalf("a view past the cut: %v, want ErrReadFault", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadMapperFaultElsewhere: a fault outside the mapping, during fn, is
// not a read fault: it panics on.
func TestReadMapperFaultElsewhere(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the operating system's files are ReadMappers on Linux only")
	}
	f, _ := testReadMapper(t, Default, t.TempDir()+"/f")
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("a nil dereference inside fn did not panic")
		}
	}()
	var p *int
	_ = f.(ReadMapper).ViewAt(0, 1, func([]byte) error { return errors.New(string(rune(*p))) })
}

func TestReadMapperMem(t *testing.T) {
	fs := NewMem()
	testReadMapper(t, fs, "f")
	// MemFS models a file cut short under the mapping: Cut the file
	// through a mapped writer while a reader has it mapped.
	w, err := fs.Create("g")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.(Mapper).StoreAt(make([]byte, 3*4096), 0); err != nil {
		t.Fatal(err)
	}
	r, err := fs.Open("g")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.(ReadMapper).MapForReads(); err != nil {
		t.Fatal(err)
	}
	if err := w.(Mapper).Cut(4096); err != nil {
		t.Fatal(err)
	}
	if err := r.(ReadMapper).ViewAt(0, 4096, func([]byte) error { return nil }); err != nil {
		t.Fatalf("a view of what is left: %v", err)
	}
	err = r.(ReadMapper).ViewAt(4000, 200, func([]byte) error { t.Error("fn called past the cut"); return nil })
	if !errors.Is(err, ErrReadFault) {
		t.Fatalf("a view past the cut: %v, want ErrReadFault", err)
	}
}

// TestErrorFSReadMapper: ErrorFS maps and views through the file it wraps,
// failing a view as a read (OpRead) and a mapping as an open (OpOpen).
func TestErrorFSReadMapper(t *testing.T) {
	efs := NewErrorFS(NewMem())
	f, _ := testReadMapper(t, efs, "f")
	efs.SetInjector(func(op Op, _ string) error {
		if op == OpRead {
			return ErrInjected
		}
		return nil
	})
	if err := f.(ReadMapper).ViewAt(0, 1, func([]byte) error { return nil }); !errors.Is(err, ErrInjected) {
		t.Fatalf("ViewAt with reads failing: %v", err)
	}
	efs.SetInjector(func(op Op, _ string) error {
		if op == OpOpen {
			return ErrInjected
		}
		return nil
	})
	g, err := efs.FS.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := (&errorFile{File: g, fs: efs, name: "f"}).MapForReads(); !errors.Is(err, ErrInjected) {
		t.Fatalf("MapForReads with opens failing: %v", err)
	}
}
