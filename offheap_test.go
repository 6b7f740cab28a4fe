package shale

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/manual"
	"github.com/shale-db/shale/vfs"
)

// The tables' filters and indexes live in manual memory (internal/manual),
// freed when a table's last version lets go of it. These tests run with
// manual.CheckUseAfterFree (manual_test.go): a read of a freed table
// crashes the binary.

// TestIteratorOutlivesItsTables reads through an iterator after flushes
// and a compaction made every table it reads obsolete: the tables stay
// open, filters and indexes included, until the iterator closes, and are
// freed then.
func TestIteratorOutlivesItsTables(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), NoSync: true, BlockSize: 256, DisableAutomaticCompactions: true})
	defer db.Close()
	const n = 1000
	putKeys(t, db, 0, n/2, "old")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	putKeys(t, db, n/2, n, "old")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	it := db.NewIter(nil)
	defer it.Close()
	snap := db.NewSnapshot()
	defer snap.Close()
	if !it.First() {
		t.Fatalf("empty iterator: %v", it.Error())
	}
	putKeys(t, db, 0, n, "new")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if tables := db.Tables(); len(tables[0]) != 0 {
		t.Fatalf("L0 holds %d tables after Compact, want 0", len(tables[0]))
	}
	held := manual.InUse()

	// Both ways, and seeks, so that every table's index is read again.
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if want := string(numberedKey(i)); string(it.Key()) != want || string(it.Value()) != "old" {
			t.Fatalf("entry %d: %s=%s, want %s=old", i, it.Key(), it.Value(), want)
		}
		i++
	}
	if i != n {
		t.Fatalf("iterator saw %d keys, want %d (error %v)", i, n, it.Error())
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
	}
	for k := 0; k < n; k += 97 {
		key := numberedKey(k)
		if !it.SeekGE(key) || string(it.Key()) != string(key) {
			t.Fatalf("SeekGE(%s) landed on %s (error %v)", key, it.Key(), it.Error())
		}
	}
	if i != 0 || it.Error() != nil {
		t.Fatalf("backward: %d keys left over, error %v", i, it.Error())
	}
	if v, err := snap.Get([]byte("key0007")); err != nil || string(v) != "old" {
		t.Fatalf("snapshot Get: %q, %v", v, err)
	}

	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if it.First() || !errors.Is(it.Error(), ErrClosed) {
		t.Fatalf("First after Close: valid %v, error %v", it.Valid(), it.Error())
	}
	db.releaseRetired(false) // what the deleter goroutine would do next
	if freed := held - manual.InUse(); freed <= 0 {
		t.Fatalf("closing the last iterator on two obsolete tables freed %d bytes of manual memory", freed)
	}
}

// TestCloseFreesTables checks that once a DB is closed, every byte of
// manual memory its tables held is freed: tables of every level, tables
// only an iterator left open still held, and the tables of a failed Open,
// a Check and a Repair.
func TestCloseFreesTables(t *testing.T) {
	before := manual.InUse()
	checkFreed := leakCheck(t)
	fs := vfs.NewMem()
	opts := &Options{FS: fs, NoSync: true, BlockSize: 256, MemTableSize: 16 << 10, TargetFileSize: 8 << 10}
	db := mustOpen(t, "db", opts)
	putKeys(t, db, 0, 2000, "first")
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	it := db.NewIter(nil) // holds the compacted tables
	if !it.First() {
		t.Fatalf("empty iterator: %v", it.Error())
	}
	putKeys(t, db, 0, 2000, "second")
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	putKeys(t, db, 0, 500, "third")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if pinned := m.FilterMemory + m.IndexMemory; manual.InUse()-before < pinned {
		t.Fatalf("%d bytes of manual memory in use, below the %d bytes of filters and indexes the Metrics report", manual.InUse()-before, pinned)
	}
	if err := db.Close(); err == nil {
		t.Fatal("Close with an iterator left open did not say so")
	}
	if it.First() || !errors.Is(it.Error(), ErrClosed) {
		t.Fatalf("First on an iterator DB.Close released: valid %v, error %v", it.Valid(), it.Error())
	}
	checkFreed("after DB.Close")

	if err := Check("db", opts); err != nil {
		t.Fatal(err)
	}
	checkFreed("after Check")
	if err := Repair("db", opts); err != nil {
		t.Fatal(err)
	}
	checkFreed("after Repair")

	// An Open that fails on a missing table, after opening others.
	db = mustOpen(t, "db", opts)
	tables := db.Tables()[NumLevels-1]
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(tables) < 2 {
		t.Fatalf("%d tables in the bottom level, want several", len(tables))
	}
	if err := fs.Remove(fs.PathJoin("db", baseFileName(fileTypeTable, tables[len(tables)-1].FileNum))); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("db", opts); !errors.Is(err, ErrCorruption) {
		t.Fatalf("Open without a table: %v, want corruption", err)
	}
	checkFreed("after a failed Open")
}

// TestConcurrentTableUse reads through every path that touches tables'
// filters and indexes (Get, TraceGet, iterators, TraceScan, Tables,
// Metrics) while a writer's flushes and compactions retire the tables
// under them. A read of a freed table would crash the binary.
func TestConcurrentTableUse(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), NoSync: true, BlockSize: 256, MemTableSize: 16 << 10,
		L0CompactionThreshold: 2, LBaseMaxBytes: 64 << 10, TargetFileSize: 8 << 10})
	defer db.Close()
	const keys = 2000
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var errs goErrors
	read := func(i int) error {
		key := numberedKey(i % keys)
		if _, err := db.Get(key); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if _, err := db.TraceGet(key); err != nil {
			return err
		}
		it := db.NewIter(&IterOptions{LowerBound: key, UpperBound: numberedKey(i%keys + 50)})
		for ok := it.First(); ok; ok = it.Next() {
			_ = it.Value()
		}
		if err := it.Close(); err != nil {
			return err
		}
		if _, err := db.TraceScan(&IterOptions{LowerBound: key, UpperBound: numberedKey(i%keys + 5)}); err != nil {
			return err
		}
		db.Tables()
		db.Metrics()
		return nil
	}
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := r; !errs.failed(); i += 7 {
				select {
				case <-stop:
					return
				default:
				}
				if err := read(i); err != nil {
					errs.report(err)
					return
				}
			}
		}()
	}
	write := func() error {
		for round := range 4 {
			for i := range keys {
				if err := db.Put(numberedKey(i), fmt.Appendf(nil, "value%d", round)); err != nil {
					return err
				}
			}
		}
		return db.Compact()
	}
	if err := write(); err != nil {
		errs.report(err)
	}
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("readers did not stop within a minute of being told to")
	}
	errs.check(t)
}
