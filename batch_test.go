package shale

import (
	"errors"
	"testing"

	"github.com/shale-db/shale/internal/base"
)

func TestBatchEncoding(t *testing.T) {
	var b Batch
	b.Put([]byte("a"), []byte("1"))
	b.Delete([]byte(""))
	b.Put([]byte("c"), nil)
	b.setSeqNum(7)
	var got []batchEntry
	first, n, err := decodeBatch(b.data, "x.log", 0, func(e batchEntry) { got = append(got, e) })
	if err != nil || first != 7 || n != 3 {
		t.Fatalf("decode: first %d, n %d, %v", first, n, err)
	}
	want := []batchEntry{{7, base.KindSet, []byte("a"), []byte("1")}, {8, base.KindDelete, []byte(""), nil}, {9, base.KindSet, []byte("c"), []byte{}}}
	for i := range want {
		if got[i].Seq != want[i].Seq || got[i].Kind != want[i].Kind || string(got[i].Key) != string(want[i].Key) || string(got[i].Value) != string(want[i].Value) {
			t.Fatalf("entry %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// Every truncation is corruption, and nothing is applied.
	for i := 0; i < len(b.data); i++ {
		applied := 0
		_, _, err := decodeBatch(b.data[:i], "x.log", 40, func(batchEntry) { applied++ })
		if !errors.Is(err, ErrCorruption) || applied != 0 {
			t.Fatalf("truncated to %d: %v, %d entries applied", i, err, applied)
		}
	}
	// A range deletion: its range is its key and value; an empty one is
	// corrupt.
	b.Reset()
	b.DeleteRange([]byte("a"), []byte("c"))
	b.DeleteRange([]byte("c"), []byte("c")) // empty: not recorded
	b.setSeqNum(3)
	got = got[:0]
	if _, n, err := decodeBatch(b.data, "x.log", 0, func(e batchEntry) { got = append(got, e) }); err != nil || n != 1 ||
		got[0].Kind != base.KindRangeDelete || string(got[0].Key) != "a" || string(got[0].Value) != "c" {
		t.Fatalf("range deletion: %d entries %+v, %v", n, got, err)
	}
	bad := append([]byte{}, b.data...)
	bad[len(bad)-1] = 'a' // [a, a)
	if _, _, err := decodeBatch(bad, "x.log", 0, func(batchEntry) {}); !errors.Is(err, ErrCorruption) {
		t.Fatalf("empty range: %v", err)
	}
	b.Reset()
	if b.Count() != 0 || b.Len() != batchHeaderLen {
		t.Fatalf("Reset left count %d, len %d", b.Count(), b.Len())
	}
}

// FuzzDecodeBatch: a WAL record of any bytes decodes or is corruption, and
// never panics or allocates by a garbage count.
func FuzzDecodeBatch(f *testing.F) {
	var b Batch
	b.Put([]byte("key"), []byte("value"))
	b.Delete([]byte("gone"))
	b.DeleteRange([]byte("a"), []byte("k"))
	b.setSeqNum(1)
	f.Add(b.data)
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		applied := 0
		_, n, err := decodeBatch(data, "fuzz.log", 0, func(batchEntry) { applied++ })
		if err != nil {
			if !errors.Is(err, ErrCorruption) || applied != 0 {
				t.Fatalf("%v (applied %d)", err, applied)
			}
			return
		}
		if applied != n {
			t.Fatalf("applied %d of %d", applied, n)
		}
	})
}

// TestBatchResetKeepsBuffer: a batch reused after Reset writes into the
// buffer it already has, and its header is zero again until commit stamps
// it, whatever the previous commit wrote there.
func TestBatchResetKeepsBuffer(t *testing.T) {
	var b Batch
	b.Put([]byte("key"), make([]byte, 100))
	b.setSeqNum(7)
	buf := &b.data[0]
	b.Reset()
	b.Put([]byte("k2"), []byte("v"))
	if &b.data[0] != buf {
		t.Fatal("Put after Reset allocated a new buffer")
	}
	for i, c := range b.data[:batchHeaderLen] {
		if c != 0 {
			t.Fatalf("header byte %d is %d after Reset and Put, want 0", i, c)
		}
	}
	b.setSeqNum(9)
	var got []batchEntry
	if _, n, err := decodeBatch(b.data, "x.log", 0, func(e batchEntry) { got = append(got, e) }); err != nil || n != 1 ||
		got[0].Seq != 9 || string(got[0].Key) != "k2" || string(got[0].Value) != "v" {
		t.Fatalf("reused batch: %d entries %+v, %v", n, got, err)
	}
}
