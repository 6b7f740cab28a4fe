package shale

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manual"
	"github.com/shale-db/shale/vfs"
)

// The tests of memtable lifetimes (see memTable). Memtables live outside
// the Go heap, and manual_test.go makes a read of freed memory crash the
// test binary, so a memtable freed too early fails them by crashing.

// roundValue is the value every key gets in a round of writes.
func roundValue(round int) string { return fmt.Sprintf("round %d", round) }

// TestReadsOutliveMemTables keeps an iterator, a snapshot and a snapshot's
// iterator open while the memtables they read are rotated out, flushed and
// dropped by the DB, then reads through them: they must still see the
// store as it was, reading memtables only they now hold.
func TestReadsOutliveMemTables(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), NoSync: true, MemTableSize: 16 << 10})
	defer db.Close()
	const n = 500
	putKeys(t, db, 0, n, roundValue(1))
	if m := db.Metrics(); m.MemTableBytes == 0 {
		t.Fatal("the mutable memtable is empty: the iterators would read no memtable")
	}
	it := db.NewIter(nil)
	defer it.Close()
	if !it.First() { // positioned in every memtable it holds
		t.Fatalf("First: %v", it.Error())
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	sit := snap.NewIter(nil)
	defer sit.Close()
	if !sit.First() {
		t.Fatalf("snapshot iterator First: %v", sit.Error())
	}

	flushes := db.Metrics().Flushes
	for round := 2; round <= 4; round++ {
		putKeys(t, db, 0, n, roundValue(round))
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if m := db.Metrics(); m.Flushes-flushes < 3 || m.ImmutableTables != 0 {
		t.Fatalf("%d flushes, %d memtables waiting: the memtables the readers hold are not all dropped by the DB",
			m.Flushes-flushes, m.ImmutableTables)
	}

	for _, c := range []struct {
		name string
		it   *Iterator
	}{{"iterator", it}, {"snapshot iterator", sit}} {
		i := 0
		for ok := true; ok; ok = c.it.Next() {
			if i >= n || string(c.it.Key()) != string(numberedKey(i)) || string(c.it.Value()) != (roundValue(1)) {
				t.Fatalf("%s entry %d: %q = %q, want %q = %q", c.name, i, c.it.Key(), c.it.Value(), numberedKey(i), roundValue(1))
			}
			i++
		}
		if err := c.it.Error(); err != nil || i != n {
			t.Fatalf("%s: %d entries, error %v; want %d", c.name, i, err, n)
		}
	}
	for i := range n {
		if v, err := snap.Get(numberedKey(i)); err != nil || string(v) != (roundValue(1)) {
			t.Fatalf("snapshot Get(%q) = %q, %v; want %q", numberedKey(i), v, err, roundValue(1))
		}
		if v, err := db.Get(numberedKey(i)); err != nil || string(v) != (roundValue(4)) {
			t.Fatalf("Get(%q) = %q, %v; want %q", numberedKey(i), v, err, roundValue(4))
		}
	}
}

// TestCloseFreesMemTables checks that every byte of manual memory a DB
// takes is freed by Close, with an iterator and a snapshot left open
// (Close releases them, and they must not read what it freed), by the
// Open that replays the WAL into a memtable and flushes it, and by an Open
// that fails after making its memtable.
func TestCloseFreesMemTables(t *testing.T) {
	checkFreed := leakCheck(t)
	efs := vfs.NewErrorFS(vfs.NewMem())
	opts := &Options{FS: efs, NoSync: true, MemTableSize: 16 << 10}
	db := mustOpen(t, "db", opts)
	const n = 500
	putKeys(t, db, 0, n, roundValue(1))
	it := db.NewIter(nil)
	if !it.First() {
		t.Fatalf("First: %v", it.Error())
	}
	snap := db.NewSnapshot()
	if err := db.Close(); err == nil || !strings.Contains(err.Error(), "left open") {
		t.Fatalf("Close with an iterator and a snapshot open = %v, want an error counting them", err)
	}
	checkFreed("after Close")
	if it.Next() || !errors.Is(it.Error(), ErrClosed) || it.Key() != nil || it.Value() != nil {
		t.Fatalf("an iterator after Close: Key %q, Value %q, error %v; want nothing and ErrClosed", it.Key(), it.Value(), it.Error())
	}
	if _, err := snap.Get(numberedKey(0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("a snapshot's Get after Close: %v, want ErrClosed", err)
	}

	// The WAL holds the last memtable's writes: Open replays and flushes them.
	db = mustOpen(t, "db", opts)
	if v, err := db.Get(numberedKey(n - 1)); err != nil || string(v) != (roundValue(1)) {
		t.Fatalf("Get(%q) after reopening = %q, %v; want %q", numberedKey(n-1), v, err, roundValue(1))
	}
	putKeys(t, db, 0, 10, roundValue(2)) // a mutable memtable with entries, left in the WAL
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkFreed("after reopening and closing")

	// An Open that replays the WAL, flushes it and makes its memtable,
	// then cannot write its MANIFEST.
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpCreate && strings.Contains(path, "MANIFEST") {
			return errors.New("injected")
		}
		return nil
	})
	if _, err := Open("db", opts); err == nil {
		t.Fatal("Open succeeded without a MANIFEST")
	}
	checkFreed("after a failed Open")
}

