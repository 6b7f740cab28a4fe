package shale

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// loadKeys writes key%06d for i < n, flushes, and compacts it all into the
// bottom level.
func loadKeys(t *testing.T, db *DB, n int) {
	t.Helper()
	b := db.NewBatch()
	for i := range n {
		b.Put(fmt.Appendf(nil, "key%06d", i), []byte("value"))
	}
	if err := db.Apply(b); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
}

func key(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }

func checkGet(t *testing.T, get func([]byte) ([]byte, error), k []byte, present bool) {
	t.Helper()
	_, err := get(k)
	if present && err != nil || !present && !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(%s) = %v, want present %v", k, err, present)
	}
}

// TestDeleteRangeScanSeeks checks that an iterator leaves a deleted span
// with one seek: a scan over 5000 keys of which a newer tombstone deletes
// all but the first and last 10 reads a handful of blocks, not the ~150
// the deleted keys fill. (Stepping over the deleted keys reads them all.)
func TestDeleteRangeScanSeeks(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), BlockCacheSize: -1, DisableAutomaticCompactions: true})
	defer db.Close()
	loadKeys(t, db, 5000)
	if err := db.DeleteRange(key(10), key(4990)); err != nil {
		t.Fatal(err)
	}
	for _, flushed := range []bool{false, true} {
		if flushed {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		for _, forward := range []bool{true, false} {
			before := db.Metrics().DiskReads
			it := db.NewIter(nil)
			n := 0
			if forward {
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
			} else {
				for ok := it.Last(); ok; ok = it.Prev() {
					n++
				}
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			reads := db.Metrics().DiskReads - before
			if n != 20 || reads > 6 {
				t.Errorf("tombstone flushed %v, forward %v: %d keys (want 20) in %d disk reads (want <= 6)", flushed, forward, n, reads)
			}
		}
	}
}

// TestDeleteOnlyCompaction checks that tables a newer range tombstone
// deletes wholly leave the tree without being read, that those it deletes
// in part stay, and that a snapshot that still sees them keeps them.
func TestDeleteOnlyCompaction(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), BlockCacheSize: -1, DisableAutomaticCompactions: true, TargetFileSize: 4 << 10})
	defer db.Close()
	loadKeys(t, db, 3000)
	bottom := len(db.Metrics().Levels) - 1
	files := db.Metrics().Levels[bottom].Files
	if files < 5 {
		t.Fatalf("want several bottom tables, have %d", files)
	}
	snap := db.NewSnapshot()
	if err := db.DeleteRange(key(100), key(2900)); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	runDeleteOnly := func() {
		t.Helper()
		before := db.Metrics().DiskReads
		if _, err := db.compactOnce(); err != nil {
			t.Fatal(err)
		}
		if reads := db.Metrics().DiskReads - before; reads != 0 {
			t.Fatalf("delete-only compaction read %d blocks", reads)
		}
	}
	runDeleteOnly()
	if m := db.Metrics(); m.DeleteOnlyCompactions != 0 || m.Levels[bottom].Files != files {
		t.Fatalf("with a snapshot from before the tombstone: %d delete-only compactions, %d of %d tables left", m.DeleteOnlyCompactions, m.Levels[bottom].Files, files)
	}
	checkGet(t, snap.Get, key(1500), true)
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}

	runDeleteOnly()
	m := db.Metrics()
	if m.DeleteOnlyCompactions != 1 || m.Levels[bottom].Files > 2 {
		t.Fatalf("%d delete-only compactions, %d of %d tables left, want 1 and at most 2 (the ends)", m.DeleteOnlyCompactions, m.Levels[bottom].Files, files)
	}
	for i := range 3000 {
		checkGet(t, db.Get, key(i), i < 100 || i >= 2900)
	}
}

