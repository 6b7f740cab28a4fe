package shale

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/sstable"
	"github.com/shale-db/shale/vfs"
)

// tableOp is one write of a table built for Ingest: a Put (value set), a
// Delete, or a DeleteRange [key, end).
type tableOp struct {
	key, value, end string
	del             bool
}

// writeTable writes the table path on opts.FS from ops, in the order
// given, failing the test on any error.
func writeTable(t testing.TB, opts *Options, path string, ops ...tableOp) {
	t.Helper()
	w, err := NewTableWriter(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		switch {
		case op.end != "":
			err = w.DeleteRange([]byte(op.key), []byte(op.end))
		case op.del:
			err = w.Delete([]byte(op.key))
		default:
			err = w.Put([]byte(op.key), []byte(op.value))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// applyTableOps applies an ingested table's ops to model as Ingest does:
// its range deletions delete what was there before, then its Puts and
// Deletes apply.
func applyTableOps(model map[string]string, ops []tableOp) {
	for _, op := range ops {
		if op.end != "" {
			for k := range model {
				if k >= op.key && k < op.end {
					delete(model, k)
				}
			}
		}
	}
	for _, op := range ops {
		switch {
		case op.end != "":
		case op.del:
			delete(model, op.key)
		default:
			model[op.key] = op.value
		}
	}
}

// TestTableWriterOrder: keys out of order or repeated are refused with an
// error naming both, and the writer goes on; range deletions come in any
// order.
func TestTableWriterOrder(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs}
	w, err := NewTableWriter("t.sst", opts)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, w.Put([]byte("b"), []byte("1")))
	for _, k := range []string{"a", "b"} {
		err := w.Put([]byte(k), []byte("x"))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("key %s is not after b", k)) {
			t.Fatalf("Put(%s) after b: %v; want an error naming both keys", k, err)
		}
		if err := w.Delete([]byte(k)); err == nil {
			t.Fatalf("Delete(%s) after b: no error", k)
		}
	}
	mustOK(t, w.Delete([]byte("c")))
	mustOK(t, w.DeleteRange([]byte("x"), []byte("z")))
	mustOK(t, w.DeleteRange([]byte("a"), []byte("b")))
	mustOK(t, w.DeleteRange([]byte("q"), []byte("q")))
	if err := w.DeleteRange([]byte("q"), []byte("p")); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("DeleteRange(q, p) = %v; want ErrInvalidRange", err)
	}
	mustOK(t, w.Put([]byte("d"), []byte("4")))
	mustOK(t, w.Close())
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v; want ErrClosed", err)
	}

	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a0", "c", "d", "y"} {
		mustOK(t, db.Put([]byte(k), []byte("old")))
	}
	mustOK(t, db.Ingest([]string{"t.sst"}))

	// Abort removes the file; the writer is closed after it.
	a, err := NewTableWriter("abandoned.sst", opts)
	mustOK(t, err)
	mustOK(t, a.Put([]byte("k"), []byte("v")))
	mustOK(t, a.Abort())
	if _, err := fs.Stat("abandoned.sst"); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("after Abort, Stat(abandoned.sst) = %v; want not found", err)
	}
	if err := a.Put([]byte("l"), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Abort = %v; want ErrClosed", err)
	}
	if err := a.Abort(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Abort = %v; want ErrClosed", err)
	}
	model := map[string]string{"a0": "old", "c": "old", "d": "old", "y": "old"}
	applyTableOps(model, []tableOp{{key: "b", value: "1"}, {key: "c", del: true}, {key: "x", end: "z"}, {key: "a", end: "b"}, {key: "d", value: "4"}})
	checkScan(t, db, model, nil, nil, true)
}

