package shale

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestModel runs thousands of random operations against the DB and a Go map
// and checks every read against the map: puts, deletes, range deletions,
// batches (range deletions among their writes), gets, bounded scans in both
// directions, random walks of an iterator, reads at a snapshot, flushes,
// reopens and crashes, with a small memtable so data moves through every
// layer.
func TestModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runModel(t, seed, 3000, false) })
	}
	t.Run("compactions", func(t *testing.T) { runModel(t, 99, 4000, true) })
}

func runModel(t *testing.T, seed uint64, ops int, compactions bool) {
	rng := rand.New(rand.NewPCG(seed, seed))
	fs := vfs.NewMem()
	opts := &Options{
		FS:                          fs,
		MemTableSize:                4 << 10,
		BlockSize:                   256,
		BlockCacheSize:              64 << 10,
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
	key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(300)) }
	// deleteRange returns a range of up to 40 keys (sometimes empty, which
	// deletes nothing) and deletes it from the model.
	deleteRange := func() (start, end []byte) {
		n := rng.IntN(300)
		start, end = fmt.Appendf(nil, "k%03d", n), fmt.Appendf(nil, "k%03d", n+max(0, rng.IntN(45)-4))
		for k := range model {
			if k >= string(start) && k < string(end) {
				delete(model, k)
			}
		}
		return start, end
	}
	// snap is a snapshot and the model as it saw it.
	var snap *Snapshot
	var snapModel map[string]string
	defer func() {
		if snap != nil {
			snap.Close()
		}
	}()
	val := func() []byte {
		return fmt.Appendf(nil, "v%d-%s", rng.IntN(1000), bytes.Repeat([]byte("x"), rng.IntN(40)))
	}

	for i := 0; i < ops; i++ {
		switch op := rng.IntN(100); {
		case op < 4:
			start, end := deleteRange()
			if err := db.DeleteRange(start, end); err != nil {
				t.Fatal(err)
			}
		case op < 6:
			// A snapshot: taken, or checked and released.
			if snap == nil {
				snap, snapModel = db.NewSnapshot(), maps.Clone(model)
				break
			}
			checkSnapshot(t, snap, snapModel, key())
			if err := snap.Close(); err != nil {
				t.Fatal(err)
			}
			snap = nil
		case op < 35:
			k, v := key(), val()
			if err := db.Put(k, v); err != nil {
				t.Fatal(err)
			}
			model[string(k)] = string(v)
		case op < 45:
			k := key()
			if err := db.Delete(k); err != nil {
				t.Fatal(err)
			}
			delete(model, string(k))
		case op < 55:
			b := db.NewBatch()
			for j := rng.IntN(10); j >= 0; j-- {
				k := key()
				if rng.IntN(8) == 0 {
					b.DeleteRange(deleteRange())
				} else if rng.IntN(3) == 0 {
					b.Delete(k)
					delete(model, string(k))
				} else {
					v := val()
					b.Put(k, v)
					model[string(k)] = string(v)
				}
			}
			if err := db.Apply(b); err != nil {
				t.Fatal(err)
			}
		case op < 80:
			checkModelGet(t, db, model, key(), i)
		case op < 88:
			checkScan(t, db, model, key(), key(), rng.IntN(2) == 0)
		case op < 92:
			checkWalk(t, rng, db.NewIter(nil), model, key)
		case op < 96:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		case op < 98:
			if snap != nil {
				snap.Close()
				snap = nil
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if db, err = Open("db", opts); err != nil {
				t.Fatal(err)
			}
		default:
			// A crash: every acknowledged write was synced, so none is lost.
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
		}
	}
	checkScan(t, db, model, nil, nil, true)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	checkScan(t, db, model, nil, nil, false)
}

