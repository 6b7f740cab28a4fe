package memtable

import (
	"encoding/binary"
	"os"
	"slices"
	"testing"
	"unsafe"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/faulttest"
	"github.com/shale-db/shale/internal/manual"
)

// fill adds n entries with 8-byte keys and 100-byte values to m, tall
// nodes among them, and returns the keys.
func fill(m *MemTable, n int) [][]byte {
	keys := make([][]byte, n)
	value := make([]byte, 100)
	for i := range n {
		keys[i] = binary.BigEndian.AppendUint64(nil, uint64(i)*0x9e3779b97f4a7c15)
		m.Add(base.SeqNum(i+1), base.KindSet, keys[i], value)
	}
	return keys
}

// slabAddrs returns where m's slabs start.
func slabAddrs(m *MemTable) []uintptr {
	var addrs []uintptr
	for _, held := range [][][]byte{m.bytes.held, m.nodes.held, m.highs.held} {
		for _, b := range held {
			addrs = append(addrs, uintptr(unsafe.Pointer(unsafe.SliceData(b))))
		}
	}
	slices.Sort(addrs)
	return addrs
}

// TestRecyclerReusesSlabs checks that a memtable made after another was
// freed writes into the freed one's slabs, without a new mapping, and
// reads back exactly what it was given (whether the slabs came back
// cleared is TestRecyclerClears's: Add sets every field of a node it
// takes, so stale bytes would not show here). Close then frees every slab
// kept.
func TestRecyclerReusesSlabs(t *testing.T) {
	before := manual.InUse()
	r := NewRecycler(16 << 20)
	first := NewFiltered(4<<20, r)
	fill(first, 20000)
	slabs := slabAddrs(first)
	held := manual.InUse()
	first.Free()
	if got := r.Bytes(); int64(got) != held-before {
		t.Fatalf("the recycler keeps %d bytes of slabs, want all %d", got, held-before)
	}
	second := NewFiltered(4<<20, r)
	keys := fill(second, 20000)
	if got := manual.InUse(); got != held {
		t.Fatalf("the second memtable took %d new bytes outside the heap, want none", got-held)
	}
	if got := slabAddrs(second); !slices.Equal(got, slabs) {
		t.Fatalf("the second memtable's slabs are at %x, want the first's %x", got, slabs)
	}
	if r.Bytes() != 0 {
		t.Fatalf("the recycler still keeps %d bytes", r.Bytes())
	}
	for i, k := range keys {
		v, kind, ok := second.Get(k, base.SeqNum(len(keys)))
		if !ok || kind != base.KindSet || len(v) != 100 {
			t.Fatalf("key %d: got %v %v (%d bytes), want a 100-byte value", i, ok, kind, len(v))
		}
	}
	n := 0
	for x := second.head.low[0].Load(); x != nil; x = x.low[0].Load() {
		n++
	}
	if n != len(keys) {
		t.Fatalf("the skiplist has %d nodes, want %d", n, len(keys))
	}
	second.Free()
	r.Close()
	if got := manual.InUse(); got != before {
		t.Fatalf("%d bytes outside the heap after Close, want %d", got, before)
	}
	third := NewFiltered(4<<20, r) // a closed recycler keeps nothing
	fill(third, 1000)
	third.Free()
	if got := manual.InUse(); got != before || r.Bytes() != 0 {
		t.Fatalf("after freeing into a closed recycler: %d bytes outside the heap, %d kept; want %d and 0", got, r.Bytes(), before)
	}
}

// TestRecyclerClears checks that every slab a recycler hands out is
// zeroed, as a new one is: Add fills in each node it takes, but alloc
// promises zeroed runs.
func TestRecyclerClears(t *testing.T) {
	r := NewRecycler(16 << 20)
	defer r.Close()
	m := NewFiltered(4<<20, r)
	fill(m, 20000)
	m.Free()
	for n, l := range r.bufs {
		for range l {
			b := r.take(n)
			if i := slices.IndexFunc(b, func(c byte) bool { return c != 0 }); i >= 0 {
				t.Fatalf("a recycled slab of %d bytes has byte %d = %d, want all zero", n, i, b[i])
			}
			defer r.give(b)
		}
	}
}

// TestRecyclerLimit checks that a recycler keeps slabs up to its limit and
// frees the rest, and never keeps a large entry's buffer of its own.
func TestRecyclerLimit(t *testing.T) {
	before := manual.InUse()
	const limit = 100 << 10
	r := NewRecycler(limit)
	defer r.Close()
	m := NewFiltered(4<<20, r)
	fill(m, 5000)
	m.Add(5001, base.KindSet, []byte("large"), make([]byte, maxSlabBytes))
	m.Free()
	if kept := r.Bytes(); kept == 0 || kept > limit {
		t.Fatalf("the recycler keeps %d bytes, want some and at most %d", kept, limit)
	}
	if got := manual.InUse() - before; got != int64(r.Bytes()) {
		t.Fatalf("%d bytes outside the heap after Free, want only the %d kept", got, r.Bytes())
	}
}

// TestRecycledSlabsFault runs itself in a child process: under
// manual.CheckUseAfterFree a read of a value from a memtable freed into a
// recycler must fault, as it does after a plain Free.
func TestRecycledSlabsFault(t *testing.T) {
	if os.Getenv("MEMTABLE_RECYCLED") == "1" {
		r := NewRecycler(16 << 20)
		m := NewFiltered(1<<20, r)
		m.Add(1, base.KindSet, []byte("k"), []byte("value"))
		v, _, _ := m.Get([]byte("k"), 1)
		m.Free()
		println("kept:", r.Bytes() > 0)
		println("read after free:", string(v)) // faults
		os.Exit(0)
	}
	faulttest.ExpectFault(t, "MEMTABLE_RECYCLED", "kept: true", "read after free:")
}