// TestIngestLevels: a table goes to the deepest level where nothing
// overlaps it, above what it overlaps; the memtables are flushed first;
// a snapshot taken before never sees it; the store reopens with it.
func TestIngestLevels(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, DisableAutomaticCompactions: true}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	levelOf := func(key string) int {
		t.Helper()
		for level, tables := range db.Tables() {
			for _, tb := range tables {
				if string(tb.Smallest) <= key && key <= string(tb.Largest) {
					return level
				}
			}
		}
		t.Fatalf("no table holds %s:\n%s", key, db.Tables())
		return -1
	}
	mustOK(t, db.Put([]byte("m"), []byte("old")))
	mustOK(t, db.Compact()) // m in L6
	writeTable(t, opts, "a.sst", tableOp{key: "a", value: "1"}, tableOp{key: "b", value: "1"})
	writeTable(t, opts, "m.sst", tableOp{key: "l", value: "1"}, tableOp{key: "m", value: "new"})
	snap := db.NewSnapshot()
	mustOK(t, db.Put([]byte("z"), []byte("mem")))
	mustOK(t, db.Ingest([]string{"m.sst", "a.sst"}))
	if got, want := levelOf("a"), NumLevels-1; got != want {
		t.Errorf("a.sst went to L%d; want L%d (nothing overlaps it)", got, want)
	}
	if got, want := levelOf("l"), NumLevels-2; got != want {
		t.Errorf("m.sst went to L%d; want L%d (above L6's m)", got, want)
	}
	if m := db.Metrics(); m.ImmutableTables != 0 || m.Ingests != 1 {
		t.Errorf("after Ingest: %d immutable memtables, %d ingests; want 0 and 1", m.ImmutableTables, m.Ingests)
	}
	checkSnapshot(t, snap, map[string]string{"m": "old"}, []byte("m"))
	model := map[string]string{"a": "1", "b": "1", "l": "1", "m": "new", "z": "mem"}
	checkScan(t, db, model, nil, nil, true)

	// A table over an L0 table goes to L0, newer than it.
	mustOK(t, db.Put([]byte("m"), []byte("l0")))
	mustOK(t, db.Flush())
	writeTable(t, opts, "m2.sst", tableOp{key: "m", value: "newer"})
	mustOK(t, db.Ingest([]string{"m2.sst"}))
	model["m"] = "newer"
	checkScan(t, db, model, nil, nil, true)
	if l0 := db.Tables()[0]; len(l0) != 3 || string(l0[0].Smallest) != "m" || string(l0[1].Smallest) != "m" || l0[0].FileNum < l0[1].FileNum {
		t.Errorf("L0:\n%s\nwant 3 tables (z's, flushed by the first Ingest; m's; m2.sst's), m2.sst's first", db.Tables())
	}
	mustOK(t, snap.Close())
	mustOK(t, db.Close())
	if db, err = Open("db", opts); err != nil {
		t.Fatal(err)
	}
	checkScan(t, db, model, nil, nil, true)
	mustOK(t, db.Put([]byte("n"), []byte("after")))
	model["n"] = "after"
	mustOK(t, db.Compact())
	checkScan(t, db, model, nil, nil, false)
	mustOK(t, db.Close())
	mustOK(t, Check("db", opts))
	if db, err = Open("db", opts); err != nil {
		t.Fatal(err)
	}
	checkScan(t, db, model, nil, nil, true)
	for _, p := range []string{"a.sst", "m.sst", "m2.sst"} {
		if _, err := fs.Stat(p); err != nil {
			t.Errorf("the caller's %s: %v", p, err)
		}
	}
}

// TestIngestModel mixes Ingest with puts, deletes, range deletions,
// snapshots, flushes, compactions, reopens and crashes, and checks the
// store against a map after every step.
func TestIngestModel(t *testing.T) {
	seeds, ops := uint64(3), 1000
	if *long {
		seeds, ops = 10, 5000
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runIngestModel(t, seed, ops, seed%3 == 0) })
	}
}

