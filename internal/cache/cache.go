// Package cache holds shale's in-memory caches of immutable table data: the
// block cache (uncompressed SSTable blocks keyed by file number and block
// offset, charged by block length) and the sharded LRU it is built on, which
// the row cache (sstable.RowCache) shares.
//
// An LRU is split into shards, each an independent LRU behind its own
// mutex, chosen by a hash of the key, so concurrent readers of different
// entries rarely wait for each other. Each shard holds an equal part of the
// capacity; an entry charged more than a shard's part is not cached. The
// shard count is a power of two, at most maxShards, and small caches get
// fewer shards so that every shard can hold at least minShardBytes
// (BenchmarkCacheParallel compares one shard with many).
//
// Every key names the table file it belongs to, so EvictFile drops a deleted
// table's entries at once. Cached values are immutable: neither the cache
// nor its callers modify a value once it has been Set, so a Get hands out
// the cached value itself.
package cache

import (
	"sync"
)

const (
	maxShards     = 16
	minShardBytes = 256 << 10
)

// LRU is a sharded least-recently-used cache of values of type V keyed by a
// table's file number and a key K within that table, safe for concurrent
// use. A nil *LRU is a valid cache that holds nothing: its methods do
// nothing, Get misses and Stats reports zeros, so callers need not check for
// "no cache".
type LRU[K comparable, V any] struct {
	shards []shard[K, V]
	mask   uint64
	hash   func(fileNum uint64, key K) uint64
	charge func(key K, value V) int64
}

// Cache is the block cache: blocks keyed by their offset in the file.
type Cache = LRU[uint64, []byte]

// shard is one LRU. files maps a file number to its cached entries by key,
// which makes EvictFile proportional to that file's entries. The list is
// circular through head: head.next is the most recently used entry.
type shard[K comparable, V any] struct {
	mu           sync.Mutex
	files        map[uint64]map[K]*entry[K, V]
	head         entry[K, V]
	size         int64
	capacity     int64
	hits, misses int64
	// pad keeps two shards' mutexes off one cache line.
	_ [64]byte
}

type entry[K comparable, V any] struct {
	fileNum    uint64
	key        K
	value      V
	charge     int64
	prev, next *entry[K, V]
}

// New returns a block cache that holds up to capacityBytes bytes of blocks.
// A capacity <= 0 gives a cache that never holds a block (it still counts
// misses).
func New(capacityBytes int) *Cache {
	return newSharded(capacityBytes, shardCount(capacityBytes))
}

// newSharded returns a block cache of n shards (a power of two).
func newSharded(capacityBytes, n int) *Cache {
	return newLRU(capacityBytes, n, hashOffset, func(_ uint64, block []byte) int64 { return int64(len(block)) })
}

// hashOffset mixes a block's file number and offset. Offsets are multiples
// of roughly the block size and file numbers are small, so both are mixed
// before the top bits are taken.
func hashOffset(fileNum, offset uint64) uint64 {
	return (fileNum*0x9e3779b97f4a7c15 ^ offset) * 0xbf58476d1ce4e5b9
}

// NewLRU returns a cache that holds values charged up to capacityBytes in
// total. hash spreads keys over the shards (its top 32 bits pick one);
// charge is what an entry costs against the capacity, and should count
// everything the entry keeps alive.
func NewLRU[K comparable, V any](capacityBytes int, hash func(fileNum uint64, key K) uint64, charge func(key K, value V) int64) *LRU[K, V] {
	return newLRU(capacityBytes, shardCount(capacityBytes), hash, charge)
}

// shardCount is the number of shards for a capacity: the most, up to
// maxShards, that still leaves each shard minShardBytes.
func shardCount(capacityBytes int) int {
	n := 1
	for n < maxShards && int64(capacityBytes)/int64(2*n) >= minShardBytes {
		n *= 2
	}
	return n
}

func newLRU[K comparable, V any](capacityBytes, n int, hash func(uint64, K) uint64, charge func(K, V) int64) *LRU[K, V] {
	c := &LRU[K, V]{shards: make([]shard[K, V], n), mask: uint64(n - 1), hash: hash, charge: charge}
	for i := range c.shards {
		s := &c.shards[i]
		s.files = map[uint64]map[K]*entry[K, V]{}
		s.head.prev, s.head.next = &s.head, &s.head
		s.capacity = int64(capacityBytes) / int64(n)
	}
	return c
}

func (c *LRU[K, V]) shard(fileNum uint64, key K) *shard[K, V] {
	return &c.shards[(c.hash(fileNum, key)>>32)&c.mask]
}

// Get returns the value cached for (fileNum, key) and marks it most
// recently used. The caller must not modify the returned value.
func (c *LRU[K, V]) Get(fileNum uint64, key K) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	s := c.shard(fileNum, key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.files[fileNum][key]
	if e == nil {
		s.misses++
		return zero, false
	}
	s.hits++
	s.unlink(e)
	s.pushFront(e)
	return e.value, true
}

// Set caches value for (fileNum, key), replacing any value cached there,
// and evicts least recently used entries until the shard fits its capacity.
// The cache keeps value itself: the caller must not modify it afterwards.
func (c *LRU[K, V]) Set(fileNum uint64, key K, value V) {
	if c == nil {
		return
	}
	s := c.shard(fileNum, key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.files[fileNum][key]; old != nil {
		s.remove(old)
	}
	charge := c.charge(key, value)
	if charge > s.capacity {
		return
	}
	e := &entry[K, V]{fileNum: fileNum, key: key, value: value, charge: charge}
	entries := s.files[fileNum]
	if entries == nil {
		entries = map[K]*entry[K, V]{}
		s.files[fileNum] = entries
	}
	entries[key] = e
	s.pushFront(e)
	s.size += charge
	for s.size > s.capacity {
		s.remove(s.head.prev)
	}
}

// EvictFile drops every entry of fileNum, for a table that was deleted (its
// file number will not come back, but its memory should not wait for LRU).
func (c *LRU[K, V]) EvictFile(fileNum uint64) {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, e := range s.files[fileNum] {
			s.unlink(e)
			s.size -= e.charge
		}
		delete(s.files, fileNum)
		s.mu.Unlock()
	}
}

// Stats returns how many Gets found their entry and how many did not.
func (c *LRU[K, V]) Stats() (hits, misses int64) {
	if c == nil {
		return 0, 0
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		hits += s.hits
		misses += s.misses
		s.mu.Unlock()
	}
	return hits, misses
}

// Size returns the bytes the cached entries are charged now.
func (c *LRU[K, V]) Size() int64 {
	if c == nil {
		return 0
	}
	var n int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.size
		s.mu.Unlock()
	}
	return n
}

// remove drops e from the shard entirely.
func (s *shard[K, V]) remove(e *entry[K, V]) {
	s.unlink(e)
	s.size -= e.charge
	entries := s.files[e.fileNum]
	delete(entries, e.key)
	if len(entries) == 0 {
		delete(s.files, e.fileNum)
	}
}

func (s *shard[K, V]) unlink(e *entry[K, V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (s *shard[K, V]) pushFront(e *entry[K, V]) {
	e.prev, e.next = &s.head, s.head.next
	e.prev.next, e.next.prev = e, e
}
