// Package merging reads several sorted internal iterators as one, in both
// directions: the DB's user iterators and its compactions both read their
// inputs through it.
package merging

import (
	"errors"

	"github.com/shale-db/shale/internal/base"
)

// mergingIter yields every entry of every child, in internal-key order. It
// keeps the children that are positioned in a binary heap ordered by their
// current keys: a min-heap while moving forward, a max-heap while moving
// backward, so the top is always the current entry. Entries with equal
// internal keys come in child order going forward (and the reverse going
// backward), which makes the order total.
//
// Only the top child moves on Next and Prev. The others sit on the entry
// just past the current one on the side the iterator is moving to, so
// turning around means moving each of them to the other side of the current
// entry: see turn.
type mergingIter struct {
	children []mergingChild
	heap     []*mergingChild // the positioned children
	dir      int             // +1 forward (min-heap), -1 backward (max-heap)
	err      error
}

type mergingChild struct {
	iter  base.InternalIterator
	index int              // position among the children: breaks ties
	key   base.InternalKey // iter.Key(), while in the heap
}

// NewIter returns an iterator over the union of the entries of iters,
// in internal-key order. It does not drop duplicates or shadowed versions:
// the compaction iterator and the DB's user iterator do that. An error from
// any child stops it: it becomes invalid and reports that error. Close
// closes every child.
func NewIter(iters ...base.InternalIterator) base.InternalIterator {
	m := &mergingIter{
		children: make([]mergingChild, len(iters)),
		heap:     make([]*mergingChild, 0, len(iters)),
	}
	for i, it := range iters {
		m.children[i] = mergingChild{iter: it, index: i}
	}
	return m
}

// First positions every child on its first entry.
func (m *mergingIter) First() bool { return m.position(+1, base.InternalIterator.First) }

// Last positions every child on its last entry.
func (m *mergingIter) Last() bool { return m.position(-1, base.InternalIterator.Last) }

// SeekGE seeks every child to the first entry with a user key >= key.
func (m *mergingIter) SeekGE(key []byte) bool {
	return m.position(+1, func(it base.InternalIterator) bool { return it.SeekGE(key) })
}

// SeekLT seeks every child to the last entry with a user key < key.
func (m *mergingIter) SeekLT(key []byte) bool {
	return m.position(-1, func(it base.InternalIterator) bool { return it.SeekLT(key) })
}

// position moves every child with move, and builds the heap for direction
// dir from those left on an entry.
func (m *mergingIter) position(dir int, move func(base.InternalIterator) bool) bool {
	m.err, m.dir, m.heap = nil, dir, m.heap[:0]
	for i := range m.children {
		if !m.add(&m.children[i], move(m.children[i].iter)) {
			return false
		}
	}
	m.heapify()
	return m.Valid()
}

// add puts c in the heap (without restoring the heap order) if ok, the
// result of its last move, says it is on an entry. It returns false, with the
// iterator failed, if c reports an error.
func (m *mergingIter) add(c *mergingChild, ok bool) bool {
	if ok {
		c.key = c.iter.Key()
		m.heap = append(m.heap, c)
		return true
	}
	if err := c.iter.Error(); err != nil {
		m.fail(err)
		return false
	}
	return true
}

// Next moves to the next entry in internal-key order.
func (m *mergingIter) Next() bool {
	if !m.Valid() || m.dir < 0 && !m.turn(+1) {
		return false
	}
	return m.settle(m.heap[0].iter.Next())
}

// Prev moves to the previous entry in internal-key order.
func (m *mergingIter) Prev() bool {
	if !m.Valid() || m.dir > 0 && !m.turn(-1) {
		return false
	}
	return m.settle(m.heap[0].iter.Prev())
}

// settle restores the heap after the top child moved; ok is what its move
// returned.
func (m *mergingIter) settle(ok bool) bool {
	top := m.heap[0]
	switch {
	case ok:
		top.key = top.iter.Key()
	case top.iter.Error() != nil:
		m.fail(top.iter.Error())
		return false
	default:
		last := len(m.heap) - 1
		m.heap[0] = m.heap[last]
		m.heap = m.heap[:last]
	}
	if len(m.heap) > 0 {
		m.down(0)
	}
	return m.Valid()
}

// turn reverses the direction of iteration to dir while staying on the
// current entry. The current child stays put; every other child, exhausted
// or not, moves to its nearest entry beyond the current one in direction
// dir. To get there it seeks to the current user key and steps forward over
// the entries that order before the current one: that lands on the first
// entry after it, which is the goal going forward; going backward, one step
// back (or to the last entry, if none was after) is the goal.
func (m *mergingIter) turn(dir int) bool {
	cur := m.heap[0]
	m.heap = append(m.heap[:0], cur)
	for i := range m.children {
		c := &m.children[i]
		if c == cur {
			continue
		}
		ok := c.iter.SeekGE(cur.key.UserKey)
		for ok && compareAt(c.iter.Key(), c.index, cur.key, cur.index) < 0 {
			ok = c.iter.Next()
		}
		if dir < 0 {
			switch {
			case ok:
				ok = c.iter.Prev()
			case c.iter.Error() == nil:
				ok = c.iter.Last()
			}
		}
		if !m.add(c, ok) {
			return false
		}
	}
	m.dir = dir
	m.heapify()
	return true
}

// fail makes the iterator invalid with err.
func (m *mergingIter) fail(err error) {
	m.err = err
	m.heap = m.heap[:0]
}

// compareAt orders entries by internal key, then by child index.
func compareAt(a base.InternalKey, ai int, b base.InternalKey, bi int) int {
	if c := base.Compare(a, b); c != 0 {
		return c
	}
	return ai - bi
}

// before reports whether the heap puts a above b in the current direction.
func (m *mergingIter) before(a, b *mergingChild) bool {
	return compareAt(a.key, a.index, b.key, b.index)*m.dir < 0
}

func (m *mergingIter) heapify() {
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
}

// down sifts the child at i down to where it belongs.
func (m *mergingIter) down(i int) {
	h := m.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		j := l
		if r := l + 1; r < len(h) && m.before(h[r], h[l]) {
			j = r
		}
		if !m.before(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// Valid reports whether the iterator is on an entry.
func (m *mergingIter) Valid() bool { return len(m.heap) > 0 }

// Key returns the current entry's key; the zero key when not Valid.
func (m *mergingIter) Key() base.InternalKey {
	if !m.Valid() {
		return base.InternalKey{}
	}
	return m.heap[0].key
}

// Value returns the current entry's value; nil when not Valid.
func (m *mergingIter) Value() []byte {
	if !m.Valid() {
		return nil
	}
	return m.heap[0].iter.Value()
}

// Error returns the error that stopped the iterator, if any.
func (m *mergingIter) Error() error { return m.err }

// Close closes every child and returns the iterator's error, or else the
// children's close errors.
func (m *mergingIter) Close() error {
	var errs []error
	for i := range m.children {
		errs = append(errs, m.children[i].iter.Close())
	}
	m.heap = m.heap[:0]
	if m.err != nil {
		return m.err
	}
	return errors.Join(errs...)
}