func runIngestModel(t *testing.T, seed uint64, ops int, compactions bool) {
	rng := rand.New(rand.NewPCG(seed, seed+100))
	fs := vfs.NewMem()
	opts := &Options{
		FS:                          fs,
		MemTableSize:                4 << 10,
		BlockSize:                   256,
		L0CompactionThreshold:       2,
		LBaseMaxBytes:               16 << 10,
		TargetFileSize:              4 << 10,
		DisableAutomaticCompactions: !compactions,
	}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	model := map[string]string{}
	keyN := func(n int) string { return fmt.Sprintf("k%03d", n) }
	key := func() []byte { return []byte(keyN(rng.IntN(300))) }
	val := func() string { return fmt.Sprintf("v%d-%s", rng.IntN(1000), strings.Repeat("x", rng.IntN(30))) }
	var snap *Snapshot
	var snapModel map[string]string
	defer func() {
		if snap != nil {
			snap.Close()
		}
	}()
	tables := 0
	// ingestOps builds 1 to 3 disjoint tables over random ranges of keys
	// and returns their paths and ops.
	ingestOps := func() ([]string, [][]tableOp) {
		n := 1 + rng.IntN(3)
		cuts := make([]int, 2*n)
		for i := range cuts {
			cuts[i] = rng.IntN(300)
		}
		slices.Sort(cuts)
		var paths []string
		var all [][]tableOp
		for i := 0; i < n; i++ {
			lo, hi := cuts[2*i], cuts[2*i+1]+1
			if i > 0 && lo <= cuts[2*i-1]+1 {
				continue // touches the table before
			}
			var ops []tableOp
			for k := lo; k < hi; k++ {
				switch r := rng.IntN(10); {
				case r < 4:
					ops = append(ops, tableOp{key: keyN(k), value: val()})
				case r < 5:
					ops = append(ops, tableOp{key: keyN(k), del: true})
				}
			}
			if rng.IntN(3) == 0 {
				s := lo + rng.IntN(hi-lo)
				e := s + 1 + rng.IntN(hi-s)
				ops = append(ops, tableOp{key: keyN(s), end: keyN(e)})
			}
			tables++
			path := fmt.Sprintf("in-%d.sst", tables)
			writeTable(t, opts, path, ops...)
			paths = append(paths, path)
			all = append(all, ops)
		}
		return paths, all
	}
	for i := 0; i < ops; i++ {
		switch op := rng.IntN(100); {
		case op < 10:
			paths, all := ingestOps()
			mustOK(t, db.Ingest(paths))
			for _, ops := range all {
				applyTableOps(model, ops)
			}
			checkScan(t, db, model, nil, nil, rng.IntN(2) == 0)
		case op < 13:
			s := rng.IntN(300)
			start, end := keyN(s), keyN(s+rng.IntN(40))
			mustOK(t, db.DeleteRange([]byte(start), []byte(end)))
			applyTableOps(model, []tableOp{{key: start, end: end}})
		case op < 16:
			if snap == nil {
				snap, snapModel = db.NewSnapshot(), maps.Clone(model)
				break
			}
			checkSnapshot(t, snap, snapModel, key())
			mustOK(t, snap.Close())
			snap = nil
		case op < 45:
			k, v := key(), val()
			mustOK(t, db.Put(k, []byte(v)))
			model[string(k)] = v
		case op < 55:
			k := key()
			mustOK(t, db.Delete(k))
			delete(model, string(k))
		case op < 75:
			checkModelGet(t, db, model, key(), i)
		case op < 85:
			checkScan(t, db, model, key(), key(), rng.IntN(2) == 0)
		case op < 90:
			mustOK(t, db.Flush())
		case op < 93:
			mustOK(t, db.Compact())
		case op < 97:
			if snap != nil {
				snap.Close()
				snap = nil
			}
			mustOK(t, db.Close())
			if db, err = Open("db", opts); err != nil {
				t.Fatal(err)
			}
			checkScan(t, db, model, nil, nil, true)
		default:
			crashed := fs.CrashClone()
			if snap != nil {
				snap.Close()
				snap = nil
			}
			db.Close()
			fs = crashed
			opts.FS = fs
			if db, err = Open("db", opts); err != nil {
				t.Fatal(err)
			}
			checkScan(t, db, model, nil, nil, true)
		}
	}
	if snap != nil {
		checkSnapshot(t, snap, snapModel, key())
		mustOK(t, snap.Close())
		snap = nil
	}
	checkScan(t, db, model, nil, nil, true)
	mustOK(t, db.Close())
	mustOK(t, Check("db", opts))
	if db, err = Open("db", opts); err != nil {
		t.Fatal(err)
	}
	checkScan(t, db, model, nil, nil, false)
}

// storeState is what a store holds on disk: every file of its directory
// and its bytes.
func storeState(t *testing.T, fs vfs.FS, dir string) map[string]string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	for _, name := range names {
		if name == "LOCK" {
			continue
		}
		state[name] = string(readFile(t, fs, fs.PathJoin(dir, name)))
	}
	return state
}

