package shale

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/vfs"
)

// TestCompactionOutputsAlignWithLevelBelow: a compaction into L5 ends its
// tables where files of L6 start, once they have reached half the target
// size, rather than wherever the target size falls. L6 holds the even keys
// in files of the target size; L0, merged into an empty L5, holds every
// third odd key, so an L5 table passes half the target size within one L6
// file's range, and each cut has an L6 file start to fall on before the
// table reaches the target size.
func TestCompactionOutputsAlignWithLevelBelow(t *testing.T) {
	db := openManualSmallTree(t)
	rng := rand.New(rand.NewPCG(1, 1))
	value := make([]byte, 100)
	put := func(i int) {
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		if err := db.Put(fmt.Appendf(nil, "key%08d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 16_000 {
		put(2 * i)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	for i := range 5_300 {
		put(6*i + 1)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}

	compactL0Into(t, db, 5)

	db.mu.Lock()
	l5, l6 := db.current.Levels[5], db.current.Levels[6]
	db.mu.Unlock()
	if len(l5) < 5 || len(l6) < 10 {
		t.Fatalf("want at least 5 L5 and 10 L6 files, have %d and %d", len(l5), len(l6))
	}
	for i := 1; i < len(l5); i++ {
		end, next := l5[i-1].Largest.UserKey, l5[i].Smallest.UserKey
		aligned := false
		for _, f := range l6 {
			start := f.Smallest.UserKey
			if base.CompareUserKeys(end, start) < 0 && base.CompareUserKeys(start, next) <= 0 {
				aligned = true
			}
		}
		if !aligned {
			t.Errorf("L5 tables %s (%d bytes) and %s: no L6 file starts between them", l5[i-1], l5[i-1].Size, l5[i])
		}
	}
}

// TestCompactionTombstoneAcrossTableCuts: a range tombstone that spans
// several output tables of a compaction into a level with data below is
// kept, clipped to each table's share of the key space. (L6 holds the even
// keys, L0 the odd ones, a tombstone over the middle and the odd keys
// there written again after it.) Tables are closed
// on a goroutine while the next is written (writeTables' finish), so the
// clipped bounds must not alias the merge's key, which moves on (under
// -race a shared bound is reported). Each L5 table's tombstones must stay
// within its bounds, the tables must not overlap, and reads must see the
// deletion.
func TestCompactionTombstoneAcrossTableCuts(t *testing.T) {
	db := openManualSmallTree(t)
	key := func(i int) []byte { return fmt.Appendf(nil, "key%08d", i) }
	value := make([]byte, 100) // incompressible, so that tables hold few keys
	rng := rand.New(rand.NewPCG(1, 1))
	for j := range value {
		value[j] = byte(rng.Uint32())
	}
	for i := range 4_000 {
		if err := db.Put(key(2*i), value); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(); err != nil { // L6: the even keys
		t.Fatal(err)
	}
	for i := range 4_000 {
		if err := db.Put(key(2*i+1), value); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.DeleteRange(key(1_000), key(7_000)); err != nil {
		t.Fatal(err)
	}
	for i := 1_001; i < 7_000; i += 2 { // written again: the L5 tables' keys within the tombstone
		if err := db.Put(key(i), value); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}

	compactL0Into(t, db, 5)

	db.mu.Lock()
	v := db.current
	v.ref()
	db.mu.Unlock()
	defer v.unref()
	l5 := v.Levels[5]
	withTombs := 0
	for i, f := range l5 {
		if i > 0 && base.Compare(l5[i-1].Largest, f.Smallest) >= 0 {
			t.Errorf("L5 tables %s and %s overlap", l5[i-1], f)
		}
		spans := v.tables[f.FileNum].reader.RangeDels()
		if len(spans) > 0 {
			withTombs++
		}
		for _, sp := range spans {
			if base.CompareUserKeys(sp.Start, f.Smallest.UserKey) < 0 || base.CompareUserKeys(sp.End, f.Largest.UserKey) > 0 {
				t.Errorf("L5 table %s holds tombstone [%q, %q) outside its bounds", f, sp.Start, sp.End)
			}
		}
	}
	if withTombs < 2 {
		t.Fatalf("want the tombstone split over at least 2 L5 tables, have it in %d of %d", withTombs, len(l5))
	}
	for i := 0; i < 8_000; i += 7 {
		_, err := db.Get(key(i))
		deleted := i >= 1_000 && i < 7_000 && i%2 == 0
		switch {
		case deleted && err == nil:
			t.Errorf("Get(%s): found, want deleted by the range tombstone", key(i))
		case !deleted && err != nil:
			t.Errorf("Get(%s): %v", key(i), err)
		}
	}
}

// compactL0Into merges every L0 table of db into level, as one compaction.
func compactL0Into(t *testing.T, db *DB, level int) {
	t.Helper()
	db.mu.Lock()
	v := db.current
	v.ref()
	db.mu.Unlock()
	job := compactionJob{outputLevel: level, reason: "test"}
	for _, f := range v.Levels[0] {
		job.inputs = append(job.inputs, levelFile{0, f})
	}
	db.compactMu.Lock()
	err := db.runCompaction(v, job)
	db.compactMu.Unlock()
	v.unref()
	if err != nil {
		t.Fatal(err)
	}
}

// openManualSmallTree opens a store of smallTreeOptions with a memtable
// that holds each test's writes and no automatic compactions, so that the
// test builds its tree by hand; it is closed when the test ends.
func openManualSmallTree(t *testing.T) *DB {
	opts := smallTreeOptions(vfs.NewMem())
	opts.MemTableSize = 4 << 20
	opts.DisableAutomaticCompactions = true
	db := mustOpen(t, "db", opts)
	t.Cleanup(func() { db.Close() })
	return db
}
