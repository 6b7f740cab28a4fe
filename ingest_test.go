package shale

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

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
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Put([]byte("b"), []byte("1")))
	for _, k := range []string{"a", "b"} {
		err := w.Put([]byte(k), []byte("x"))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("key %s is not after b", k)) {
			t.Fatalf("Put(%s) after b: %v; want an error naming both keys", k, err)
		}
		if err := w.Delete([]byte(k)); err == nil {
			t.Fatalf("Delete(%s) after b: no error", k)
		}
	}
	must(w.Delete([]byte("c")))
	must(w.DeleteRange([]byte("x"), []byte("z")))
	must(w.DeleteRange([]byte("a"), []byte("b")))
	must(w.DeleteRange([]byte("q"), []byte("q")))
	if err := w.DeleteRange([]byte("q"), []byte("p")); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("DeleteRange(q, p) = %v; want ErrInvalidRange", err)
	}
	must(w.Put([]byte("d"), []byte("4")))
	must(w.Close())
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v; want ErrClosed", err)
	}

	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a0", "c", "d", "y"} {
		must(db.Put([]byte(k), []byte("old")))
	}
	must(db.Ingest([]string{"t.sst"}))
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
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
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
	must(db.Put([]byte("m"), []byte("old")))
	must(db.Compact()) // m in L6
	writeTable(t, opts, "a.sst", tableOp{key: "a", value: "1"}, tableOp{key: "b", value: "1"})
	writeTable(t, opts, "m.sst", tableOp{key: "l", value: "1"}, tableOp{key: "m", value: "new"})
	snap := db.NewSnapshot()
	must(db.Put([]byte("z"), []byte("mem")))
	must(db.Ingest([]string{"m.sst", "a.sst"}))
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
	must(db.Put([]byte("m"), []byte("l0")))
	must(db.Flush())
	writeTable(t, opts, "m2.sst", tableOp{key: "m", value: "newer"})
	must(db.Ingest([]string{"m2.sst"}))
	model["m"] = "newer"
	checkScan(t, db, model, nil, nil, true)
	if l0 := db.Tables()[0]; len(l0) != 3 || string(l0[0].Smallest) != "m" || string(l0[1].Smallest) != "m" || l0[0].FileNum < l0[1].FileNum {
		t.Errorf("L0:\n%s\nwant 3 tables (z's, flushed by the first Ingest; m's; m2.sst's), m2.sst's first", db.Tables())
	}
	must(snap.Close())
	must(db.Close())
	if db, err = Open("db", opts); err != nil {
		t.Fatal(err)
	}
	checkScan(t, db, model, nil, nil, true)
	must(db.Put([]byte("n"), []byte("after")))
	model["n"] = "after"
	must(db.Compact())
	checkScan(t, db, model, nil, nil, false)
	must(db.Close())
	must(Check("db", opts))
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
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runIngestModel(t, seed, 1500, seed == 3) })
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
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
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
			must(db.Ingest(paths))
			for _, ops := range all {
				applyTableOps(model, ops)
			}
			checkScan(t, db, model, nil, nil, rng.IntN(2) == 0)
		case op < 13:
			s := rng.IntN(300)
			start, end := keyN(s), keyN(s+rng.IntN(40))
			must(db.DeleteRange([]byte(start), []byte(end)))
			applyTableOps(model, []tableOp{{key: start, end: end}})
		case op < 16:
			if snap == nil {
				snap, snapModel = db.NewSnapshot(), maps.Clone(model)
				break
			}
			checkSnapshot(t, snap, snapModel, key())
			must(snap.Close())
			snap = nil
		case op < 45:
			k, v := key(), val()
			must(db.Put(k, []byte(v)))
			model[string(k)] = v
		case op < 55:
			k := key()
			must(db.Delete(k))
			delete(model, string(k))
		case op < 75:
			k := key()
			got, err := db.Get(k)
			want, ok := model[string(k)]
			switch {
			case !ok && !errors.Is(err, ErrNotFound):
				t.Fatalf("op %d: Get(%s) = %q, %v; want not found", i, k, got, err)
			case ok && (err != nil || string(got) != want):
				t.Fatalf("op %d: Get(%s) = %q, %v; want %q", i, k, got, err, want)
			}
		case op < 85:
			checkScan(t, db, model, key(), key(), rng.IntN(2) == 0)
		case op < 90:
			must(db.Flush())
		case op < 93:
			must(db.Compact())
		case op < 97:
			if snap != nil {
				snap.Close()
				snap = nil
			}
			must(db.Close())
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
		must(snap.Close())
		snap = nil
	}
	checkScan(t, db, model, nil, nil, true)
	must(db.Close())
	must(Check("db", opts))
	if db, err = Open("db", opts); err != nil {
		t.Fatal(err)
	}
	checkScan(t, db, model, nil, nil, false)
}
