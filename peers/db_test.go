package peers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	pebblebloom "github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/shale-db/shale"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// engine is one store, loaded with numKeys sequential keys and compacted.
type engine struct {
	name string
	// get reports whether key is present.
	get func(key []byte) (bool, error)
	// reads is the number of blocks read from table files so far: shale's
	// Metrics.DiskReads; goleveldb and Pebble: ReadAt calls on their table
	// files, counted by a wrapper of the storage (goleveldb) or vfs.FS
	// (Pebble) they are opened with; each reads one block per ReadAt on this
	// path.
	reads func() int64
	// extra reports engine-specific per-op metrics: counters before and
	// after, by unit.
	extra func() map[string]int64
	close func() error
	shape string // the tree after compaction, for the log
	build time.Duration
}

const batchSize = 1000

// load writes keys 0..numKeys-1 in batches through put and commit.
func load(newBatch func() (put func(k, v []byte), commit func() error)) error {
	for lo := 0; lo < numKeys; lo += batchSize {
		put, commit := newBatch()
		for i := lo; i < lo+batchSize && i < numKeys; i++ {
			put(seqKey(i), value(i))
		}
		if err := commit(); err != nil {
			return err
		}
	}
	return nil
}

func openShale() (*engine, error) {
	db, err := shale.Open(tempDir("shale"), &shale.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	err = load(func() (func(k, v []byte), func() error) {
		b := db.NewBatch()
		return b.Put, func() error { return db.Apply(b) }
	})
	if err == nil {
		err = db.Compact()
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	m := db.Metrics()
	shape := ""
	for l, lm := range m.Levels {
		if lm.Files > 0 {
			shape += fmt.Sprintf("L%d: %d files, %d MiB; ", l, lm.Files, lm.Bytes>>20)
		}
	}
	return &engine{
		name: "shale",
		get: func(k []byte) (bool, error) {
			_, err := db.Get(k)
			if errors.Is(err, shale.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
		reads: func() int64 { return db.Metrics().DiskReads },
		extra: func() map[string]int64 {
			m := db.Metrics()
			return map[string]int64{"filter-checks/op": m.FilterChecks, "filter-fp/op": m.FilterFalsePositives}
		},
		close: db.Close,
		shape: shape,
	}, nil
}

// countingStorage counts the ReadAt calls on the files goleveldb opens.
type countingStorage struct {
	storage.Storage
	reads atomic.Int64
}

func (s *countingStorage) Open(fd storage.FileDesc) (storage.Reader, error) {
	r, err := s.Storage.Open(fd)
	if err != nil || fd.Type != storage.TypeTable {
		return r, err
	}
	return countingReader{r, &s.reads}, nil
}

type countingReader struct {
	storage.Reader
	n *atomic.Int64
}

func (r countingReader) ReadAt(p []byte, off int64) (int, error) {
	r.n.Add(1)
	return r.Reader.ReadAt(p, off)
}

func openGoleveldb() (*engine, error) {
	fs, err := storage.OpenFile(tempDir("goleveldb"), false)
	if err != nil {
		return nil, err
	}
	st := &countingStorage{Storage: fs}
	db, err := leveldb.Open(st, &opt.Options{Filter: filter.NewBloomFilter(bitsPerKey), NoSync: true})
	if err != nil {
		fs.Close()
		return nil, err
	}
	err = load(func() (func(k, v []byte), func() error) {
		b := new(leveldb.Batch)
		return b.Put, func() error { return db.Write(b, nil) }
	})
	if err == nil {
		err = db.CompactRange(util.Range{})
	}
	if err != nil {
		db.Close()
		fs.Close()
		return nil, err
	}
	shape := ""
	if s, err := db.GetProperty("leveldb.stats"); err == nil {
		shape = "\n" + s
	}
	return &engine{
		name: "goleveldb",
		get: func(k []byte) (bool, error) {
			_, err := db.Get(k, nil)
			if errors.Is(err, leveldb.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
		reads: st.reads.Load,
		extra: func() map[string]int64 { return nil },
		close: func() error { return errors.Join(db.Close(), fs.Close()) },
		shape: shape,
	}, nil
}

// countingFS counts the ReadAt calls on the table files Pebble opens.
type countingFS struct {
	vfs.FS
	reads atomic.Int64
}

func (fs *countingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return countingFile{f, &fs.reads}, nil
}

type countingFile struct {
	vfs.File
	n *atomic.Int64
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.n.Add(1)
	return f.File.ReadAt(p, off)
}

const pebbleCacheSize = 16 << 20

func openPebble() (*engine, error) {
	fs := &countingFS{FS: vfs.Default}
	// Pebble charges its memtables to the block cache: with its default
	// 8 MiB cache, the mutable 4 MiB memtable and the flushed one it keeps
	// leave no room for a single block (Metrics().BlockCache: 0 entries, 3
	// file reads per Get). 16 MiB leaves about the 8 MiB the other engines
	// get for blocks.
	cache := pebble.NewCache(pebbleCacheSize)
	defer cache.Unref() // the DB holds its own reference
	db, err := pebble.Open(tempDir("pebble"), &pebble.Options{
		FS:    fs,
		Cache: cache,
		// One entry applies to every level.
		Levels: [7]pebble.LevelOptions{{FilterPolicy: pebblebloom.FilterPolicy(bitsPerKey)}},
	})
	if err != nil {
		return nil, err
	}
	err = load(func() (func(k, v []byte), func() error) {
		b := db.NewBatch()
		return func(k, v []byte) { b.Set(k, v, nil) }, func() error { return b.Commit(pebble.NoSync) }
	})
	if err == nil {
		// The whole key space: every key is below "kez".
		err = db.Compact(context.Background(), []byte("key"), []byte("kez"), false)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	m := db.Metrics()
	shape := ""
	for l, lm := range m.Levels {
		if lm.TablesCount > 0 {
			shape += fmt.Sprintf("L%d: %d files, %d MiB; ", l, lm.TablesCount, lm.TablesSize>>20)
		}
	}
	shape += fmt.Sprintf("block cache %d MiB, memtables %d MiB (zombie %d MiB)",
		pebbleCacheSize>>20, m.MemTable.Size>>20, m.MemTable.ZombieSize>>20)
	return &engine{
		name: "pebble",
		get: func(k []byte) (bool, error) {
			_, c, err := db.Get(k)
			if errors.Is(err, pebble.ErrNotFound) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			return true, c.Close()
		},
		reads: fs.reads.Load,
		extra: func() map[string]int64 {
			m := db.Metrics()
			// Filter.Hits: a filter ruled a table out; Misses: it said
			// "maybe" and the table did not hold the key.
			return map[string]int64{
				"filter-skips/op": m.Filter.Hits,
				"filter-fp/op":    m.Filter.Misses,
				"cache-misses/op": m.BlockCache.Misses,
			}
		},
		close: db.Close,
		shape: shape,
	}, nil
}

var engineOpeners = []struct {
	name string
	open func() (*engine, error)
}{
	{"shale", openShale},
	{"goleveldb", openGoleveldb},
	{"pebble", openPebble},
}

var (
	enginesMu sync.Mutex
	engines   = map[string]*engine{}
	engineErr = map[string]error{}

	probesOnce              sync.Once
	absentKeys, presentKeys [][]byte
)

func probeKeys() (absent, present [][]byte) {
	probesOnce.Do(func() {
		// Absent keys inside the key range, each just after a present key.
		absentKeys = shuffled(numKeys, 11, func(i int) []byte { return append(seqKey(i), 'x') })
		presentKeys = shuffled(numKeys, 12, seqKey)
	})
	return absentKeys, presentKeys
}

// getEngine opens, loads and compacts the named engine once per process.
func getEngine(b *testing.B, name string, open func() (*engine, error)) *engine {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	if e, ok := engines[name]; ok {
		return e
	}
	if err, ok := engineErr[name]; ok {
		b.Fatal(err)
	}
	start := time.Now()
	e, err := open()
	if err != nil {
		engineErr[name] = err
		b.Fatalf("%s: %v", name, err)
	}
	e.build = time.Since(start)
	// Warm up: open every table and load what an engine keeps of it
	// (indexes, filters), so per-op counters count lookups only.
	absent, present := probeKeys()
	for i := 0; i < 20000; i++ {
		e.get(absent[len(absent)-1-i])
		e.get(present[len(present)-1-i])
	}
	b.Logf("%s: loaded %d keys and compacted in %v; %s", name, numKeys, e.build.Round(time.Millisecond), e.shape)
	engines[name] = e
	return e
}

func closeEngines() {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	for name, e := range engines {
		if err := e.close(); err != nil {
			fmt.Printf("%s: close: %v\n", name, err)
		}
		delete(engines, name)
	}
}

// cursors is where each Get benchmark goes on in its probe keys.
var cursors = map[string]int{}

// BenchmarkGet looks up absent keys ("key%010dx", inside the key range) and
// present keys, in a fixed random order, in each engine: 1M sequential keys
// with 100-byte values, 10-bit Bloom filters, no fsync, fully compacted,
// default block caches (8 MiB in all three). reads/op counts blocks read from
// table files (see engine.reads).
func BenchmarkGet(b *testing.B) {
	for _, kind := range []string{"absent", "present"} {
		for _, eo := range engineOpeners {
			b.Run(kind+"/"+eo.name, func(b *testing.B) {
				e := getEngine(b, eo.name, eo.open)
				absent, present := probeKeys()
				keys, want := absent, false
				if kind == "present" {
					keys, want = present, true
				}
				// Each run (b.N round, -count repetition) goes on where the
				// last one stopped, so no run re-reads the blocks the run
				// before it left in the cache.
				start := cursors[b.Name()]
				reads0, extra0 := e.reads(), e.extra()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k := keys[(start+i)%len(keys)]
					found, err := e.get(k)
					if err != nil || found != want {
						b.Fatalf("%s: get %q: found %v, %v", e.name, k, found, err)
					}
				}
				b.StopTimer()
				cursors[b.Name()] = (start + b.N) % len(keys)
				n := float64(b.N)
				b.ReportMetric(float64(e.reads()-reads0)/n, "reads/op")
				for unit, v := range e.extra() {
					b.ReportMetric(float64(v-extra0[unit])/n, unit)
				}
			})
		}
	}
}
