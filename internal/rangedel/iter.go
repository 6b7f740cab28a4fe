package rangedel

import "github.com/shale-db/shale/internal/base"

// NewFilterIter wraps the iterator of one source of a read (a memtable, an
// L0 table, or a level) so that it yields only the entries no range
// tombstone deletes for a read at readSeq. newer are the key ranges of the
// tombstones of the sources newer than this one that the read sees (a
// Union of their Visible(readSeq) spans); own are this source's own
// tombstones.
//
// Every entry of an older source is older than every tombstone of a newer
// source whose range holds it: that is what the order of memtables, L0
// tables and levels means, and a table's bounds cover its tombstones so
// that compactions keep it so. So a newer tombstone deletes all of this
// source's entries in its range, and the iterator leaves that range with
// one seek to its end (or, backward, its start). The source's own
// tombstones delete only the entries older than themselves, which the
// iterator steps over one by one; a flush or compaction drops those
// entries (compaction.Iter), so they are rare.
//
// With neither kind of tombstone, NewFilterIter returns it unwrapped.
func NewFilterIter(it base.InternalIterator, newer, own Spans, readSeq base.SeqNum) base.InternalIterator {
	if len(newer) == 0 && len(own) == 0 {
		return it
	}
	return &filterIter{InternalIterator: it, newer: newer, own: own, seq: readSeq}
}

type filterIter struct {
	base.InternalIterator
	newer, own Spans
	seq        base.SeqNum
}

// forward moves forward from the entry the input is on (if ok) to the
// first one that is not deleted.
func (f *filterIter) forward(ok bool) bool {
	for ok {
		k := f.Key()
		if i := f.newer.Find(k.UserKey); i >= 0 {
			ok = f.InternalIterator.SeekGE(f.newer[i].End)
			continue
		}
		if f.own.Covers(k.UserKey, k.SeqNum(), f.seq) {
			ok = f.InternalIterator.Next()
			continue
		}
		return true
	}
	return false
}

// backward is forward's mirror.
func (f *filterIter) backward(ok bool) bool {
	for ok {
		k := f.Key()
		if i := f.newer.Find(k.UserKey); i >= 0 {
			ok = f.InternalIterator.SeekLT(f.newer[i].Start)
			continue
		}
		if f.own.Covers(k.UserKey, k.SeqNum(), f.seq) {
			ok = f.InternalIterator.Prev()
			continue
		}
		return true
	}
	return false
}

func (f *filterIter) First() bool            { return f.forward(f.InternalIterator.First()) }
func (f *filterIter) Last() bool             { return f.backward(f.InternalIterator.Last()) }
func (f *filterIter) SeekGE(key []byte) bool { return f.forward(f.InternalIterator.SeekGE(key)) }
func (f *filterIter) SeekLT(key []byte) bool { return f.backward(f.InternalIterator.SeekLT(key)) }
func (f *filterIter) Next() bool             { return f.forward(f.InternalIterator.Next()) }
func (f *filterIter) Prev() bool             { return f.backward(f.InternalIterator.Prev()) }