// TestMemTableFreedByDeleter checks that dropping a memtable's last
// reference (which a Get does when its readState's is the last) does not
// free the memtable on the caller's goroutine but queues it for the
// deleter goroutine, that Close's releaseRetired frees what is queued,
// and that once the DB has stopped retiring a memtable is freed at once.
// The DB here runs no goroutines, so nothing frees the queue behind the
// test's back.
func TestMemTableFreedByDeleter(t *testing.T) {
	checkFreed := leakCheck(t)
	db := &DB{retireCh: make(chan struct{}, 1)}
	mem := db.newMemTable(1)
	mem.Add(1, base.KindSet, []byte("key"), []byte("value"))
	held := manual.InUse()
	mem.ref() // a readState's
	mem.unref()
	mem.unref() // the last, as a Get drops it
	if manual.InUse() != held || len(db.retiredMems) != 1 {
		t.Fatalf("after the last unref: %d bytes of manual memory were freed, %d memtables queued; want 0 and 1",
			held-manual.InUse(), len(db.retiredMems))
	}
	select {
	case <-db.retireCh:
	default:
		t.Fatal("the deleter goroutine was not woken")
	}
	db.releaseRetired(true)
	checkFreed("after releaseRetired")

	mem = db.newMemTable(2)
	mem.Add(1, base.KindSet, []byte("key"), []byte("value"))
	mem.unref()
	checkFreed("after the last unref once retiring stopped")
}

// TestFlushFreesMemTableAtOnce checks that a flush frees the memtable it
// drops when no read holds it, rather than queueing it for the deleter
// goroutine, which may be busy deleting files: here it is stuck removing
// the inputs of a compaction, and every memtable flushed meanwhile must
// still be freed. (Queued, four memtables were held at once in a 10M-key
// fill, 16 MiB of the process's peak.)
func TestFlushFreesMemTableAtOnce(t *testing.T) {
	fs := &stuckRemoveFS{FS: vfs.NewMem(), stuck: make(chan struct{}), unstick: make(chan struct{})}
	db := mustOpen(t, "db", &Options{FS: fs, NoSync: true, MemTableSize: 1 << 20, L0CompactionThreshold: 2})
	defer db.Close()
	defer close(fs.unstick) // before Close, which waits for the deleter
	const n = 1000
	for round := range 2 { // two L0 tables: a compaction, whose inputs the deleter removes
		putKeys(t, db, 0, n, roundValue(round))
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-fs.stuck:
	case <-time.After(stuckFor):
		t.Fatalf("no table removed in %v: the compaction of two L0 tables did not run", stuckFor)
	}
	// held is the manual memory in use but for the slabs kept for reuse.
	held := func() int64 { return manual.InUse() - db.Metrics().MemTableSpareBytes }
	for round := 2; round < 5; round++ {
		putKeys(t, db, 0, n, roundValue(round))
		before, size := held(), db.Metrics().MemTableBytes
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		// The flush frees the memtable just after Flush's wait ends (its
		// slabs kept for reuse or unmapped); the new table's filter and
		// index take a few KiB.
		for deadline := time.Now().Add(stuckFor); held() > before-size/2; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d bytes of manual memory held before the flush of a %d-byte memtable, %d after: not freed",
					round, before, size, held())
			}
		}
	}
}

// stuckFor bounds the waits of TestFlushFreesMemTableAtOnce, and how long
// stuckRemoveFS holds a Remove.
const stuckFor = 10 * time.Second

// stuckRemoveFS holds every Remove of a table file until unstick is closed
// (or stuckFor has passed), and closes stuck when the first one begins.
type stuckRemoveFS struct {
	vfs.FS
	once           sync.Once
	stuck, unstick chan struct{}
}

func (fs *stuckRemoveFS) Remove(name string) error {
	if strings.HasSuffix(name, ".sst") {
		fs.once.Do(func() { close(fs.stuck) })
		select {
		case <-fs.unstick:
		case <-time.After(stuckFor):
		}
	}
	return fs.FS.Remove(name)
}

// TestMemTablesReuseSlabs checks that a flushed memtable's slabs are kept
// for the next memtables (Metrics.MemTableSpareBytes, at most
// MemTableSize), that the next memtable writes into them rather than into
// new memory, and that Close frees them.
func TestMemTablesReuseSlabs(t *testing.T) {
	checkFreed := leakCheck(t)
	const memSize = 256 << 10
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), NoSync: true, MemTableSize: memSize, DisableAutomaticCompactions: true})
	putKeys(t, db, 0, 1000, roundValue(0))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// The flush goroutine frees the flushed memtable after Flush returns,
	// handing its slabs to the recycler one at a time: wait until some are
	// kept and the count has held still for 100 ms, so that the refill
	// below starts from all of them, not from the first few.
	var spare int64
	for deadline, still := time.Now().Add(10*time.Second), 0; spare == 0 || still < 100; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the slabs kept after a flush (%d bytes) did not settle in 10s", spare)
		}
		if n := db.Metrics().MemTableSpareBytes; n != spare {
			spare, still = n, 0
		} else {
			still++
		}
	}
	if spare > memSize {
		t.Fatalf("%d bytes of slabs kept, more than MemTableSize (%d)", spare, memSize)
	}
	before := manual.InUse()
	putKeys(t, db, 0, 1000, roundValue(1)) // about as much as the flushed memtable held
	if m := db.Metrics(); m.ImmutableTables > 0 || m.MemTableSpareBytes >= spare {
		t.Fatalf("after refilling the memtable: %d waiting, %d bytes kept (%d before); want none waiting and fewer kept", m.ImmutableTables, m.MemTableSpareBytes, spare)
	}
	if grew := manual.InUse() - before; grew > spare/4 {
		t.Fatalf("refilling the memtable took %d new bytes outside the heap with %d bytes of slabs kept", grew, spare)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkFreed("after Close")
}