// TestDeleteRangeSemantics: an empty or reversed range is a no-op that
// takes no sequence number; in a batch, a range deletion deletes the writes
// before it and not those after; the end is exclusive.
func TestDeleteRangeSemantics(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	if err := db.Put([]byte("b"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	last := db.Metrics().LastSeqNum
	if err := db.DeleteRange([]byte("b"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	if db.Metrics().LastSeqNum != last {
		t.Fatal("an empty range deletion took a sequence number")
	}
	checkGet(t, db.Get, []byte("b"), true)

	b := db.NewBatch()
	b.Put([]byte("c"), []byte("1"))
	b.DeleteRange([]byte("a"), []byte("d"))
	b.Put([]byte("a"), []byte("2"))
	b.Put([]byte("d"), []byte("2"))
	if err := db.Apply(b); err != nil {
		t.Fatal(err)
	}
	for k, present := range map[string]bool{"a": true, "b": false, "c": false, "d": true} {
		checkGet(t, db.Get, []byte(k), present)
	}
}

// TestDeleteRangeReversed checks that a range deletion whose start is after
// its end is an error naming both keys, from DB.DeleteRange at once and from
// Apply for a batch that recorded one, and that such a batch writes nothing
// of itself until Reset.
func TestDeleteRangeReversed(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	if err := db.Put([]byte("b"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	last := db.Metrics().LastSeqNum
	wantErr := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrInvalidRange) || !strings.Contains(err.Error(), `start c is after end "a\n"`) {
			t.Fatalf("%s: %v, want ErrInvalidRange naming c and \"a\\n\"", what, err)
		}
	}
	wantErr("DeleteRange(c, a)", db.DeleteRange([]byte("c"), []byte("a\n")))

	b := db.NewBatch()
	b.Put([]byte("x"), []byte("1"))
	b.DeleteRange([]byte("c"), []byte("a\n"))
	b.DeleteRange([]byte("a"), []byte("z"))
	wantErr("Batch.Err", b.Err())
	wantErr("Apply", db.Apply(b))
	if db.Metrics().LastSeqNum != last {
		t.Fatal("a refused range deletion wrote something")
	}
	checkGet(t, db.Get, []byte("b"), true)
	checkGet(t, db.Get, []byte("x"), false)

	b.Reset()
	b.Put([]byte("x"), []byte("1"))
	if err := db.Apply(b); err != nil {
		t.Fatalf("Apply after Reset: %v", err)
	}
	checkGet(t, db.Get, []byte("x"), true)
}

// TestDeleteRangeRecovery checks that a range deletion survives a crash
// through the WAL, and a reopen through its table, and that Check and Repair
// keep it.
func TestDeleteRangeRecovery(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs}
	db := mustOpen(t, "db", opts)
	loadKeys(t, db, 100)
	if err := db.DeleteRange(key(20), key(80)); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone()
	db.Close()
	opts.FS = crashed
	check := func(db *DB) {
		t.Helper()
		for i := range 100 {
			checkGet(t, db.Get, key(i), i < 20 || i >= 80)
		}
	}
	db = mustOpen(t, "db", opts)
	check(db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Check("db", opts); err != nil {
		t.Fatalf("Check: %v", err)
	}
	db = mustOpen(t, "db", opts)
	check(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Repair("db", opts); err != nil {
		t.Fatalf("Repair: %v", err)
	}
	db = mustOpen(t, "db", opts)
	defer db.Close()
	check(db)
}

// TestDeleteRangeFilterNeverHides checks that a table's range tombstones
// apply when its filter says it does not hold the key: the newer table here
// holds one point key and a tombstone over older keys in a deeper level.
func TestDeleteRangeFilterNeverHides(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
	defer db.Close()
	loadKeys(t, db, 100)
	b := db.NewBatch()
	b.DeleteRange(key(10), key(90))
	b.Put([]byte("other"), []byte("x"))
	if err := db.Apply(b); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	checkGet(t, db.Get, key(50), false)
	tr, err := db.TraceGet(key(50))
	if err != nil {
		t.Fatal(err)
	}
	var step *TraceStep
	for i := range tr.Steps {
		if tr.Steps[i].Level == 0 {
			step = &tr.Steps[i]
		}
	}
	if step == nil || !step.FilterSkipped || step.RangeTombstone == "" || len(tr.Steps) != 2 {
		t.Fatalf("trace does not show the filter's no and the tombstone:\n%s", tr)
	}
}
