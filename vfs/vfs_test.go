package vfs

import (
	"bytes"
	"errors"
	"io"
	iofs "io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// must fails t at once if err is not nil.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testFS exercises the FS contract; it runs on the OS and in-memory FSes.
func testFS(t *testing.T, fs FS, dir string) {
	must(t, fs.MkdirAll(fs.PathJoin(dir, "sub"), 0o755))
	f, err := fs.Create(fs.PathJoin(dir, "a"))
	must(t, err)
	_, err = f.Write([]byte("hello "))
	must(t, err)
	_, err = f.Write([]byte("world"))
	must(t, err)
	must(t, f.Sync())
	if n, err := f.Size(); err != nil || n != 11 {
		t.Fatalf("Size = %d, %v", n, err)
	}
	must(t, f.Close())

	r, err := fs.Open(fs.PathJoin(dir, "a"))
	must(t, err)
	buf := make([]byte, 5)
	if _, err := r.ReadAt(buf, 6); err != nil || string(buf) != "world" {
		t.Fatalf("ReadAt = %q, %v", buf, err)
	}
	if n, err := r.ReadAt(buf, 8); n != 3 || !errors.Is(err, io.EOF) {
		t.Fatalf("short ReadAt = %d, %v; want 3, EOF", n, err)
	}
	must(t, r.Close())

	must(t, fs.Rename(fs.PathJoin(dir, "a"), fs.PathJoin(dir, "b")))
	if _, err := fs.Open(fs.PathJoin(dir, "a")); err == nil {
		t.Fatal("a still exists after rename")
	}
	names, err := fs.List(dir)
	must(t, err)
	if strings.Join(names, ",") != "b,sub" {
		t.Fatalf("List = %v", names)
	}
	if fi, err := fs.Stat(fs.PathJoin(dir, "b")); err != nil || fi.Size() != 11 {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	must(t, fs.SyncDir(dir))

	lock, err := fs.Lock(fs.PathJoin(dir, "LOCK"))
	must(t, err)
	if _, err := fs.Lock(fs.PathJoin(dir, "LOCK")); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock = %v, want ErrLocked", err)
	}
	must(t, lock.Close())
	lock, err = fs.Lock(fs.PathJoin(dir, "LOCK"))
	must(t, err)
	must(t, lock.Close())
	testSharedLock(t, fs, dir)

	must(t, fs.Link(fs.PathJoin(dir, "b"), fs.PathJoin(dir, "c")))
	if err := fs.Link(fs.PathJoin(dir, "b"), fs.PathJoin(dir, "c")); err == nil || errors.Is(err, ErrLinkUnsupported) {
		t.Fatalf("Link over an existing name = %v, want an error other than ErrLinkUnsupported", err)
	}
	must(t, fs.Remove(fs.PathJoin(dir, "b")))
	if _, err := fs.Stat(fs.PathJoin(dir, "b")); err == nil {
		t.Fatal("b still exists after Remove")
	}
	r, err = fs.Open(fs.PathJoin(dir, "c"))
	must(t, err)
	buf = make([]byte, 11)
	if _, err := r.ReadAt(buf, 0); err != nil || string(buf) != "hello world" {
		t.Fatalf("the link, once the first name is removed, reads %q, %v", buf, err)
	}
	must(t, r.Close())
}

// TestMemFSLinkCrash: a link survives a power loss once its directory is
// synced, not before, and keeps the file's synced bytes; the file's bytes
// are shared by both names.
func TestMemFSLinkCrash(t *testing.T) {
	m := NewMem()
	must(t, m.MkdirAll("a", 0o755))
	must(t, m.MkdirAll("b", 0o755))
	f, err := m.Create("a/f")
	must(t, err)
	_, err = f.Write([]byte("synced"))
	must(t, err)
	must(t, f.Sync())
	must(t, m.SyncDir("."))
	must(t, m.SyncDir("a"))
	must(t, m.Link("a/f", "b/g"))
	if _, err := m.CrashClone().Stat("b/g"); err == nil {
		t.Fatal("a link survives a crash before its directory is synced")
	}
	must(t, m.SyncDir("b"))
	_, err = f.Write([]byte(" and not"))
	must(t, err)
	must(t, f.Close())
	if got := string(readAll(t, m, "b/g")); got != "synced and not" {
		t.Fatalf("the link reads %q before a crash", got)
	}
	if got := string(readAll(t, m.CrashClone(), "b/g")); got != "synced" {
		t.Fatalf("the link reads %q after a crash, want the synced bytes", got)
	}
}

// testSharedLock checks LockShared against Lock: shared holders coexist,
// each excludes an exclusive holder until the last lets go, an exclusive
// holder excludes them, and an absent file is not created.
func testSharedLock(t *testing.T, fs FS, dir string) {
	t.Helper()
	name := fs.PathJoin(dir, "LOCK")
	if _, err := fs.LockShared(fs.PathJoin(dir, "ABSENT")); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("LockShared of an absent file = %v, want not exist", err)
	}
	if _, err := fs.Stat(fs.PathJoin(dir, "ABSENT")); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("LockShared created the absent file: %v", err)
	}
	a, err := fs.LockShared(name)
	must(t, err)
	b, err := fs.LockShared(name)
	must(t, err)
	if _, err := fs.Lock(name); !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock while shared = %v, want ErrLocked", err)
	}
	must(t, a.Close())
	if _, err := fs.Lock(name); !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock while one shared holder is left = %v, want ErrLocked", err)
	}
	must(t, b.Close())
	x, err := fs.Lock(name)
	must(t, err)
	if _, err := fs.LockShared(name); !errors.Is(err, ErrLocked) {
		t.Fatalf("LockShared while locked = %v, want ErrLocked", err)
	}
	must(t, x.Close())
	a, err = fs.LockShared(name)
	must(t, err)
	must(t, a.Close())
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