// TestIngestRefuses gives Ingest bad input, each case beside a good table,
// and checks that it is refused with an error naming the file (matching
// ErrCorruption for damage) and that the store's files and contents are as
// they were.
func TestIngestRefuses(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs}
	good := []tableOp{{key: "g1", value: "new"}, {key: "g2", value: "new"}}
	writeTable(t, opts, "good.sst", good...)
	wholeTable := func(name string) []byte {
		writeTable(t, opts, name, tableOp{key: "x1", value: strings.Repeat("v", 100)}, tableOp{key: "x2", value: "2"})
		return readFile(t, fs, name)
	}
	cases := []struct {
		name    string
		make    func() string // writes the bad file, returns its path
		corrupt bool          // the error must match ErrCorruption
		want    string        // in the error, besides the path
	}{
		{name: "missing", make: func() string { return "missing.sst" }, want: "not exist"},
		{name: "a directory", make: func() string {
			if err := fs.MkdirAll("adir", 0o755); err != nil {
				t.Fatal(err)
			}
			return "adir"
		}, want: "directory"},
		{name: "empty file", make: func() string { writeFile(t, fs, "empty.sst", nil); return "empty.sst" }, corrupt: true},
		{name: "foreign file", make: func() string {
			writeFile(t, fs, "notes.txt", []byte(strings.Repeat("not a table at all\n", 20)))
			return "notes.txt"
		}, corrupt: true},
		{name: "data block damaged", make: func() string {
			b := wholeTable("damaged.sst")
			b[20] ^= 0x10
			writeFile(t, fs, "damaged.sst", b)
			return "damaged.sst"
		}, corrupt: true, want: "checksum"},
		{name: "cut short", make: func() string {
			b := wholeTable("short.sst")
			writeFile(t, fs, "short.sst", b[:len(b)-9])
			return "short.sst"
		}, corrupt: true},
		{name: "footer damaged", make: func() string {
			b := wholeTable("footer.sst")
			b[len(b)-20] ^= 0x01
			writeFile(t, fs, "footer.sst", b)
			return "footer.sst"
		}, corrupt: true},
		{name: "a key twice", make: func() string {
			// Set and Delete of one key at one sequence number are in
			// internal-key order, which the table format allows and a
			// TableWriter never writes.
			f, err := fs.Create("twice.sst")
			if err != nil {
				t.Fatal(err)
			}
			w := sstable.NewWriter(f, sstable.WriterOptions{})
			for _, k := range []base.InternalKey{
				base.MakeInternalKey([]byte("t"), tableWriterSeq, base.KindSet),
				base.MakeInternalKey([]byte("t"), tableWriterSeq, base.KindDelete),
			} {
				if err := w.Add(k, nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.Close(); err != nil {
				t.Fatal(err)
			}
			return "twice.sst"
		}, corrupt: true, want: "strictly ascend"},
		{name: "a store's own table", make: func() string {
			other, err := Open("other", &Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"s1", "s2", "s3"} {
				if err := other.Put([]byte(k), []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			if err := other.Flush(); err != nil {
				t.Fatal(err)
			}
			num := other.Tables()[0][0].FileNum
			if err := other.Close(); err != nil {
				t.Fatal(err)
			}
			writeFile(t, fs, "store.sst", readFile(t, fs, fs.PathJoin("other", baseFileName(fileTypeTable, num))))
			return "store.sst"
		}, want: "not a table that TableWriter wrote"},
		{name: "overlapping the good table", make: func() string {
			writeTable(t, opts, "overlap.sst", tableOp{key: "a", end: "g1x"})
			return "overlap.sst"
		}, want: "overlap"},
	}

	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	model := map[string]string{}
	for i := range 50 {
		k := fmt.Sprintf("k%02d", i)
		if err := db.Put([]byte(k), []byte("old")); err != nil {
			t.Fatal(err)
		}
		model[k] = "old"
		if i == 25 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := c.make()
			before := storeState(t, fs, "db")
			flushes := db.Metrics().Flushes
			for _, paths := range [][]string{{"good.sst", bad}, {bad, "good.sst"}} {
				err := db.Ingest(paths)
				t.Logf("Ingest(%q): %v", paths, err)
				switch {
				case err == nil:
					t.Fatalf("Ingest(%q) = nil; want an error", paths)
				case !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), c.want):
					t.Errorf("Ingest(%q) = %v; want an error naming %s, with %q", paths, err, bad, c.want)
				case c.corrupt != errors.Is(err, ErrCorruption):
					t.Errorf("Ingest(%q) = %v; errors.Is(err, ErrCorruption) = %v, want %v", paths, err, !c.corrupt, c.corrupt)
				}
			}
			if after := storeState(t, fs, "db"); !maps.Equal(before, after) {
				t.Errorf("the store's files changed:\nbefore %v\nafter  %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
			}
			if got := db.Metrics().Flushes; got != flushes {
				t.Errorf("a refused Ingest flushed the memtable (%d flushes, %d before)", got, flushes)
			}
			checkScan(t, db, model, nil, nil, true)
		})
	}
	// The store still takes writes and the good table.
	if err := db.Ingest([]string{"good.sst"}); err != nil {
		t.Fatal(err)
	}
	applyTableOps(model, good)
	checkScan(t, db, model, nil, nil, true)
	for _, p := range []string{"good.sst", "overlap.sst", "damaged.sst"} {
		if _, err := fs.Stat(p); err != nil {
			t.Errorf("the caller's %s: %v", p, err)
		}
	}
}

