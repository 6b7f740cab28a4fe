// Package memtable holds a DB's most recent writes in memory, sorted by
// internal key, until they are flushed to an SSTable.
//
// A MemTable is a skiplist. One goroutine at a time adds entries (the DB
// serialises writes); any number of goroutines read and iterate at the same
// time without locks. The writer builds a node completely, then links it in
// with atomic stores, bottom level first; readers follow links with atomic
// loads, so a reader that reaches a node sees it whole, and a node it finds
// at some level is also in every level below.
//
// # Memory
//
// Entries never move and are never freed before the whole memtable is, so
// memory comes from slabs (see slab) rather than one allocation per entry:
// key and value bytes from byte slabs, nodes from node slabs, and the tall
// part of the rare tall tower from link slabs. An Add allocates nothing
// except, now and then, a new slab.
//
// Every slab lives outside the Go heap (package manual), so that a memtable
// costs its size once: on the heap, the collector's headroom (GOGC=100)
// doubles every live byte. For 16-byte keys and 100-byte values an entry
// takes 116 bytes of byte slab, a 96-byte node and on average 2/3 of a byte
// of link slab, so the nodes are 45% of the memory and go outside the heap
// with the bytes. Free returns all of it, and must be called exactly once,
// when nothing reads the memtable any more: not a Get, not an iterator, not
// a caller still holding a key or value it returned. A use after Free
// faults and kills the process, or, once a Recycler has handed the slabs
// to a new memtable, reads that memtable's entries.
//
// Nodes are Go structs linked by atomic.Pointer, cast from slab bytes.
// The collector neither scans nor keeps alive what manual memory points
// to, so the rule that makes this safe is: every pointer inside a node
// points into the same memtable's slabs (links to other nodes, kv into a
// byte slab, high into a link slab) or is nil; nothing in a slab points
// into the Go heap. Add keeps it by taking every run it stores in a node
// from a slab, large entries included (they get a slab buffer of their
// own). The head is the one node on the heap, inside the MemTable, and
// nothing points to it. Range tombstones are not in slabs (see below).
// Pointers rather than offsets keep the code plain (offsets would need
// atomic loads from a []byte and a chunk directory readers also load).
// The race detector does not watch memory outside the heap; the concurrent
// tests check the writer's build-then-publish order by what readers see.
//
// A search is bound by cache misses, so a node is laid out for it to touch
// one cache line per step: the links of the two lowest levels (all of the
// tower for 15 nodes in 16) are inside the node, and the first 16 bytes of
// the user key are copied into it, which decides most comparisons without
// reading the key bytes in their slab. With a separate tower and no prefix,
// each step took three misses, and BenchmarkGet and BenchmarkAdd/random took
// two to two and a half times as long.
//
// # Range tombstones
//
// Range tombstones (Add with base.KindRangeDelete) are not skiplist nodes:
// they are kept apart, in a list, and fragmented (rangedel.Fragment) when a
// reader first asks for them after a change. Iterators yield point entries
// only; Get applies the tombstones; RangeDels returns them for flushes and
// the DB's iterators. A memtable rarely holds more than a few tombstones,
// and re-fragmenting all of them at the first read after each new one is
// cheap at that size. Their bytes are on the heap, so that spans handed out
// by RangeDels, which the DB clips, merges and passes on, never alias memory
// that Free returns.
//
// Size reports what the entries occupy: their key and value bytes plus each
// node and its tower. It does not count the unused tail of the current slabs
// (at most one slab of each kind, a few MiB at worst) or the rounding of
// slabs to whole pages, so the memory a memtable holds outside the heap is
// slightly more than Size.
package memtable

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/rangedel"
)

// lowLinks is how many levels of a node's tower live in the node itself.
// A node has more with probability 1/16. (1 and 4 measured the same as 2.)
const lowLinks = 2

// maxHeight bounds a node's tower. With a 1/4 chance of each extra level,
// 16 levels keep searches logarithmic up to about 4^16 (4 billion) entries.
const maxHeight = 16

// nodeOverhead is what Size charges for a node besides its key, value and
// the links it keeps outside itself.
const nodeOverhead = int(unsafe.Sizeof(node{}))