// crashFile writes a file of n bytes (byte i is i%251+1, never zero), syncs
// its first synced bytes and makes its name durable, and returns its bytes.
func crashFile(t *testing.T, fs *MemFS, name string, n, synced int) []byte {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i%251 + 1)
	}
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data[:synced]); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data[synced:]); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(""); err != nil {
		t.Fatal(err)
	}
	return data
}

func readAll(t *testing.T, fs FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, _ := f.Size()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && !(n == 0 && errors.Is(err, io.EOF)) {
		t.Fatal(err)
	}
	return buf
}

// TestCrashPages: over many seeds, the page model keeps every synced byte
// (including the synced part of the page that straddles the last Sync),
// keeps or zeroes each unsynced page as a whole, ends the file at a page
// boundary or the file's end, and makes both the "later page kept, earlier
// page dropped" and the "all kept" outcomes happen. The same seed gives the
// same clone.
func TestCrashPages(t *testing.T) {
	const size, synced = 5*PageSize + 100, PageSize + 1000 // page 1 straddles the sync
	fs := NewMem()
	data := crashFile(t, fs, "f", size, synced)
	var reordered, whole, none bool
	for seed := uint64(0); seed < 200; seed++ {
		got := readAll(t, fs.CrashCloneWith(CrashOptions{Mode: CrashPages, Seed: seed}), "f")
		if len(got) < synced || len(got) > size || (len(got) != synced && len(got) != size && len(got)%PageSize != 0) {
			t.Fatalf("seed %d: length %d", seed, len(got))
		}
		if !bytes.Equal(got[:synced], data[:synced]) {
			t.Fatalf("seed %d: synced bytes changed", seed)
		}
		kept := map[int]bool{}
		for p := synced / PageSize; p*PageSize < len(got); p++ {
			lo, hi := max(p*PageSize, synced), min((p+1)*PageSize, len(got))
			switch {
			case bytes.Equal(got[lo:hi], data[lo:hi]):
				kept[p] = true
			case bytes.Equal(got[lo:hi], make([]byte, hi-lo)):
			default:
				t.Fatalf("seed %d: page %d is neither kept nor dropped whole", seed, p)
			}
		}
		last := (len(got) - 1) / PageSize
		if len(got) > synced && !kept[last] {
			t.Fatalf("seed %d: the file ends with a dropped page", seed)
		}
		for p := synced / PageSize; p < last; p++ {
			if !kept[p] {
				reordered = true
			}
		}
		whole = whole || len(got) == size && len(kept) == size/PageSize-synced/PageSize+1
		none = none || len(got) == synced
		if again := readAll(t, fs.CrashCloneWith(CrashOptions{Mode: CrashPages, Seed: seed}), "f"); !bytes.Equal(got, again) {
			t.Fatalf("seed %d: two clones differ", seed)
		}
	}
	if !reordered || !whole || !none {
		t.Fatalf("200 seeds: reordered %v, all kept %v, none kept %v; want every outcome", reordered, whole, none)
	}
}

