package shale

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/manual"
	"github.com/shale-db/shale/vfs"
)

// The tests of memtable lifetimes (see memTable). Memtables live outside
// the Go heap, and manual_test.go makes a read of freed memory crash the
// test binary, so a memtable freed too early fails them by crashing.

func lifeKey(i int) []byte { return fmt.Appendf(nil, "key%05d", i) }
func lifeValue(round, i int) []byte {
	return fmt.Appendf(nil, "value %d of key %d, round %d", round, i, round)
}

// lifePut writes every key of n with its value of round.
func lifePut(t *testing.T, db *DB, n, round int) {
	t.Helper()
	for i := range n {
		if err := db.Put(lifeKey(i), lifeValue(round, i)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadsOutliveMemTables keeps an iterator, a snapshot and a snapshot's
// iterator open while the memtables they read are rotated out, flushed and
// dropped by the DB, then reads through them: they must still see the
// store as it was, reading memtables only they now hold.
func TestReadsOutliveMemTables(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), NoSync: true, MemTableSize: 16 << 10})
	defer db.Close()
	const n = 500
	lifePut(t, db, n, 1)
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
		lifePut(t, db, n, round)
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
			if i >= n || string(c.it.Key()) != string(lifeKey(i)) || string(c.it.Value()) != string(lifeValue(1, i)) {
				t.Fatalf("%s entry %d: %q = %q, want %q = %q", c.name, i, c.it.Key(), c.it.Value(), lifeKey(i), lifeValue(1, i))
			}
			i++
		}
		if err := c.it.Error(); err != nil || i != n {
			t.Fatalf("%s: %d entries, error %v; want %d", c.name, i, err, n)
		}
	}
	for i := range n {
		if v, err := snap.Get(lifeKey(i)); err != nil || string(v) != string(lifeValue(1, i)) {
			t.Fatalf("snapshot Get(%q) = %q, %v; want %q", lifeKey(i), v, err, lifeValue(1, i))
		}
		if v, err := db.Get(lifeKey(i)); err != nil || string(v) != string(lifeValue(4, i)) {
			t.Fatalf("Get(%q) = %q, %v; want %q", lifeKey(i), v, err, lifeValue(4, i))
		}
	}
}

// TestCloseFreesMemTables checks that every byte of manual memory a DB
// takes is freed by Close, with an iterator and a snapshot left open
// (Close releases them, and they must not read what it freed), by the
// Open that replays the WAL into a memtable and flushes it, and by an Open
// that fails after making its memtable.
func TestCloseFreesMemTables(t *testing.T) {
	before := manual.InUse()
	efs := vfs.NewErrorFS(vfs.NewMem())
	opts := &Options{FS: efs, NoSync: true, MemTableSize: 16 << 10}
	db := mustOpen(t, "db", opts)
	const n = 500
	lifePut(t, db, n, 1)
	it := db.NewIter(nil)
	if !it.First() {
		t.Fatalf("First: %v", it.Error())
	}
	snap := db.NewSnapshot()
	if err := db.Close(); err == nil || !strings.Contains(err.Error(), "left open") {
		t.Fatalf("Close with an iterator and a snapshot open = %v, want an error counting them", err)
	}
	if got := manual.InUse(); got != before {
		t.Fatalf("after Close, %d bytes of manual memory in use, want %d", got, before)
	}
	if it.Next() || !errors.Is(it.Error(), ErrClosed) || it.Key() != nil || it.Value() != nil {
		t.Fatalf("an iterator after Close: Key %q, Value %q, error %v; want nothing and ErrClosed", it.Key(), it.Value(), it.Error())
	}
	if _, err := snap.Get(lifeKey(0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("a snapshot's Get after Close: %v, want ErrClosed", err)
	}

	// The WAL holds the last memtable's writes: Open replays and flushes them.
	db = mustOpen(t, "db", opts)
	if v, err := db.Get(lifeKey(n - 1)); err != nil || string(v) != string(lifeValue(1, n-1)) {
		t.Fatalf("Get(%q) after reopening = %q, %v; want %q", lifeKey(n-1), v, err, lifeValue(1, n-1))
	}
	lifePut(t, db, 10, 2) // a mutable memtable with entries, left in the WAL
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := manual.InUse(); got != before {
		t.Fatalf("after reopening and closing, %d bytes of manual memory in use, want %d", got, before)
	}

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
	if got := manual.InUse(); got != before {
		t.Fatalf("after a failed Open, %d bytes of manual memory in use, want %d", got, before)
	}
}