// linkSize is what Size charges per link kept outside the node.
const linkSize = int(unsafe.Sizeof(atomic.Pointer[node]{}))

// node is one entry. All fields are written before the node is linked in and
// never change after, except the links.
//
// What a search step reads, the prefix and the low links, comes first: 32
// bytes that never straddle a cache line, since a node is 96 bytes and
// slabs are allocated aligned.
type node struct {
	prefix  [2]uint64                      // keyPrefix(key()), so most comparisons need not read kv
	low     [lowLinks]atomic.Pointer[node] // links at levels below lowLinks
	trailer uint64                         // seqnum<<8 | kind
	kv      []byte                         // the user key followed by the value, in a byte slab
	keyLen  int
	high    []atomic.Pointer[node] // links at levels lowLinks and up, from a slab
}

// link returns the node's link to the next node at level l.
func (n *node) link(l int) *atomic.Pointer[node] {
	if l < lowLinks {
		return &n.low[l]
	}
	return &n.high[l-lowLinks]
}

func (n *node) key() []byte   { return n.kv[:n.keyLen:n.keyLen] }
func (n *node) value() []byte { return n.kv[n.keyLen:] }

// less reports whether n sorts before the internal key (ukey, trailer);
// prefix is keyPrefix(ukey). The prefixes decide unless they are equal;
// then, if neither key is longer than the prefix, the shorter key is the
// smaller (the longer one only adds zero bytes), so the key bytes are read
// only for longer keys that share their first 16 bytes.
func (n *node) less(ukey []byte, prefix [2]uint64, trailer uint64) bool {
	if n.prefix[0] != prefix[0] {
		return n.prefix[0] < prefix[0]
	}
	if n.prefix[1] != prefix[1] {
		return n.prefix[1] < prefix[1]
	}
	var c int
	if n.keyLen <= prefixLen && len(ukey) <= prefixLen {
		c = cmp.Compare(n.keyLen, len(ukey))
	} else {
		c = bytes.Compare(n.key(), ukey)
	}
	return c < 0 || c == 0 && n.trailer > trailer
}

// prefixLen is how many leading key bytes a node holds in its prefix.
const prefixLen = 16

// keyPrefix returns the first 16 bytes of ukey as two big-endian numbers,
// padded with zeros. Keys with different prefixes compare as their
// prefixes do (a zero pad byte is never above the byte it stands in for),
// so a search that compares prefixes first reads only the node, not the key
// bytes in another slab, until it nears its target. Two words rather than
// one, because keys often share their first 8 bytes (a table name, a
// zero-padded counter's leading zeros): with one word those keys defeated
// the prefix, and a fill spent 8.5% of its CPU comparing key bytes (as
// measured in issue 10).
func keyPrefix(ukey []byte) [2]uint64 {
	if len(ukey) < prefixLen {
		var b [prefixLen]byte
		copy(b[:], ukey)
		ukey = b[:]
	}
	return [2]uint64{binary.BigEndian.Uint64(ukey), binary.BigEndian.Uint64(ukey[8:])}
}

// MemTable is a sorted, in-memory set of internal keys and their values.
// Add must not be called concurrently with itself; every other method may be
// called from any goroutine at any time, including during an Add.
type MemTable struct {
	head     node // sentinel before the first entry; only its links are used
	headHigh [maxHeight - lowLinks]atomic.Pointer[node]
	height   atomic.Int32 // levels in use: the head's links at and above height are nil
	count    atomic.Int64
	size     atomic.Int64

	// tombstones are the range tombstones added, in the order added;
	// fragmented caches their fragmentation, nil after a change until a
	// reader asks (see RangeDels).
	tombMu     sync.Mutex
	tombstones []rangedel.Tombstone
	fragmented atomic.Pointer[rangedel.Spans]

	// keys holds the user keys added, if NewFiltered made it (nil
	// otherwise): the writer adds to it, readers probe it (MayContain).
	keys *bloom.Concurrent

	// Used only by the writer.
	rng   rand.PCG // picks tower heights; seeded the same in every memtable so runs repeat
	bytes slab[byte]
	nodes slab[node]
	highs slab[atomic.Pointer[node]]
}

