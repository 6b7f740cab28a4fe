package memtable

import "github.com/shale-db/shale/internal/base"

// NewIter returns an iterator over every entry: all versions of every user
// key, in internal-key order.
//
// The iterator is a live view, not a snapshot. Each positioning call sees
// every entry whose Add returned before the call began, and may also see
// entries being added meanwhile; a caller that needs a point-in-time view
// skips entries above its sequence number. Next is O(1); Prev and Last
// search from the top of the list, O(log n), since nodes have no back links.
//
// Key and Value alias the memtable's memory, which never changes, so they
// stay valid after the iterator moves, until the memtable's Free; callers
// must not modify them. The iterator must not be used after Free either.
func (m *MemTable) NewIter() base.InternalIterator {
	return &iterator{m: m}
}

// iterator walks a MemTable. n is the current node, nil when not positioned.
type iterator struct {
	m *MemTable
	n *node
}

// searchAll is a trailer larger than any real key's, so a search for
// (ukey, searchAll) lands before every version of ukey.
const searchAll = ^uint64(0)

// setUnlessHead positions the iterator on n, or nowhere if n is the head.
func (it *iterator) setUnlessHead(n *node) bool {
	if n == &it.m.head {
		n = nil
	}
	it.n = n
	return n != nil
}

func (it *iterator) First() bool {
	it.n = it.m.head.low[0].Load()
	return it.n != nil
}

func (it *iterator) Last() bool { return it.setUnlessHead(it.m.findLast()) }

func (it *iterator) SeekGE(key []byte) bool {
	_, it.n = it.m.find(key, searchAll, nil)
	return it.n != nil
}

func (it *iterator) SeekLT(key []byte) bool {
	lt, _ := it.m.find(key, searchAll, nil)
	return it.setUnlessHead(lt)
}

func (it *iterator) Next() bool {
	if it.n != nil {
		it.n = it.n.low[0].Load()
	}
	return it.n != nil
}

func (it *iterator) Prev() bool {
	if it.n == nil {
		return false
	}
	lt, _ := it.m.find(it.n.key(), it.n.trailer, nil)
	return it.setUnlessHead(lt)
}

func (it *iterator) Valid() bool { return it.n != nil }

// Key returns the current key, or the zero key when not positioned.
func (it *iterator) Key() base.InternalKey {
	if it.n == nil {
		return base.InternalKey{}
	}
	return base.InternalKey{UserKey: it.n.key(), Trailer: it.n.trailer}
}

// Value returns the current value, or nil when not positioned.
func (it *iterator) Value() []byte {
	if it.n == nil {
		return nil
	}
	return it.n.value()
}

// Error returns nil: a memtable has nothing that can fail.
func (it *iterator) Error() error { return nil }

// Close unpositions the iterator. It returns nil.
func (it *iterator) Close() error {
	it.n = nil
	return nil
}
