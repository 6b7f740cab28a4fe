package sstable

import (
	"github.com/shale-db/shale/internal/base"
)

// tableIter is the two-level iterator over a table: an iterator over the
// in-memory index block picks data blocks, and an iterator over the current
// data block walks its entries. It implements base.InternalIterator.
//
// Next and Prev move from a valid position only: once the iterator has run
// off either end it stays invalid until it is positioned again.
type tableIter struct {
	r            *Reader
	lower, upper []byte
	trace        *GetTrace // where Get or TraceIter records the blocks read; nil: nowhere
	// scan, when not nil, serves the data blocks instead of the cache
	// (NewScanIter).
	scan *scanReader
	// ahead reads the file ahead of the steps from block to block.
	ahead readahead

	index blockIter
	data  blockIter
	// dataOff is the offset of the block data holds, when dataLoaded.
	dataOff    uint64
	dataLoaded bool

	key   base.InternalKey // the current key, aliasing data's buffer
	valid bool
	err   error
}

var _ base.InternalIterator = (*tableIter)(nil)

// resetIndex readies the index iterator for a new positioning and leaves
// the iterator unpositioned (the loaded data block stays loaded). The
// readahead gives its buffer back: an iterator holds one only while it
// walks from block to block.
func (i *tableIter) resetIndex() bool {
	i.valid, i.data.valid = false, false
	i.ahead.release()
	if i.err != nil {
		return false
	}
	if err := i.index.init(i.r.name, i.r.indexOffset, i.r.index); err != nil {
		i.err = err
		return false
	}
	return true
}

// loadBlock loads the data block the index iterator is on, unless it is
// loaded already. step says how the index iterator got there: 0 by a
// seek (or First or Last), +1 or -1 by a step from the block before or
// after it, in which case a block the cache does not hold comes through
// the readahead.
func (i *tableIter) loadBlock(step int) bool {
	h, n := decodeHandle(i.index.val)
	if n == 0 || n != len(i.index.val) {
		i.err = i.index.corrupt("bad block handle in index entry at block offset %d", i.index.offset)
		return false
	}
	if i.dataLoaded && h.offset == i.dataOff {
		return true
	}
	i.dataLoaded = false
	var b []byte
	var err error
	if i.scan != nil {
		b, err = i.scan.block(h)
	} else {
		var ra *readahead
		if step != 0 {
			ra = &i.ahead
			ra.forward = step > 0
		}
		b, err = i.r.dataBlock(h, i.trace, ra)
	}
	if err == nil {
		err = i.data.init(i.r.name, int64(h.offset), b)
	}
	if err != nil {
		i.err = err
		return false
	}
	i.dataOff, i.dataLoaded = h.offset, true
	return true
}

// forward skips empty blocks forward until data is on an entry, then checks
// the upper bound and makes that entry current.
func (i *tableIter) forward() bool {
	i.valid = false
	for !i.data.valid {
		if i.data.err != nil || i.index.err != nil || !i.index.valid {
			return i.settle()
		}
		// Every key of the next block is above this block's separator, so
		// when the separator's user key is past upper, so is the block.
		if i.upper != nil {
			sep, ok := i.index.internalKey()
			if !ok {
				return i.settle()
			}
			if base.CompareUserKeys(sep.UserKey, i.upper) >= 0 {
				return false
			}
		}
		if !i.index.Next() {
			if i.scan != nil && i.index.err == nil {
				i.scan.release()
				i.data, i.dataLoaded = blockIter{key: i.data.key[:0]}, false
			}
			return i.settle()
		}
		if !i.loadBlock(+1) {
			return false
		}
		i.data.First()
	}
	if !i.settle() {
		return false
	}
	if i.upper != nil && base.CompareUserKeys(i.key.UserKey, i.upper) >= 0 {
		i.valid = false
	}
	return i.valid
}

// backward skips empty blocks backward until data is on an entry, then
// checks the lower bound and makes that entry current.
func (i *tableIter) backward() bool {
	i.valid = false
	for !i.data.valid {
		if i.data.err != nil || i.index.err != nil || !i.index.Prev() {
			return i.settle()
		}
		if !i.loadBlock(-1) {
			return false
		}
		i.data.Last()
	}
	if !i.settle() {
		return false
	}
	if i.lower != nil && base.CompareUserKeys(i.key.UserKey, i.lower) < 0 {
		i.valid = false
	}
	return i.valid
}