// checkSnapshot compares a Get and a full scan at snap with the model as
// it was when snap was taken.
func checkSnapshot(t *testing.T, snap *Snapshot, model map[string]string, k []byte) {
	t.Helper()
	got, err := snap.Get(k)
	want, ok := model[string(k)]
	switch {
	case !ok && !errors.Is(err, ErrNotFound):
		t.Fatalf("snapshot Get(%s) = %q, %v; want not found", k, got, err)
	case ok && (err != nil || string(got) != want):
		t.Fatalf("snapshot Get(%s) = %q, %v; want %q", k, got, err, want)
	}
	var wantAll []string
	for k, v := range model {
		wantAll = append(wantAll, k+"="+v)
	}
	slices.Sort(wantAll)
	it := snap.NewIter(nil)
	var gotAll []string
	for ok := it.First(); ok; ok = it.Next() {
		gotAll = append(gotAll, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotAll, wantAll) {
		t.Fatalf("snapshot scan:\n got %d entries %v\nwant %d entries %v", len(gotAll), gotAll, len(wantAll), wantAll)
	}
}

// checkWalk moves it at random (seeks, Next and Prev, changing direction)
// and checks each position against the model, then closes it.
func checkWalk(t *testing.T, rng *rand.Rand, it *Iterator, model map[string]string, key func() []byte) {
	t.Helper()
	keys := slices.Sorted(maps.Keys(model))
	pos := -1 // index in keys, -1 or len(keys) when invalid
	for step := range 20 {
		var ok bool
		var what string
		switch rng.IntN(6) {
		case 0:
			k := key()
			what = "SeekGE " + string(k)
			ok = it.SeekGE(k)
			pos, _ = slices.BinarySearch(keys, string(k))
		case 1:
			k := key()
			what = "SeekLT " + string(k)
			ok = it.SeekLT(k)
			i, _ := slices.BinarySearch(keys, string(k))
			pos = i - 1
		default:
			if pos < 0 || pos >= len(keys) {
				what, ok = "First", it.First()
				pos = 0
			} else if rng.IntN(2) == 0 {
				what, ok = "Next", it.Next()
				pos++
			} else {
				what, ok = "Prev", it.Prev()
				pos--
			}
		}
		wantOK := pos >= 0 && pos < len(keys)
		if ok != wantOK || ok && (string(it.Key()) != keys[pos] || string(it.Value()) != model[keys[pos]]) {
			t.Fatalf("walk step %d, %s: at %q (%v), want position %d of %d", step, what, it.Key(), ok, pos, len(keys))
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkModelGet fails the test unless db.Get(k) answers as model does; op
// numbers the operation in the message.
func checkModelGet(t *testing.T, db *DB, model map[string]string, k []byte, op int) {
	t.Helper()
	got, err := db.Get(k)
	want, ok := model[string(k)]
	switch {
	case !ok && !errors.Is(err, ErrNotFound):
		t.Fatalf("op %d: Get(%s) = %q, %v; want not found", op, k, got, err)
	case ok && (err != nil || string(got) != want):
		t.Fatalf("op %d: Get(%s) = %q, %v; want %q", op, k, got, err, want)
	}
}

// checkScan compares a bounded scan, forward or backward, with the model.
func checkScan(t *testing.T, db *DB, model map[string]string, lo, hi []byte, forward bool) {
	t.Helper()
	if lo != nil && hi != nil && bytes.Compare(lo, hi) > 0 {
		lo, hi = hi, lo
	}
	var want []string
	for k, v := range model {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			want = append(want, k+"="+v)
		}
	}
	slices.Sort(want)
	it := db.NewIter(&IterOptions{LowerBound: lo, UpperBound: hi})
	var got []string
	if forward {
		for ok := it.First(); ok; ok = it.Next() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
		}
	} else {
		for ok := it.Last(); ok; ok = it.Prev() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
		}
		slices.Reverse(got)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("scan [%s, %s) forward=%v:\n got %d entries %v\nwant %d entries %v", lo, hi, forward, len(got), got, len(want), want)
	}
}
