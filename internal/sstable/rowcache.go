package sstable

import (
	"hash/maphash"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/cache"
)

// RowCache caches, per table and user key, what Reader.Get found in that
// table: a value, a deletion, or nothing. A table never changes once
// written, so an entry stays true for as long as its file number names that
// table; the owner evicts a table's entries (EvictFile) when the table is
// deleted. This is RocksDB's row cache; a cache of the store's newest value
// per key would need invalidation on every write, and a read could refill
// it with a value a concurrent write had just replaced.
//
// Only reads that see every entry of the table use it: a Get at a sequence
// number below the table's largest one (a read at an old snapshot) bypasses
// the row cache, since its answer may differ from the latest. RocksDB keys
// such reads by their sequence number instead; entries only reads at that
// exact sequence number can hit would mostly crowd out the shared ones.
type RowCache = cache.LRU[string, row]

// row is one cached answer of Reader.Get.
type row struct {
	value []byte
	kind  base.Kind
	found bool
	held  bool // the table holds some version of the key (see Reader.find)
}

// rowOverhead is what a cached row costs besides its key and value bytes:
// the LRU entry (80 bytes), its slot in the table's map, and the rounding of
// the key's and value's allocations to the allocator's size classes.
const rowOverhead = 128

var rowSeed = maphash.MakeSeed()

// NewRowCache returns a row cache that holds up to capacityBytes bytes of
// rows, each charged its key, its value and rowOverhead.
func NewRowCache(capacityBytes int) *RowCache {
	return cache.NewLRU(capacityBytes,
		func(fileNum uint64, key string) uint64 {
			return maphash.String(rowSeed, key) ^ fileNum*0x9e3779b97f4a7c15
		},
		func(key string, r row) int64 { return int64(len(key)+len(r.value)) + rowOverhead })
}