// settle takes up the block iterators' errors and decodes the current key.
func (i *tableIter) settle() bool {
	i.valid = false
	if i.err == nil {
		i.err = i.index.err
	}
	if i.err == nil {
		i.err = i.data.err
	}
	if i.err != nil || !i.data.valid {
		return false
	}
	k, ok := i.data.internalKey()
	if !ok {
		i.err = i.data.err
		return false
	}
	i.key, i.valid = k, true
	return true
}

// seekBlock positions the index on the first block whose separator is >= k
// and data on the first entry >= k in that block, if there is one.
func (i *tableIter) seekBlock(k base.InternalKey) {
	if i.resetIndex() && i.index.SeekGE(k) && i.loadBlock(0) {
		i.data.SeekGE(k)
	}
}

// seekGE moves to the first entry >= k.
func (i *tableIter) seekGE(k base.InternalKey) bool {
	i.seekBlock(k)
	return i.forward()
}

// SeekGE moves to the newest entry of the first user key >= key (and >= the
// lower bound).
func (i *tableIter) SeekGE(key []byte) bool {
	if i.lower != nil && base.CompareUserKeys(key, i.lower) < 0 {
		key = i.lower
	}
	return i.seekGE(base.MakeSearchKey(key, base.MaxSeqNum))
}

// SeekLT moves to the oldest entry of the last user key < key (and < the
// upper bound): just before where SeekGE(key) would land.
func (i *tableIter) SeekLT(key []byte) bool {
	if i.upper != nil && base.CompareUserKeys(key, i.upper) > 0 {
		key = i.upper
	}
	if !i.resetIndex() {
		return false
	}
	k := base.MakeSearchKey(key, base.MaxSeqNum)
	if !i.index.SeekGE(k) {
		if i.index.err != nil {
			return i.settle()
		}
		// Every entry is < k.
		return i.last()
	}
	if !i.loadBlock(0) {
		return false
	}
	if i.data.SeekGE(k) {
		i.data.Prev()
	} else if i.data.err == nil {
		i.data.Last()
	}
	return i.backward()
}

// First moves to the first entry (at or above the lower bound).
func (i *tableIter) First() bool {
	if i.lower != nil {
		return i.SeekGE(i.lower)
	}
	if !i.resetIndex() {
		return false
	}
	if !i.index.First() {
		return i.settle()
	}
	if !i.loadBlock(0) {
		return false
	}
	i.data.First()
	return i.forward()
}

// Last moves to the last entry (below the upper bound).
func (i *tableIter) Last() bool {
	if i.upper != nil {
		return i.SeekLT(i.upper)
	}
	return i.last()
}

// last moves to the last entry, ignoring the upper bound.
func (i *tableIter) last() bool {
	if !i.resetIndex() {
		return false
	}
	if !i.index.Last() {
		return i.settle()
	}
	if !i.loadBlock(0) {
		return false
	}
	i.data.Last()
	return i.backward()
}

// Next moves to the next entry.
func (i *tableIter) Next() bool {
	if !i.valid {
		return false
	}
	i.data.Next()
	return i.forward()
}

// Prev moves to the previous entry.
func (i *tableIter) Prev() bool {
	if !i.valid {
		return false
	}
	i.data.Prev()
	return i.backward()
}

// Valid reports whether the iterator is on an entry.
func (i *tableIter) Valid() bool { return i.valid }

// Key returns the current key; it is valid until the next move.
func (i *tableIter) Key() base.InternalKey { return i.key }

// Value returns the current value. It aliases an immutable block, so unlike
// Key it stays valid after the iterator moves, except in a scan
// (NewScanIter), which reuses its buffers; callers must not modify it.
func (i *tableIter) Value() []byte { return i.data.val }

// Error returns the error that made the iterator invalid, if any.
func (i *tableIter) Error() error { return i.err }

// Close releases the readahead's buffer and returns Error.
func (i *tableIter) Close() error {
	i.ahead.release()
	return i.err
}
