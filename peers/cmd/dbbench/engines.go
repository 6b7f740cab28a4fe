package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
	pebblebloom "github.com/cockroachdb/pebble/v2/bloom"
	"github.com/dgraph-io/badger/v4"
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
// put, get and scan are safe for concurrent use.
type store struct {
	// put writes one key without fsync.
	put func(key, value []byte) error
	// get returns key's value, the caller's to keep; found is false if key
	// is absent.
	get func(key []byte) (value []byte, found bool, err error)
	// newReader, if not nil, replaces get in readrandom and readmissing:
	// it returns a lookup for one goroutine, which reports whether key is
	// present, and done, which releases what the lookup holds.
	newReader func() (lookup func(key []byte) (bool, error), done func() error)
	// scan visits up to n entries through a new iterator: forward from the
	// first key >= start, or, if reverse, backward from the last key <
	// start. It stops early if visit returns an error; key and value are
	// valid only during visit.
	scan func(start []byte, n int, reverse bool, visit func(key, value []byte) error) error
	// mappedWrites returns the bytes the store has written through shared
	// memory mappings since it was opened, which /proc/self/io's wchar
	// does not count (shale's WAL; see shale.Options.DisableWALMapping);
	// nil if the engine writes none, or if pagesWritten.
	mappedWrites func() int64
	// pagesWritten is true of an engine that writes its WAL and tables
	// through shared mappings, into fresh files only, and never rewrites
	// a page in place (Badger): it does not count what it writes, but the
	// pages it dirties are its bytes written, rounded up to pages.
	pagesWritten bool
	// levelWrites returns the bytes of tables written into each level since
	// the store was opened: by flushes into L0, by compactions below (moves
	// that rewrite nothing are not counted). nil if the engine does not say.
	levelWrites func() []int64
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
	"badger":         openBadger,
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
	get := func(key []byte) ([]byte, bool, error) {
		v, err := db.Get(key)
		if errors.Is(err, shale.ErrNotFound) {
			return nil, false, nil
		}
		return v, err == nil, err
	}
	scan := func(start []byte, n int, reverse bool, visit func(k, v []byte) error) error {
		return scanIter(db.NewIter(nil), start, n, reverse, visit)
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
		get:          get,
		scan:         scan,
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
		get: func(key []byte) ([]byte, bool, error) {
			v, closer, err := db.Get(key)
			if errors.Is(err, pebble.ErrNotFound) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			v = bytes.Clone(v) // valid only until closer.Close
			return v, true, closer.Close()
		},
		scan: func(start []byte, n int, reverse bool, visit func(k, v []byte) error) error {
			it, err := db.NewIter(nil)
			if err != nil {
				return err
			}
			return scanIter(it, start, n, reverse, visit)
		},
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
	get := func(key []byte) ([]byte, bool, error) {
		v, err := db.Get(key, nil)
		if errors.Is(err, leveldb.ErrNotFound) {
			return nil, false, nil
		}
		return v, err == nil, err
	}
	scan := func(start []byte, n int, reverse bool, visit func(k, v []byte) error) error {
		it := db.NewIterator(nil, nil)
		defer it.Release()
		ok, step := it.Seek(start), it.Next
		if reverse {
			// goleveldb seeks only forward: the last key < start is the
			// one before the first key >= start, or the last key.
			if ok {
				ok = it.Prev()
			} else if it.Error() == nil {
				ok = it.Last()
			}
			step = it.Prev
		}
		for ; ok && n > 0; ok, n = step(), n-1 {
			if err := visit(it.Key(), it.Value()); err != nil {
				return err
			}
		}
		return it.Error()
	}
	return &store{
		put:   func(k, v []byte) error { return db.Put(k, v, nil) },
		get:   get,
		scan:  scan,
		close: db.Close,
	}, nil
}

// openBadger opens Badger as close to the common configuration as its
// options go: 4 MiB memtables, 8 MiB of block cache, 4 KiB blocks, 2 MiB
// tables at every level, Bloom filters of a 1% false-positive rate (what 10
// bits per key give), no fsync, values kept in the tree (up to 64 KiB:
// Badger's default of 1 MiB exceeds the batch a 4 MiB memtable takes), and
// no conflict detection (no other engine checks
// transactions). What it keeps: up to 5 memtables (the others hold 2), 4
// compactors, Snappy compression, its indexes and filters in memory outside
// the cache (as shale's).
func openBadger(dir string) (*store, error) {
	opts := badger.DefaultOptions(dir).
		WithSyncWrites(false).
		WithMemTableSize(memTableSize).
		WithBlockCacheSize(blockCacheSize).
		WithBlockSize(blockSize).
		WithBaseTableSize(targetFileSize).
		WithBloomFalsePositive(0.01).
		WithValueThreshold(64 << 10).
		WithDetectConflicts(false).
		WithMetricsEnabled(false).
		WithLoggingLevel(badger.WARNING)
	opts.TableSizeMultiplier = 1
	db, err := badger.Open(opts)
	if err != nil {
		return nil, err
	}
	get := func(key []byte) (v []byte, found bool, err error) {
		err = db.View(func(txn *badger.Txn) error {
			item, err := txn.Get(key)
			if err != nil {
				return err
			}
			v, err = item.ValueCopy(nil)
			return err
		})
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil, false, nil
		}
		return v, err == nil, err
	}
	scan := func(start []byte, n int, reverse bool, visit func(k, v []byte) error) error {
		txn := db.NewTransaction(false)
		defer txn.Discard()
		opts := badger.DefaultIteratorOptions
		// The values are in the tree: there is nothing to prefetch.
		opts.PrefetchValues = false
		opts.Reverse = reverse
		it := txn.NewIterator(opts)
		defer it.Close()
		// Backward, Seek finds the last key <= start.
		it.Seek(start)
		if reverse && it.Valid() && bytes.Equal(it.Item().Key(), start) {
			it.Next()
		}
		for ; it.Valid() && n > 0; it.Next() {
			n--
			item := it.Item()
			if err := item.Value(func(v []byte) error { return visit(item.Key(), v) }); err != nil {
				return err
			}
		}
		return nil
	}
	return &store{
		put: func(k, v []byte) error {
			return db.Update(func(txn *badger.Txn) error { return txn.Set(k, v) })
		},
		get:          get,
		scan:         scan,
		pagesWritten: true,
		close:        db.Close,
	}, nil
}

// iterator is what shale's and Pebble's iterators have in common.
type iterator interface {
	SeekGE(key []byte) bool
	SeekLT(key []byte) bool
	Next() bool
	Prev() bool
	Key() []byte
	Value() []byte
	Close() error
}

// scanIter visits up to n entries of it from start: forward from the first
// key at or after start, or backward from the last key before it; then it
// closes it.
func scanIter(it iterator, start []byte, n int, reverse bool, visit func(k, v []byte) error) error {
	ok, step := it.SeekGE(start), it.Next
	if reverse {
		ok, step = it.SeekLT(start), it.Prev
	}
	for ; ok && n > 0; ok, n = step(), n-1 {
		if err := visit(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}
