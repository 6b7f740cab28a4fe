package shale

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/sstable"
)

// largestEntry is the longest key plus value a table holds.
const largestEntry = sstable.MaxEntryLen - base.TrailerLen

// TestApplyRefusesEntryNoTableHolds: a write whose key and value are too
// long for a table used to be acknowledged, then every flush failed, so
// the store took no more writes and could not be opened again. Apply must
// refuse it whole, write nothing, and leave the store working.
func TestApplyRefusesEntryNoTableHolds(t *testing.T) {
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	key := []byte("k")
	big := bytes.Repeat([]byte{7}, largestEntry-len(key)+1)

	if err := db.Put(key, big); err == nil {
		t.Fatalf("Put of a %d-byte key and value: no error", len(key)+len(big))
	}
	b := db.NewBatch()
	b.Put([]byte("a"), []byte("1"))
	b.DeleteRange([]byte{0}, big)
	if err := db.Apply(b); err == nil {
		t.Fatal("Apply of a batch with a range deletion too long for a table: no error")
	}
	if _, err := db.Get([]byte("a")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(a) after the refused batch: %v, want ErrNotFound", err)
	}
	if err := db.Put([]byte("after"), []byte("x")); err != nil {
		t.Fatalf("Put after the refusals: %v", err)
	}
	db = flushAndReopen(t, db, dir)
	defer db.Close()
	if v, err := db.Get([]byte("after")); err != nil || string(v) != "x" {
		t.Fatalf("Get(after) after reopening: %q, %v", v, err)
	}
}

// TestLargestEntrySurvivesFlush: an entry of exactly the largest length is
// taken, flushed into a table and read back after a reopen. It needs about
// 2 GB of memory and half a minute, so it runs with -long.
func TestLargestEntrySurvivesFlush(t *testing.T) {
	if !*long {
		t.Skip("needs -long: 2 GB of memory")
	}
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	key := []byte("k")
	big := bytes.Repeat([]byte{7}, largestEntry-len(key))
	if err := db.Put(key, big); err != nil {
		t.Fatalf("Put of a %d-byte key and value, the largest: %v", largestEntry, err)
	}
	db = flushAndReopen(t, db, dir)
	defer db.Close()
	got, err := db.Get(key)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Get after reopening: %d bytes, %v; want the %d written", len(got), err, len(big))
	}
}

// flushAndReopen flushes db, closes it and opens dir again.
func flushAndReopen(t *testing.T, db *DB, dir string) *DB {
	t.Helper()
	if err := db.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return mustOpen(t, dir, nil)
}