// TestCrashTorn: the torn model keeps the synced bytes and a prefix of the
// unsynced ones, of every length from none to all over enough seeds.
func TestCrashTorn(t *testing.T) {
	const size, synced = 300, 200
	fs := NewMem()
	data := crashFile(t, fs, "f", size, synced)
	lengths := map[int]bool{}
	for seed := uint64(0); seed < 2000; seed++ {
		got := readAll(t, fs.CrashCloneWith(CrashOptions{Mode: CrashTorn, Seed: seed}), "f")
		if len(got) < synced || !bytes.Equal(got, data[:len(got)]) {
			t.Fatalf("seed %d: kept %d bytes, not a prefix of at least the %d synced", seed, len(got), synced)
		}
		lengths[len(got)] = true
	}
	if len(lengths) != size-synced+1 {
		t.Fatalf("2000 seeds gave %d distinct lengths, want %d", len(lengths), size-synced+1)
	}
}

// TestCrashNames: in every mode, a crash keeps each directory's entries as
// of its last SyncDir: an unsynced rename and removal are undone and an
// unsynced creation is lost, and the clone of a clone is the clone.
func TestCrashNames(t *testing.T) {
	for _, mode := range []CrashMode{CrashSynced, CrashPages, CrashTorn} {
		fs := NewMem()
		crashFile(t, fs, "removed", 10, 10)
		crashFile(t, fs, "renamed", 10, 10)
		if err := fs.Remove("removed"); err != nil {
			t.Fatal(err)
		}
		if err := fs.Rename("renamed", "new-name"); err != nil {
			t.Fatal(err)
		}
		f, _ := fs.Create("created")
		f.Write([]byte("x"))
		f.Sync()
		c := fs.CrashCloneWith(CrashOptions{Mode: mode, Seed: 1})
		names, err := c.List("")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(names, ",") != "removed,renamed" {
			t.Fatalf("mode %d: crash kept %v, want [removed renamed]", mode, names)
		}
		if got := readAll(t, c, "removed"); len(got) != 10 {
			t.Fatalf("mode %d: removed file came back with %d bytes, want its 10 synced", mode, len(got))
		}
		if c.String() != c.CrashCloneWith(CrashOptions{Mode: mode, Seed: 2}).String() {
			t.Fatalf("mode %d: cloning a clone lost bytes", mode)
		}
	}
}

