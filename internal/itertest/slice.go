package itertest

import (
	"sort"

	"github.com/shale-db/shale/internal/base"
)

// sliceIter is an InternalIterator over entries held in slices.
type sliceIter struct {
	keys   []base.InternalKey
	values [][]byte
	pos    int // on an entry when 0 <= pos < len(keys)
}

// NewSliceIter returns an iterator over keys, which must be in internal-key
// order, and their values: values[i] is the value of keys[i], and there must
// be as many values as keys. It never fails. It makes an input or a model for
// tests of anything that reads an InternalIterator.
func NewSliceIter(keys []base.InternalKey, values [][]byte) base.InternalIterator {
	if len(values) != len(keys) {
		panic("itertest: NewSliceIter needs one value per key")
	}
	return &sliceIter{keys: keys, values: values, pos: -1}
}

// First moves to the first entry.
func (s *sliceIter) First() bool {
	s.pos = 0
	return s.Valid()
}

// Last moves to the last entry.
func (s *sliceIter) Last() bool {
	s.pos = len(s.keys) - 1
	return s.Valid()
}

// SeekGE moves to the first entry with a user key >= key.
func (s *sliceIter) SeekGE(key []byte) bool {
	s.pos = s.search(key)
	return s.Valid()
}

// SeekLT moves to the last entry with a user key < key.
func (s *sliceIter) SeekLT(key []byte) bool {
	s.pos = s.search(key) - 1
	return s.Valid()
}

// search returns the index of the first entry with a user key >= key.
func (s *sliceIter) search(key []byte) int {
	return sort.Search(len(s.keys), func(i int) bool {
		return base.CompareUserKeys(s.keys[i].UserKey, key) >= 0
	})
}

// Next moves to the next entry. Next and Prev leave an iterator that is not
// on an entry where it is.
func (s *sliceIter) Next() bool {
	if !s.Valid() {
		return false
	}
	s.pos++
	return s.Valid()
}

// Prev moves to the previous entry.
func (s *sliceIter) Prev() bool {
	if !s.Valid() {
		return false
	}
	s.pos--
	return s.Valid()
}

// Valid reports whether the iterator is on an entry.
func (s *sliceIter) Valid() bool { return s.pos >= 0 && s.pos < len(s.keys) }

// Key returns the current key; the zero key when not Valid.
func (s *sliceIter) Key() base.InternalKey {
	if !s.Valid() {
		return base.InternalKey{}
	}
	return s.keys[s.pos]
}

// Value returns the current value; nil when not Valid.
func (s *sliceIter) Value() []byte {
	if !s.Valid() {
		return nil
	}
	return s.values[s.pos]
}

// Error returns nil: a slice iterator never fails.
func (s *sliceIter) Error() error { return nil }

// Close returns nil.
func (s *sliceIter) Close() error { return nil }