// New returns an empty memtable.
func New() *MemTable {
	m := &MemTable{}
	m.head.high = m.headHigh[:]
	m.height.Store(1)
	return m
}

// NewFiltered returns an empty memtable that keeps a Bloom filter of its
// user keys, so that Get skips the search for a key never added: a search
// costs a cache miss per level of the skiplist, a probe about one. The
// filter is sized for a memtable of capacity bytes (Size): 10 bits for
// every 64 bytes (80 KiB for 4 MiB), so at least 15 bits per entry, since
// an entry takes at least a node's 96 bytes, and about 33 with 16-byte keys
// and 100-byte values. With its 6 probes it says "maybe" of a key never
// added about once in a thousand lookups at 15 bits per entry, and once in
// tens of thousands at 33; a memtable that outgrows its capacity only sees
// that rate rise.
//
// Its slabs come from r, and go back to r when it is freed, when r is not
// nil (see Recycler).
func NewFiltered(capacity int, r *Recycler) *MemTable {
	m := New()
	m.keys = bloom.NewConcurrent(capacity/keyFilterBytesPerKey, 10)
	m.bytes.recycler, m.nodes.recycler, m.highs.recycler = r, r, r
	return m
}

// keyFilterBytesPerKey is the memtable bytes (Size) NewFiltered's filter
// counts per key.
const keyFilterBytesPerKey = 64

// Add inserts an entry for ukey written at seq with kind, copying ukey and
// value. The same (ukey, seq, kind) must not be added twice. Add never
// fails: the caller rotates to a new memtable once Size is large enough.
//
// With kind base.KindRangeDelete, Add records a range tombstone deleting
// [ukey, value), which must not be empty.
func (m *MemTable) Add(seq base.SeqNum, kind base.Kind, ukey, value []byte) {
	if kind == base.KindRangeDelete {
		m.addRangeDel(seq, ukey, value)
		return
	}
	if m.keys != nil {
		m.keys.Add(ukey) // before the node is linked, so no reader finds it unfiltered
	}
	trailer := base.MakeTrailer(seq, kind)
	listHeight := int(m.height.Load())
	var prev [maxHeight]*node
	m.find(ukey, trailer, &prev)
	h := m.randomHeight()
	for l := listHeight; l < h; l++ {
		prev[l] = &m.head
	}

	kv := m.bytes.alloc(len(ukey) + len(value))
	copy(kv, ukey)
	copy(kv[len(ukey):], value)
	n := &m.nodes.alloc(1)[0]
	n.kv, n.keyLen, n.prefix, n.trailer = kv, len(ukey), keyPrefix(ukey), trailer
	n.high = m.highs.alloc(max(0, h-lowLinks))
	for l := range h {
		n.link(l).Store(prev[l].link(l).Load())
	}

	if h > listHeight {
		m.height.Store(int32(h))
	}
	for l := range h {
		prev[l].link(l).Store(n)
	}
	m.count.Add(1)
	m.size.Add(int64(len(kv) + nodeOverhead + len(n.high)*linkSize))
}

func (m *MemTable) addRangeDel(seq base.SeqNum, start, end []byte) {
	kv := make([]byte, len(start)+len(end)) // on the heap: see the package comment
	copy(kv, start)
	copy(kv[len(start):], end)
	t := rangedel.Tombstone{Start: kv[:len(start):len(start)], End: kv[len(start):], Seq: seq}
	m.tombMu.Lock()
	m.tombstones = append(m.tombstones, t)
	m.fragmented.Store(nil)
	m.tombMu.Unlock()
	m.count.Add(1)
	m.size.Add(int64(len(kv) + int(unsafe.Sizeof(t))))
}

// RangeDels returns the range tombstones added so far, fragmented. The
// caller must not modify them.
func (m *MemTable) RangeDels() rangedel.Spans {
	if p := m.fragmented.Load(); p != nil {
		return *p
	}
	m.tombMu.Lock()
	defer m.tombMu.Unlock()
	if p := m.fragmented.Load(); p != nil {
		return *p
	}
	s := rangedel.Fragment(m.tombstones)
	m.fragmented.Store(&s)
	return s
}

