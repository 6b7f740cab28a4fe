package shale

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// dirFiles returns every file of dir on fsys, by name, with its contents.
func dirFiles(t *testing.T, fsys vfs.FS, dir string) map[string][]byte {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, name := range names {
		files[name] = readFile(t, fsys, fsys.PathJoin(dir, name))
	}
	return files
}

// writeOps fails, and records, every operation of an ErrorFS that changes
// the file system: a read-only open must make none.
type writeOps struct {
	mu  sync.Mutex
	ops []string
}

func (w *writeOps) inject(op vfs.Op, path string) error {
	switch op {
	case vfs.OpCreate, vfs.OpRemove, vfs.OpRename, vfs.OpWrite, vfs.OpSync, vfs.OpSyncDir, vfs.OpMkdirAll, vfs.OpTruncate:
		w.mu.Lock()
		w.ops = append(w.ops, op.String()+" "+path)
		w.mu.Unlock()
		return vfs.ErrInjected
	}
	return nil
}

// TestReadOnlyWritesNothing opens stores read-only that a read-write Open
// would change (a WAL to replay and replace, a torn WAL tail, an L0 due for
// compaction, files to delete), reads them whole, tries every write, and
// closes them: the directory must hold the same files with the same bytes,
// the file system must have seen no operation that changes it, and the
// reads must find what was written.
func TestReadOnlyWritesNothing(t *testing.T) {
	stores := map[string]func(t *testing.T) (*vfs.MemFS, map[string]string){
		"WAL and leftovers": func(t *testing.T) (*vfs.MemFS, map[string]string) {
			mem := vfs.NewMem()
			db := mustOpen(t, "db", &Options{FS: mem})
			want := putN(t, db, 0, 50, "flushed")
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			maps.Copy(want, putN(t, db, 25, 75, "logged")) // in the WAL only
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			// Files a read-write Open deletes: a table in no version, a
			// temp file.
			writeFile(t, mem, "db/000999.sst", []byte("orphan"))
			writeFile(t, mem, "db/CURRENT.000998.dbtmp", []byte("temp"))
			return mem, want
		},
		"torn WAL tail": tornStore,
		"compaction due": func(t *testing.T) (*vfs.MemFS, map[string]string) {
			mem := vfs.NewMem()
			db := mustOpen(t, "db", &Options{FS: mem, DisableAutomaticCompactions: true, L0CompactionThreshold: 2})
			want := map[string]string{}
			for i := range 4 {
				maps.Copy(want, putN(t, db, 10*i, 10*i+20, fmt.Sprintf("round%d-", i)))
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			return mem, want
		},
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			mem, want := store(t)
			if name == "compaction due" {
				if n := len(filesOf(t, mem, "db", fileTypeTable)); n != 4 {
					t.Fatalf("%d tables, want 4 in L0", n)
				}
			}
			before := dirFiles(t, mem, "db")
			efs := vfs.NewErrorFS(mem)
			var w writeOps
			efs.SetInjector(w.inject)
			opts := &Options{FS: efs, ReadOnly: true, L0CompactionThreshold: 2}
			db := mustOpen(t, "db", opts)
			wantData(t, db, want)
			it := db.NewIter(nil)
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				if string(it.Value()) != want[string(it.Key())] {
					t.Fatalf("iterator: %s = %s, want %s", it.Key(), it.Value(), want[string(it.Key())])
				}
				n++
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			if live := len(slices.DeleteFunc(slices.Collect(maps.Values(want)), func(v string) bool { return v == "" })); n != live {
				t.Fatalf("iterator found %d entries, want %d", n, live)
			}
			tryWrites(t, db)
			_ = db.Metrics().String()
			if _, err := db.TraceGet([]byte("key030")); err != nil {
				t.Fatal(err)
			}
			snap := db.NewSnapshot()
			wantSnap, err := snap.Get([]byte("key030"))
			if err != nil || string(wantSnap) != want["key030"] {
				t.Fatalf("snapshot Get(key030) = %q, %v; want %q", wantSnap, err, want["key030"])
			}
			if err := snap.Close(); err != nil {
				t.Fatal(err)
			}
			if err := Check("db", opts); err != nil {
				t.Fatalf("Check beside a read-only open: %v", err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if len(w.ops) > 0 {
				t.Fatalf("the read-only open tried to change the file system: %v", w.ops)
			}
			after := dirFiles(t, mem, "db")
			if !maps.EqualFunc(before, after, bytes.Equal) {
				t.Fatalf("the directory changed:\nbefore %v\nafter  %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
			}
			// The store is as it was: a read-write Open recovers it.
			efs.SetInjector(nil)
			db = mustOpen(t, "db", &Options{FS: mem})
			wantData(t, db, want)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// tryWrites checks that every call that changes the store fails with
// ErrReadOnly on db, opened read-only.
func tryWrites(t *testing.T, db *DB) {
	t.Helper()
	b := db.NewBatch()
	b.Put([]byte("k"), []byte("v"))
	writes := map[string]func() error{
		"Put":              func() error { return db.Put([]byte("k"), []byte("v")) },
		"Delete":           func() error { return db.Delete([]byte("k")) },
		"DeleteRange":      func() error { return db.DeleteRange([]byte("a"), []byte("z")) },
		"Apply":            func() error { return db.Apply(b) },
		"Apply(empty)":     func() error { return db.Apply(db.NewBatch()) },
		"ApplyWithOptions": func() error { return db.ApplyWithOptions(b, WriteOptions{Sync: true}) },
		"Flush":            db.Flush,
		"Compact":          db.Compact,
		"Checkpoint":       func() error { return db.Checkpoint("checkpoint") },
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only store: %v, want ErrReadOnly", name, err)
		}
	}
}

// TestReadOnlyAfterClose: a read-only DB's calls after Close say ErrClosed,
// and Repair refuses ReadOnly.
func TestReadOnlyAfterClose(t *testing.T) {
	mem := vfs.NewMem()
	mustOpen(t, "db", &Options{FS: mem}).Close()
	db := mustOpen(t, "db", &Options{FS: mem, ReadOnly: true})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("k"), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v, want ErrClosed", err)
	}
	if err := Repair("db", &Options{FS: mem, ReadOnly: true}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Repair with ReadOnly: %v, want ErrReadOnly", err)
	}
}

// TestReadOnlyLocks is the lock-sharing matrix, on MemFS and on the
// operating system's file system: read-only opens and Check coexist; a
// read-write open excludes them and each of them excludes it.
func TestReadOnlyLocks(t *testing.T) {
	for _, fsys := range []struct {
		name string
		fs   vfs.FS
		dir  string
	}{{"MemFS", vfs.NewMem(), "db"}, {"OS", vfs.Default, t.TempDir()}} {
		t.Run(fsys.name, func(t *testing.T) {
			rw := &Options{FS: fsys.fs}
			ro := &Options{FS: fsys.fs, ReadOnly: true}
			dir := fsys.dir
			openFails := func(opts *Options, what string) {
				t.Helper()
				if db, err := Open(dir, opts); !errors.Is(err, vfs.ErrLocked) {
					if err == nil {
						db.Close()
					}
					t.Fatalf("%s: %v, want ErrLocked", what, err)
				}
			}
			db := mustOpen(t, dir, rw)
			putN(t, db, 0, 10, "v")
			openFails(ro, "read-only open beside a read-write one")
			if err := Check(dir, rw); !errors.Is(err, vfs.ErrLocked) || errors.Is(err, ErrCorruption) {
				t.Fatalf("Check beside a read-write open: %v, want ErrLocked", err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			ro1 := mustOpen(t, dir, ro)
			ro2 := mustOpen(t, dir, ro)
			if err := Check(dir, rw); err != nil {
				t.Fatalf("Check beside read-only opens: %v", err)
			}
			openFails(rw, "read-write open beside two read-only ones")
			if err := Repair(dir, rw); !errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("Repair beside read-only opens: %v, want ErrLocked", err)
			}
			if err := ro1.Close(); err != nil {
				t.Fatal(err)
			}
			openFails(rw, "read-write open beside one read-only one")
			wantData(t, ro2, map[string]string{"key003": "v003"})
			if err := ro2.Close(); err != nil {
				t.Fatal(err)
			}
			if err := mustOpen(t, dir, rw).Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReadOnlyLocksAcrossProcesses: a read-only open in another process
// shares the lock with one here, and a read-write open there is refused.
func TestReadOnlyLocksAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("SHALE_READONLY_CHILD"); dir != "" {
		for _, ro := range []bool{true, false} {
			db, err := Open(dir, &Options{ReadOnly: ro})
			if err != nil {
				fmt.Printf("readonly=%v: open failed: %v\n", ro, errors.Is(err, vfs.ErrLocked))
				continue
			}
			fmt.Printf("readonly=%v: open succeeded\n", ro)
			db.Close()
		}
		return
	}
	dir := t.TempDir()
	mustOpen(t, dir, nil).Close()
	db := mustOpen(t, dir, &Options{ReadOnly: true})
	defer db.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadOnlyLocksAcrossProcesses$")
	cmd.Env = append(os.Environ(), "SHALE_READONLY_CHILD="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "readonly=true: open succeeded\nreadonly=false: open failed: true\n"; !strings.Contains(string(out), want) {
		t.Fatalf("the other process said:\n%s\nwant:\n%s", out, want)
	}
}

// TestReadOnlyWithoutLOCK: a store copied without its LOCK file opens
// read-only, and passes Check, without a LOCK file being made.
func TestReadOnlyWithoutLOCK(t *testing.T) {
	mem := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: mem})
	want := putN(t, db, 0, 20, "v")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mem.Remove("db/LOCK"); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, mem, "db")
	db = mustOpen(t, "db", &Options{FS: mem, ReadOnly: true})
	wantData(t, db, want)
	if err := Check("db", &Options{FS: mem}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if after := dirFiles(t, mem, "db"); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Fatalf("the directory changed: before %v, after %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

// TestOpenExistenceOptions: ErrorIfNotExists and ReadOnly refuse a
// directory without a store, creating nothing, not even the directory;
// ErrorIfExists refuses one with a store, touching nothing; contradictory
// settings are refused.
func TestOpenExistenceOptions(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("empty", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{ErrorIfNotExists: true}, {ReadOnly: true}} {
		for _, dir := range []string{"missing", "empty"} {
			o.FS = mem
			if db, err := Open(dir, &o); !errors.Is(err, fs.ErrNotExist) {
				if err == nil {
					db.Close()
				}
				t.Fatalf("Open(%s, ErrorIfNotExists %v, ReadOnly %v): %v, want fs.ErrNotExist", dir, o.ErrorIfNotExists, o.ReadOnly, err)
			}
		}
		if _, err := mem.Stat("missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a refused Open made the directory: %v", err)
		}
		if names, err := mem.List("empty"); err != nil || len(names) > 0 {
			t.Fatalf("a refused Open left %v, %v", names, err)
		}
	}

	db := mustOpen(t, "db", &Options{FS: mem, ErrorIfExists: true})
	want := putN(t, db, 0, 10, "v")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, mem, "db")
	if db, err := Open("db", &Options{FS: mem, ErrorIfExists: true}); !errors.Is(err, fs.ErrExist) {
		if err == nil {
			db.Close()
		}
		t.Fatalf("Open with ErrorIfExists of a store: %v, want fs.ErrExist", err)
	}
	if after := dirFiles(t, mem, "db"); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Fatal("a refused Open changed the store's files")
	}
	db = mustOpen(t, "db", &Options{FS: mem, ErrorIfNotExists: true})
	wantData(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A store that lost its CURRENT is reported as damaged, not as absent,
	// in every mode, before anything (a LOCK file) is created.
	if err := mem.MkdirAll("lost", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, mem, "lost/000004.sst", []byte("a table"))
	for _, o := range []Options{{}, {ErrorIfNotExists: true}, {ErrorIfExists: true}, {ReadOnly: true}} {
		o.FS = mem
		db, err := Open("lost", &o)
		if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "000004.sst") || !strings.HasPrefix(err.Error(), "shale: open lost: ") {
			if err == nil {
				db.Close()
			}
			t.Fatalf("Open of a store without CURRENT, %+v: %v, want corruption naming its table", o, err)
		}
		if names, err := mem.List("lost"); err != nil || len(names) != 1 {
			t.Fatalf("a refused Open of a store without CURRENT (%+v) left %v, %v", o, names, err)
		}
	}

	for _, o := range []Options{{ErrorIfExists: true, ErrorIfNotExists: true}, {ErrorIfExists: true, ReadOnly: true}} {
		o.FS = mem
		if db, err := Open("db", &o); err == nil || !strings.Contains(err.Error(), "every directory") {
			if err == nil {
				db.Close()
			}
			t.Fatalf("Open with ErrorIfExists and ErrorIfNotExists %v, ReadOnly %v: %v, want refused", o.ErrorIfNotExists, o.ReadOnly, err)
		}
	}
}
