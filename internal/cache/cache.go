// Package cache is shale's block cache: an LRU of uncompressed SSTable
// blocks, keyed by (file number, block offset) and charged by block length.
//
// The cache is split into shards, each an independent LRU behind its own
// mutex, chosen by a hash of the key, so concurrent readers of different
// blocks rarely wait for each other. Each shard holds an equal part of the
// capacity; a block larger than a shard's part is not cached. The shard count
// is a power of two, at most maxShards, and small caches get fewer shards so
// that every shard can hold at least minShardBytes (BenchmarkCacheParallel
// compares one shard with many).
//
// Cached blocks are immutable: neither the cache nor its callers modify a
// slice once it has been Set, so a Get hands out the cached slice itself.
package cache

import (
	"sync"
)

const (
	maxShards     = 16
	minShardBytes = 256 << 10
)

// Cache is a sharded LRU block cache, safe for concurrent use. A nil *Cache
// is a valid cache that holds nothing: its methods do nothing, Get misses and
// Stats reports zeros, so callers need not check for "no cache".
type Cache struct {
	shards []shard
	mask   uint64
}

// shard is one LRU. files maps a file number to its cached blocks by offset,
// which makes EvictFile proportional to that file's blocks. The list is
// circular through head: head.next is the most recently used entry.
type shard struct {
	mu           sync.Mutex
	files        map[uint64]map[uint64]*entry
	head         entry
	size         int64
	capacity     int64
	hits, misses int64
	// pad keeps two shards' mutexes off one cache line.
	_ [64]byte
}

type entry struct {
	fileNum, offset uint64
	block           []byte
	prev, next      *entry
}

// New returns a cache that holds up to capacityBytes bytes of blocks. A
// capacity <= 0 gives a cache that never holds a block (it still counts
// misses).
func New(capacityBytes int) *Cache {
	n := 1
	for n < maxShards && int64(capacityBytes)/int64(2*n) >= minShardBytes {
		n *= 2
	}
	return newSharded(capacityBytes, n)
}

// newSharded returns a cache of n shards (a power of two).
func newSharded(capacityBytes, n int) *Cache {
	c := &Cache{shards: make([]shard, n), mask: uint64(n - 1)}
	for i := range c.shards {
		s := &c.shards[i]
		s.files = map[uint64]map[uint64]*entry{}
		s.head.prev, s.head.next = &s.head, &s.head
		s.capacity = int64(capacityBytes) / int64(n)
	}
	return c
}

// shard picks the shard of a key. Offsets are multiples of roughly the block
// size and file numbers are small, so both are mixed before the top bits are
// taken.
func (c *Cache) shard(fileNum, offset uint64) *shard {
	h := (fileNum*0x9e3779b97f4a7c15 ^ offset) * 0xbf58476d1ce4e5b9
	return &c.shards[(h>>32)&c.mask]
}

// Get returns the block cached for (fileNum, offset) and marks it most
// recently used. The caller must not modify the returned slice.
func (c *Cache) Get(fileNum, offset uint64) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	s := c.shard(fileNum, offset)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.files[fileNum][offset]
	if e == nil {
		s.misses++
		return nil, false
	}
	s.hits++
	s.unlink(e)
	s.pushFront(e)
	return e.block, true
}

// Set caches block for (fileNum, offset), replacing any block cached there,
// and evicts least recently used blocks until the shard fits its capacity.
// The cache keeps block itself: the caller must not modify it afterwards.
func (c *Cache) Set(fileNum, offset uint64, block []byte) {
	if c == nil {
		return
	}
	s := c.shard(fileNum, offset)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.files[fileNum][offset]; old != nil {
		s.remove(old)
	}
	if int64(len(block)) > s.capacity {
		return
	}
	e := &entry{fileNum: fileNum, offset: offset, block: block}
	blocks := s.files[fileNum]
	if blocks == nil {
		blocks = map[uint64]*entry{}
		s.files[fileNum] = blocks
	}
	blocks[offset] = e
	s.pushFront(e)
	s.size += int64(len(block))
	for s.size > s.capacity {
		s.remove(s.head.prev)
	}
}

// EvictFile drops every block of fileNum, for a table that was deleted (its
// file number will not come back, but its memory should not wait for LRU).
func (c *Cache) EvictFile(fileNum uint64) {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, e := range s.files[fileNum] {
			s.unlink(e)
			s.size -= int64(len(e.block))
		}
		delete(s.files, fileNum)
		s.mu.Unlock()
	}
}

// Stats returns how many Gets found their block and how many did not.
func (c *Cache) Stats() (hits, misses int64) {
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

// Size returns the bytes of blocks the cache holds now.
func (c *Cache) Size() int64 {
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
func (s *shard) remove(e *entry) {
	s.unlink(e)
	s.size -= int64(len(e.block))
	blocks := s.files[e.fileNum]
	delete(blocks, e.offset)
	if len(blocks) == 0 {
		delete(s.files, e.fileNum)
	}
}

func (s *shard) unlink(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (s *shard) pushFront(e *entry) {
	e.prev, e.next = &s.head, s.head.next
	e.prev.next, e.next.prev = e, e
}