// randomHeight returns 1 with probability 3/4, 2 with probability 3/16, and
// so on: each level above the first holds about a quarter of the one below.
func (m *MemTable) randomHeight() int {
	return min(1+bits.TrailingZeros64(m.rng.Uint64())/2, maxHeight)
}

// find returns lt, the last node that sorts before (ukey, trailer), or
// &m.head if none does, and ge, the node that followed lt when find looked
// (nil at the end). Callers must use this ge rather than load lt's link
// again: a node added in between could sort before (ukey, trailer).
//
// If prev is not nil, find also records the last node before (ukey, trailer)
// at every level in use, which is where Add links a new node.
func (m *MemTable) find(ukey []byte, trailer uint64, prev *[maxHeight]*node) (lt, ge *node) {
	prefix := keyPrefix(ukey)
	lt = &m.head
	for l := int(m.height.Load()) - 1; l >= 0; l-- {
		for {
			ge = lt.link(l).Load()
			if ge == nil || !ge.less(ukey, prefix, trailer) {
				break
			}
			lt = ge
		}
		if prev != nil {
			prev[l] = lt
		}
	}
	return lt, ge
}

// findLast returns the last node, or &m.head if the memtable is empty.
func (m *MemTable) findLast() *node {
	x := &m.head
	for l := int(m.height.Load()) - 1; l >= 0; l-- {
		for next := x.link(l).Load(); next != nil; next = x.link(l).Load() {
			x = next
		}
	}
	return x
}

// Get returns the newest entry for ukey with a sequence number <= seq: its
// value and kind, and ok true; ok is false when there is none. A KindDelete
// entry is returned like any other; the caller decides what it means. When
// a range tombstone the read sees deletes that entry (or there is no entry
// and a tombstone covers ukey), Get returns kind base.KindRangeDelete, no
// value, and ok true. The value aliases the memtable's memory, which never
// changes once written and stays valid until Free; the caller must not
// modify it.
func (m *MemTable) Get(ukey []byte, seq base.SeqNum) (value []byte, kind base.Kind, ok bool) {
	cover := m.RangeDels().CoverSeq(ukey, seq)
	var n *node
	if m.MayContain(ukey) {
		_, n = m.find(ukey, base.MakeTrailer(min(seq, base.MaxSeqNum), base.KindMax), nil)
	}
	if n != nil && bytes.Equal(n.key(), ukey) && base.SeqNum(n.trailer>>8) > cover {
		return n.value(), base.Kind(n.trailer & 0xff), true
	}
	if cover > 0 {
		return nil, base.KindRangeDelete, true
	}
	return nil, 0, false
}

// MayContain reports false if ukey was never added (as a point entry: range
// tombstones are not in the filter), as the memtable's key filter tells
// without a search; always true without a filter (New).
func (m *MemTable) MayContain(ukey []byte) bool { return m.keys == nil || m.keys.MayContain(ukey) }

// Len returns the number of entries, range tombstones included.
func (m *MemTable) Len() int { return int(m.count.Load()) }

// Empty reports whether the memtable has no entries.
func (m *MemTable) Empty() bool { return m.Len() == 0 }

// Free returns the memtable's slabs to its Recycler (NewFiltered), which
// frees those it does not keep, or to the kernel. It must be called once,
// after the last read of the memtable and of every key and value it
// returned; touching any of them afterwards faults, or reads the entries
// of a memtable that reused the slabs. Range tombstones from
// RangeDels stay valid: they are on the heap.
func (m *MemTable) Free() {
	m.bytes.free()
	m.nodes.free()
	m.highs.free()
}

// FilterBytes returns the bytes the key filter takes (NewFiltered), on the
// Go heap; Size does not count them.
func (m *MemTable) FilterBytes() int {
	if m.keys == nil {
		return 0
	}
	return m.keys.Bytes()
}

// Size returns the bytes the entries occupy: keys, values and per-entry
// overhead (see the package comment). The DB rotates to a new memtable when
// Size reaches its MemTableSize.
func (m *MemTable) Size() int { return int(m.size.Load()) }