// TestCrashDirs: a directory made by MkdirAll survives a crash only once
// the directory holding it was synced after it was made, and one that does
// not survive takes its files, synced or not, and its subdirectories.
func TestCrashDirs(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("kept/inner", 0o755))
	must(t, fs.SyncDir(""))
	must(t, fs.SyncDir("kept"))
	must(t, fs.MkdirAll("lost/inner", 0o755))
	must(t, fs.SyncDir("lost")) // its own entry is in the root, never synced
	for _, name := range []string{"kept/inner/f", "lost/inner/f"} {
		f, err := fs.Create(name)
		must(t, err)
		_, err = f.Write(make([]byte, 10))
		must(t, err)
		must(t, f.Sync())
		must(t, f.Close())
		must(t, fs.SyncDir(path.Dir(name)))
	}
	c := fs.CrashClone()
	if names, err := c.List(""); err != nil || strings.Join(names, ",") != "kept" {
		t.Fatalf("crash kept %v (%v) in the root, want [kept]", names, err)
	}
	if got := readAll(t, c, "kept/inner/f"); len(got) != 10 {
		t.Fatalf("kept/inner/f came back with %d bytes, want its 10 synced", len(got))
	}
	if _, err := c.Stat("lost/inner/f"); err == nil {
		t.Fatal("lost/inner/f survived, though lost's entry was never synced")
	}

	// A removal is undone until the parent is synced.
	must(t, fs.MkdirAll("gone", 0o755))
	must(t, fs.SyncDir(""))
	must(t, fs.Remove("gone"))
	if _, err := fs.CrashClone().Stat("gone"); err != nil {
		t.Fatalf("an unsynced removal of gone stayed after a crash: %v", err)
	}
	must(t, fs.SyncDir(""))
	if _, err := fs.CrashClone().Stat("gone"); err == nil {
		t.Fatal("gone came back after a crash, though its removal was synced")
	}
}

// TestErrorFSOps: every operation an ErrorFS wraps can be failed, and a
// failed Close still closes the file.
func TestErrorFSOps(t *testing.T) {
	efs := NewErrorFS(NewMem())
	var fail Op = -1
	efs.SetInjector(func(op Op, _ string) error {
		if op == fail {
			return ErrInjected
		}
		return nil
	})
	f, err := efs.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	calls := map[Op]func() error{
		OpCreate:   func() error { _, err := efs.Create("g"); return err },
		OpOpen:     func() error { _, err := efs.Open("f"); return err },
		OpRemove:   func() error { return efs.Remove("f") },
		OpRename:   func() error { return efs.Rename("f", "h") },
		OpList:     func() error { _, err := efs.List(""); return err },
		OpWrite:    func() error { _, err := f.Write([]byte("x")); return err },
		OpRead:     func() error { _, err := f.ReadAt(make([]byte, 1), 0); return err },
		OpSync:     func() error { return f.Sync() },
		OpSyncDir:  func() error { return efs.SyncDir("") },
		OpLock:     func() error { _, err := efs.Lock("LOCK"); return err },
		OpMkdirAll: func() error { return efs.MkdirAll("d", 0o755) },
		OpStat:     func() error { _, err := efs.Stat("f"); return err },
		OpLink:     func() error { return efs.Link("f", "l") },
	}
	for op, call := range calls {
		fail = op
		if err := call(); !errors.Is(err, ErrInjected) {
			t.Errorf("%v: %v, want the injected error", op, err)
		}
	}
	fail = OpClose
	if err := f.Close(); !errors.Is(err, ErrInjected) {
		t.Fatalf("close: %v, want the injected error", err)
	}
	fail = -1
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("the file still works after a failed Close")
	}
}

// TestIndexInjector: one-shot injection fails exactly the chosen operation,
// persistent injection every one from it on, and ErrNoSpace matches both
// ErrInjected and ENOSPC.
func TestIndexInjector(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		ii := &IndexInjector{Index: 3, Err: ErrNoSpace, Persistent: persistent}
		var failed []int
		for i := 0; i < 6; i++ {
			if err := ii.Inject(OpWrite, "f"); err != nil {
				if !errors.Is(err, ErrInjected) || !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("error %v does not match ErrInjected and ENOSPC", err)
				}
				failed = append(failed, i)
			}
			if ii.Fired() != (i >= 3) {
				t.Fatalf("after op %d: Fired = %v", i, ii.Fired())
			}
		}
		want := []int{3}
		if persistent {
			want = []int{3, 4, 5}
		}
		if !slices.Equal(failed, want) || ii.Count() != 6 {
			t.Fatalf("persistent=%v: failed ops %v of %d, want %v of 6", persistent, failed, ii.Count(), want)
		}
	}
}
