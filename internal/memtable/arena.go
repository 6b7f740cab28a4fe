package memtable

import (
	"unsafe"

	"github.com/shale-db/shale/internal/manual"
)

// Slab sizes, in bytes. A memtable's first slab of each kind is small, so an
// empty or lightly used memtable (tests, a DB with a tiny MemTableSize) costs
// little; each new slab doubles the last, up to maxSlabBytes, so a large
// memtable makes one allocation per MiB rather than one per entry.
const (
	minSlabBytes = 4 << 10
	maxSlabBytes = 1 << 20
)

// slab hands out consecutive runs of Ts from a shared backing array outside
// the Go heap (package manual). The memtable keeps one for key and value
// bytes, one for nodes and one for the high links of tall nodes. Runs are
// never freed or reused on their own: they live until free releases the
// whole slab with its memtable, which is what lets readers alias them
// without copying.
//
// Only the writer calls alloc. A run is published to readers by the atomic
// store that links its node into the list, so readers never see a run being
// filled in.
type slab[T any] struct {
	buf []T // the current backing array; len is the part handed out
	// held are the slabs behind every run handed out, and own the buffers
	// of large runs (see alloc), for free.
	held, own [][]byte
	// recycler, when not nil, lends slabs of freed memtables and takes
	// back this one's (see Recycler).
	recycler *Recycler
}

// alloc returns a zeroed run of n Ts whose capacity is n, so an append by the
// caller can never reach into the next run. A request larger than a quarter
// of the largest slab gets a buffer of its own: folding it into a slab could
// waste most of the slab it abandons.
func (s *slab[T]) alloc(n int) []T {
	if n > cap(s.buf)-len(s.buf) {
		elem := int(unsafe.Sizeof(*new(T)))
		limit := maxSlabBytes / elem
		if n > limit/4 {
			b := manual.New(n * elem)
			s.own = append(s.own, b)
			return asTs[T](b, n)
		}
		s.buf = s.newSlab(min(max(2*cap(s.buf), minSlabBytes/elem, n), limit))[:0]
	}
	i := len(s.buf)
	s.buf = s.buf[:i+n]
	return s.buf[i : i+n : i+n]
}

// newSlab returns a slab of n zeroed Ts: one the recycler kept, or a new
// buffer from manual.New.
func (s *slab[T]) newSlab(n int) []T {
	size := n * int(unsafe.Sizeof(*new(T)))
	b := s.recycler.take(size)
	if b == nil {
		b = manual.New(size)
	}
	s.held = append(s.held, b)
	return asTs[T](b, n)
}

// asTs casts buffer b, from manual.New, to n Ts. manual.New aligns it to a
// page, or to 8 bytes when it falls back to the heap: enough for any T.
func asTs[T any](b []byte, n int) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// free gives the slab's buffers back, each slab to the recycler (which
// frees what it does not keep) and each large run's buffer to the kernel.
// Nothing handed out by alloc may be touched afterwards.
func (s *slab[T]) free() {
	for _, b := range s.held {
		s.recycler.give(b)
	}
	for _, b := range s.own {
		manual.Free(b)
	}
	s.buf, s.held, s.own = nil, nil, nil
}
