package memtable

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manual"
)

// Every test runs with freed slabs made inaccessible, so that a read of a
// memtable after its Free crashes the test binary instead of passing.
func init() { manual.CheckUseAfterFree() }

// newMem returns an empty memtable that is freed when the test ends. It
// keeps a key filter, as the DB's memtables do, sized so that the tests'
// few thousand keys leave it far from full and it answers "no" for most
// absent keys: a filter that hid a key it was given would fail them.
func newMem(tb testing.TB) *MemTable {
	m := NewFiltered(1<<20, nil)
	tb.Cleanup(m.Free)
	return m
}

// TestFreeReturnsMemory checks that Free gives back every byte the
// memtable took outside the heap: slabs of each kind, and the buffer of
// its own that a large entry gets.
func TestFreeReturnsMemory(t *testing.T) {
	before := manual.InUse()
	m := New()
	value := make([]byte, 100)
	for i := range 20000 { // past the first slabs, and tall nodes among them
		m.Add(base.SeqNum(i+1), base.KindSet, binary.BigEndian.AppendUint64(nil, uint64(i)*0x9e3779b97f4a7c15), value)
	}
	m.Add(20001, base.KindSet, []byte("large"), make([]byte, maxSlabBytes))
	if used := manual.InUse() - before; used < int64(m.Size()) {
		t.Fatalf("the memtable holds %d bytes outside the heap, less than its Size %d", used, m.Size())
	}
	m.Add(20002, base.KindRangeDelete, []byte("a"), []byte("b"))
	m.Free()
	if after := manual.InUse(); after != before {
		t.Fatalf("%d bytes outside the heap after Free, want %d", after, before)
	}
}

// TestRangeDelsOutliveFree checks that range tombstones stay readable after
// Free: the DB passes them on (clipped into new tables' bounds, merged into
// iterators' spans), so they must not alias the slabs Free returns. Under
// CheckUseAfterFree a read of a freed slab crashes the test.
func TestRangeDelsOutliveFree(t *testing.T) {
	m := New()
	m.Add(1, base.KindSet, []byte("k"), []byte("v"))
	m.Add(2, base.KindRangeDelete, []byte("from"), []byte("to"))
	spans := m.RangeDels()
	m.Free()
	if len(spans) != 1 || string(spans[0].Start) != "from" || string(spans[0].End) != "to" {
		t.Fatalf("after Free, RangeDels returned %v, want [from, to)", spans)
	}
}

// TestNodesAligned checks the alignment that node's layout counts on and
// that unsafe casts of slab bytes need: every node starts at a multiple of
// 32 bytes, so its first 32 bytes never straddle a cache line, and its
// pointer fields are aligned.
func TestNodesAligned(t *testing.T) {
	m := newMem(t)
	for i := range 2000 {
		m.Add(base.SeqNum(i+1), base.KindSet, binary.BigEndian.AppendUint64(nil, uint64(i)), nil)
	}
	n := 0
	for x := m.head.low[0].Load(); x != nil; x = x.low[0].Load() {
		if addr := uintptr(unsafe.Pointer(x)); addr%32 != 0 {
			t.Fatalf("node %d at %#x, not 32-byte aligned", n, addr)
		}
		n++
	}
	if n != 2000 {
		t.Fatalf("walked %d nodes, want 2000", n)
	}
}