// TestIngestNoOp: no paths, or only empty tables, change nothing; a
// read-only store refuses Ingest.
func TestIngestNoOp(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs}
	writeTable(t, opts, "empty.sst")
	writeTable(t, opts, "one.sst", tableOp{key: "a", value: "1"})
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("b"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	for _, paths := range [][]string{nil, {}, {"empty.sst"}} {
		if err := db.Ingest(paths); err != nil {
			t.Fatalf("Ingest(%q) = %v", paths, err)
		}
	}
	if m := db.Metrics(); m.Flushes != 0 || m.Ingests != 0 {
		t.Errorf("no-op Ingests: %d flushes, %d ingests; want none", m.Flushes, m.Ingests)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := Open("db", &Options{FS: fs, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, paths := range [][]string{nil, {"one.sst"}} {
		if err := ro.Ingest(paths); !errors.Is(err, ErrReadOnly) {
			t.Errorf("read-only Ingest(%q) = %v; want ErrReadOnly", paths, err)
		}
	}
}

// TestIngestConcurrent runs Ingests beside a writer, a reader of
// snapshots and checkpoints (for the race detector): each Ingest's tables
// win over every write that returned before it started, a write that
// starts after it returned wins over it, a snapshot never sees one arrive,
// and every checkpoint passes Check.
func TestIngestConcurrent(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, MemTableSize: 16 << 10, L0CompactionThreshold: 2, TargetFileSize: 8 << 10}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stop := make(chan struct{})
	done := make(chan error, 3)
	// checkpoints are checked at the end: one taken right after each
	// Ingest, and every fifth of those a goroutine takes meanwhile.
	var checkpointsMu sync.Mutex
	var checkpoints []string
	checkpoint := func(dir string, keep bool) error {
		if err := db.Checkpoint(dir); err != nil {
			return err
		}
		if keep {
			checkpointsMu.Lock()
			checkpoints = append(checkpoints, dir)
			checkpointsMu.Unlock()
		}
		return nil
	}
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := checkpoint(fmt.Sprintf("ckpt-%d", i), i%5 == 0); err != nil {
				done <- err
				return
			}
		}
	}()
	go func() { // a writer of keys no table holds
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := db.Put(fmt.Appendf(nil, "w%03d", i%500), fmt.Appendf(nil, "%d", i)); err != nil {
				done <- err
				return
			}
		}
	}()
	go func() { // a reader through snapshots
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			s := db.NewSnapshot()
			a, errA := s.Get([]byte("t000"))
			b, errB := s.Get([]byte("t000"))
			s.Close()
			if string(a) != string(b) || (errA == nil) != (errB == nil) {
				done <- fmt.Errorf("a snapshot read t000 as %q (%v), then %q (%v)", a, errA, b, errB)
				return
			}
		}
	}()
	for round := range 12 {
		if err := db.Put([]byte("t000"), []byte("put-before")); err != nil {
			t.Fatal(err)
		}
		path := fmt.Sprintf("t%d.sst", round)
		var ops []tableOp
		for i := range 50 {
			ops = append(ops, tableOp{key: fmt.Sprintf("t%03d", i), value: fmt.Sprintf("round%d", round)})
		}
		writeTable(t, opts, path, ops...)
		if err := db.Ingest([]string{path}); err != nil {
			t.Fatal(err)
		}
		if err := checkpoint(fmt.Sprintf("after-%d", round), true); err != nil {
			t.Fatal(err)
		}
		if got, err := db.Get([]byte("t000")); err != nil || string(got) != fmt.Sprintf("round%d", round) {
			t.Fatalf("round %d: after Ingest, t000 = %q, %v; want the table's value", round, got, err)
		}
		if err := db.Put([]byte("t001"), []byte("put-after")); err != nil {
			t.Fatal(err)
		}
		if got, err := db.Get([]byte("t001")); err != nil || string(got) != "put-after" {
			t.Fatalf("round %d: t001 = %q, %v; want the Put after the Ingest", round, got, err)
		}
	}
	close(stop)
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range checkpoints {
		if err := Check(dir, &Options{FS: fs}); err != nil {
			t.Errorf("checkpoint %s: %v", dir, err)
		}
	}
}
