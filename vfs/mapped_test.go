package vfs

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// testMapper stores records through fs's Mapper, some across the operating
// system's 1 MiB windows and one larger than a window, and checks what a
// second handle reads before and after Cut.
func testMapper(t *testing.T, fs FS, name string) {
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, ok := f.(Mapper)
	if !ok {
		t.Fatalf("%T is not a Mapper", f)
	}
	var want []byte
	for i, n := range []int{100, 4000, 1 << 20, 3 << 20, 7, 70000} {
		p := bytes.Repeat([]byte{byte(i + 1)}, n)
		if err := m.StoreAt(p, int64(len(want))); err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
		want = append(want, p...)
	}
	size, err := f.Size()
	if err != nil || size < int64(len(want)) {
		t.Fatalf("Size = %d, %v, want at least %d", size, err, len(want))
	}
	r, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.(Mapper).StoreAt([]byte("x"), size); err == nil {
		t.Fatal("a store through a file opened for reading succeeded")
	}
	got := make([]byte, size)
	if _, err := r.ReadAt(got, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:len(want)], want) {
		t.Fatal("another handle does not read the stored bytes")
	}
	if !isZeros(got[len(want):]) {
		t.Fatal("the bytes allocated past the stores are not zeros")
	}
	if err := m.Cut(int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if size, err := f.Size(); err != nil || size != int64(len(want)) {
		t.Fatalf("after Cut, Size = %d, %v, want %d", size, err, len(want))
	}
	got = make([]byte, len(want))
	if _, err := r.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after Cut, read %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

func isZeros(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

func TestMapperOS(t *testing.T) {
	f, err := Default.Create(t.TempDir() + "/probe")
	if err != nil {
		t.Fatal(err)
	}
	_, ok := f.(Mapper)
	f.Close()
	if !ok {
		t.Skip("the operating system's files are not Mappers here (Linux only)")
	}
	testMapper(t, Default, t.TempDir()+"/f")
}

func TestMapperMem(t *testing.T) { testMapper(t, NewMem(), "f") }

// TestMapperMemCrash: stored bytes are unsynced until Sync, as written ones
// are; the zeros allocated past them never count as synced; stores must
// append and cannot be mixed with Write.
func TestMapperMemCrash(t *testing.T) {
	mem := NewMem()
	f, _ := mem.Create("f")
	mem.SyncDir(".")
	m := f.(Mapper)
	must(t, m.StoreAt([]byte("synced"), 0))
	must(t, f.Sync())
	must(t, m.StoreAt([]byte("unsynced"), 6))
	read := func(fs *MemFS) string {
		t.Helper()
		r, err := fs.Open("f")
		must(t, err)
		size, _ := r.Size()
		b := make([]byte, size)
		r.ReadAt(b, 0)
		return string(b)
	}
	// The synced length includes the zeros allocated when Sync ran.
	syncedZeros := "synced" + string(make([]byte, memAllocStep-6))
	if got := read(mem.CrashClone()); got != syncedZeros {
		t.Fatalf("a power loss kept %q, want the synced store and the allocated zeros", strings.TrimRight(got, "\x00"))
	}
	for seed := range uint64(20) {
		got := read(mem.CrashCloneWith(CrashOptions{Mode: CrashTorn, Seed: seed}))
		if len(got) != memAllocStep || !strings.HasPrefix("syncedunsynced", strings.TrimRight(got, "\x00")) || got[:6] != "synced" {
			t.Fatalf("a torn crash kept %q, not a prefix of the stores and their zeros", got)
		}
	}
	// A Cut is durable only once synced: a power loss before that leaves
	// the file at its synced length, zeros included.
	if err := m.Cut(14); err != nil {
		t.Fatal(err)
	}
	if got := read(mem.CrashClone()); got != syncedZeros {
		t.Fatalf("a power loss after an unsynced Cut kept %q", strings.TrimRight(got, "\x00"))
	}
	must(t, f.Sync())
	if got := read(mem.CrashClone()); got != "syncedunsynced" {
		t.Fatalf("a power loss after a synced Cut kept %q", got)
	}
	if err := m.StoreAt([]byte("x"), 13); err == nil {
		t.Fatal("a store that does not append succeeded")
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("a Write to a mapped file succeeded")
	}
	g, _ := mem.Create("g")
	g.Write([]byte("written"))
	if err := g.(Mapper).StoreAt([]byte("x"), 7); err == nil {
		t.Fatal("a store into a written file succeeded")
	}
}

// plainFS hands out files that are not Mappers.
type plainFS struct{ FS }

type plainFile struct{ File }

func (p plainFS) Create(name string) (File, error) {
	f, err := p.FS.Create(name)
	return plainFile{f}, err
}

// TestErrorFSMapper: ErrorFS injects stores as writes and cuts as
// truncates, and reports a file it wraps that is not a Mapper.
func TestErrorFSMapper(t *testing.T) {
	efs := NewErrorFS(NewMem())
	f, _ := efs.Create("f")
	m := f.(Mapper)
	var ops []Op
	efs.SetInjector(func(op Op, _ string) error {
		ops = append(ops, op)
		return ErrInjected
	})
	if err := m.StoreAt([]byte("x"), 0); !errors.Is(err, ErrInjected) {
		t.Fatalf("StoreAt: %v", err)
	}
	if _, err := m.WriteAt([]byte("x"), 0); !errors.Is(err, ErrInjected) {
		t.Fatalf("WriteAt: %v", err)
	}
	if err := m.Cut(0); !errors.Is(err, ErrInjected) {
		t.Fatalf("Cut: %v", err)
	}
	if want := []Op{OpWrite, OpWrite, OpTruncate}; !slices.Equal(ops, want) {
		t.Fatalf("ops %v, want %v", ops, want)
	}
	efs.SetInjector(nil)
	if err := m.StoreAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	pfs := NewErrorFS(plainFS{NewMem()})
	p, _ := pfs.Create("p")
	if err := p.(Mapper).StoreAt([]byte("x"), 0); !errors.Is(err, ErrNotMappable) {
		t.Fatalf("StoreAt into a file that is not a Mapper: %v", err)
	}
	if _, err := p.(Mapper).WriteAt([]byte("x"), 0); !errors.Is(err, ErrNotMappable) {
		t.Fatalf("WriteAt into a file that is not a Mapper: %v", err)
	}
}

// TestMapperMemWriteAt: after stores, MemFS's WriteAt (what a refused
// mapping leaves the caller) writes at its offset into the zeros allocated
// ahead, and past them allocates nothing ahead; its bytes are unsynced
// until Sync, as stores are; it must append, as stores must; Cut removes
// the zeros.
func TestMapperMemWriteAt(t *testing.T) {
	mem := NewMem()
	f, _ := mem.Create("f")
	mem.SyncDir(".")
	m := f.(Mapper)
	writeAt := func(p []byte, off int64) {
		t.Helper()
		if n, err := m.WriteAt(p, off); err != nil || n != len(p) {
			t.Fatalf("WriteAt at %d: %d, %v", off, n, err)
		}
	}
	size := func(fs *MemFS) int64 {
		t.Helper()
		r, err := fs.Open("f")
		must(t, err)
		defer r.Close()
		n, _ := r.Size()
		return n
	}
	must(t, m.StoreAt([]byte("stored"), 0))
	must(t, f.Sync())
	writeAt([]byte("written"), 6) // into the zeros allocated ahead
	if got := size(mem); got != memAllocStep {
		t.Fatalf("after a WriteAt inside the allocation the file is %d bytes, want %d", got, memAllocStep)
	}
	big := bytes.Repeat([]byte("w"), memAllocStep)
	writeAt(big, 13) // past them
	want := "storedwritten" + string(big)
	if got := size(mem); got != int64(len(want)) {
		t.Fatalf("after a WriteAt past the allocation the file is %d bytes, want %d", got, len(want))
	}
	if _, err := m.WriteAt([]byte("x"), 3); err == nil {
		t.Fatal("a WriteAt that does not append succeeded")
	}
	b := readAll(t, mem.CrashClone(), "f")
	if got := string(bytes.TrimRight(b, "\x00")); got != "stored" {
		t.Fatalf("a power loss before Sync kept %d bytes, want the synced store alone", len(got))
	}
	must(t, m.Cut(int64(len(want))))
	must(t, f.Sync())
	if got := string(readAll(t, mem.CrashClone(), "f")); got != want {
		t.Fatalf("after Cut and Sync a power loss kept %d bytes, want the %d stored and written", len(got), len(want))
	}
}
