package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
	pebblebloom "github.com/cockroachdb/pebble/v2/bloom"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/internal/manual"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// The configuration every engine gets.
const (
	blockSize      = 4 << 10
	blockCacheSize = 8 << 20
	memTableSize   = 4 << 20
	targetFileSize = 2 << 20
	bitsPerKey     = 10
	// pebbleCacheSize is Pebble's cache: Pebble charges its memtables (the
	// mutable one and the flushed one it keeps, 4 MiB each) to its block
	// cache, so 16 MiB leaves it about the 8 MiB of blocks the others get.
	pebbleCacheSize = blockCacheSize + 2*memTableSize
)

// store is one open engine, seen through the operations the workloads use.
type store struct {
	// put writes one key without fsync; safe for concurrent use.
	put func(key, value []byte) error
	// newReader returns a lookup for one goroutine: it reports whether key
	// is present, and done releases what the lookup holds.
	newReader func() (get func(key []byte) (bool, error), done func() error)
	// levelWrites returns the bytes of tables written into each level since
	// the store was opened: by flushes into L0, by compactions below (moves
	// that rewrite nothing are not counted). nil if the engine does not say.
	levelWrites func() []int64
	// mappedWrites returns the bytes the store has written through shared
	// memory mappings since it was opened, which /proc/self/io's wchar
	// does not count (shale's WAL; see shale.Options.DisableWALMapping);
	// nil if the engine writes none.
	mappedWrites func() int64
	// memory returns what the store says it holds, for the memory trace
	// (-memtrace); nil if the engine does not say.
	memory func() engineMemory
	close  func() error
}

// engines are the stores the runner knows, by name. pebble-filters is the
// same Pebble store read through an iterator with UseL6Filters, the only way
// Pebble consults the filters of its bottom level; its writes are Pebble's.
// shale-ribbon and shale-monkey are shale with the same memory for filters
// (bitsPerKey per key on average) spent otherwise: Ribbon filters in every
// table, or Bloom filters sized per level by Monkey's rule; they are not in
// the default list, and show what the filter choice does to readmissing.
var engines = map[string]func(dir string) (*store, error){
	"shale": func(dir string) (*store, error) { return openShale(dir, nil) },
	"shale-ribbon": func(dir string) (*store, error) {
		return openShale(dir, shale.UniformFilter(shale.RibbonFilter(bitsPerKey)))
	},
	"shale-monkey":   func(dir string) (*store, error) { return openShale(dir, shale.MonkeyBloom(bitsPerKey)) },
	"pebble":         func(dir string) (*store, error) { return openPebble(dir, false) },
	"pebble-filters": func(dir string) (*store, error) { return openPebble(dir, true) },
	"goleveldb":      openGoleveldb,
}

// openShale opens shale with the common configuration; filters, when not
// nil, replaces its default Bloom filters of bitsPerKey.
func openShale(dir string, filters shale.FilterPolicy) (*store, error) {
	db, err := shale.Open(dir, &shale.Options{
		MemTableSize:    memTableSize,
		BloomBitsPerKey: bitsPerKey,
		FilterPolicy:    filters,
		BlockCacheSize:  blockCacheSize,
		BlockSize:       blockSize,
		TargetFileSize:  targetFileSize,
		NoSync:          true,
	})
	if err != nil {
		return nil, err
	}
	get := func(key []byte) (bool, error) {
		_, err := db.Get(key)
		if errors.Is(err, shale.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	levelWrites := func() []int64 {
		var w []int64
		for _, l := range db.Metrics().Levels {
			w = append(w, l.BytesWritten)
		}
		return w
	}
	return &store{
		put:          db.Put,
		newReader:    func() (func([]byte) (bool, error), func() error) { return get, func() error { return nil } },
		levelWrites:  levelWrites,
		mappedWrites: func() int64 { return db.Metrics().WALMappedBytes },
		memory: func() engineMemory {
			m := db.Metrics()
			return engineMemory{
				OffHeap: manual.InUse(), Filters: m.FilterMemory, Indexes: m.IndexMemory,
				MemTables: m.MemTableBytes + m.ImmutableMemTableBytes, MemTableFilters: m.MemTableFilterBytes,
				BlockCache: m.BlockCacheBytes,
			}
		},
		close: db.Close,
	}, nil
}

func openPebble(dir string, useFilters bool) (*store, error) {
	cache := pebble.NewCache(pebbleCacheSize)
	defer cache.Unref() // the DB holds its own reference
	opts := &pebble.Options{
		Cache:        cache,
		MemTableSize: memTableSize,
		Logger:       quietLogger{},
	}
	for i := range opts.Levels {
		opts.Levels[i].BlockSize = blockSize
		opts.Levels[i].FilterPolicy = pebblebloom.FilterPolicy(bitsPerKey)
		opts.TargetFileSizes[i] = targetFileSize
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	s := &store{
		put: func(k, v []byte) error { return db.Set(k, v, pebble.NoSync) },
		levelWrites: func() []int64 {
			var w []int64
			for _, l := range db.Metrics().Levels {
				w = append(w, int64(l.TableBytesFlushed+l.TableBytesCompacted))
			}
			return w
		},
		close: db.Close,
	}
	if useFilters {
		s.newReader = func() (func([]byte) (bool, error), func() error) {
			// One iterator for the whole run: the store does not change
			// while it is read.
			it, err := db.NewIter(&pebble.IterOptions{UseL6Filters: true})
			if err != nil {
				return func([]byte) (bool, error) { return false, err }, func() error { return nil }
			}
			return func(key []byte) (bool, error) {
				// The default comparer's prefix is the whole key, so
				// SeekPrefixGE finds key or nothing.
				if it.SeekPrefixGE(key) {
					return true, nil
				}
				return false, it.Error()
			}, it.Close
		}
		return s, nil
	}
	get := func(key []byte) (bool, error) {
		_, closer, err := db.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return true, closer.Close()
	}
	s.newReader = func() (func([]byte) (bool, error), func() error) { return get, func() error { return nil } }
	return s, nil
}

// quietLogger drops Pebble's informational lines and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(1)
}

func openGoleveldb(dir string) (*store, error) {
	db, err := leveldb.OpenFile(dir, &opt.Options{
		BlockSize:           blockSize,
		BlockCacheCapacity:  blockCacheSize,
		WriteBuffer:         memTableSize,
		CompactionTableSize: targetFileSize,
		Filter:              filter.NewBloomFilter(bitsPerKey),
		NoSync:              true,
	})
	if err != nil {
		return nil, err
	}
	get := func(key []byte) (bool, error) {
		_, err := db.Get(key, nil)
		if errors.Is(err, leveldb.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	return &store{
		put:       func(k, v []byte) error { return db.Put(k, v, nil) },
		newReader: func() (func([]byte) (bool, error), func() error) { return get, func() error { return nil } },
		close:     db.Close,
	}, nil
}
