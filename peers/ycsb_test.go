package peers

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	pebblebloom "github.com/cockroachdb/pebble/v2/bloom"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/ycsb"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

var (
	ycsbRun      = flag.Bool("ycsb", false, "run TestYCSB: the YCSB core workloads on every engine")
	ycsbRecords  = flag.Int64("ycsb.records", 100_000, "YCSB records loaded")
	ycsbOps      = flag.Int64("ycsb.ops", 100_000, "YCSB operations per workload")
	ycsbThreads  = flag.Int("ycsb.threads", 1, "YCSB goroutines")
	ycsbRowCache = flag.Int("ycsb.rowcache", 8<<20, "row cache bytes of the \"shale+rows\" engine")
)

// ycsbEngine is one store under YCSB.
type ycsbEngine struct {
	name  string
	store ycsb.Store
	// rowCache returns shale's row cache counters (nil for other engines).
	rowCache func() (hits, misses int64)
	close    func() error
}

// TestYCSB loads the same records into shale (without and with a row
// cache), goleveldb and Pebble, then runs workloads A, B, C, F, D and E on
// each in turn (each workload on every engine before the next workload, so
// the machine's drift touches all alike), and prints the throughput, p99
// latencies and row cache hit rates as markdown tables. Run it with
//
//	go test -run TestYCSB -ycsb [-ycsb.records N] [-ycsb.ops N] [-ycsb.threads N]
func TestYCSB(t *testing.T) {
	if !*ycsbRun {
		t.Skip("pass -ycsb to run")
	}
	var engines []*ycsbEngine
	defer func() {
		for _, e := range engines {
			if err := e.close(); err != nil {
				t.Errorf("%s: close: %v", e.name, err)
			}
		}
	}()
	for _, open := range []func() (*ycsbEngine, error){
		func() (*ycsbEngine, error) { return openShaleYCSB("shale", 0) },
		func() (*ycsbEngine, error) { return openShaleYCSB("shale+rows", *ycsbRowCache) },
		openGoleveldbYCSB,
		openPebbleYCSB,
	} {
		e, err := open()
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	cfg := ycsb.Config{Records: *ycsbRecords, Operations: *ycsbOps, Threads: *ycsbThreads, Seed: 1}
	records := make([]int64, len(engines)) // each engine's, after the last phase
	for i := range records {
		records[i] = cfg.Records
	}
	results := map[string][]*ycsb.Result{} // by phase, one per engine
	hitRates := map[string]float64{}       // by phase, of shale+rows
	phases := []string{"load"}
	for _, w := range ycsb.Workloads {
		phases = append(phases, w.Name)
	}
	for p, phase := range phases {
		for i, e := range engines {
			var h0, m0 int64
			if e.rowCache != nil {
				h0, m0 = e.rowCache()
			}
			c := cfg
			c.Records = records[i]
			var r *ycsb.Result
			var err error
			if p == 0 {
				r, err = ycsb.Load(e.store, c)
			} else {
				r, err = ycsb.Run(e.store, ycsb.Workloads[p-1], c)
			}
			if err != nil {
				t.Fatalf("%s: %v", e.name, err)
			}
			for _, o := range r.ByOp {
				if o.NotFound > 0 {
					t.Errorf("%s %s: %d %s found no record", e.name, phase, o.NotFound, o.Op)
				}
			}
			records[i] = r.Records
			results[phase] = append(results[phase], r)
			if e.rowCache != nil {
				h1, m1 := e.rowCache()
				if n := h1 - h0 + m1 - m0; n > 0 {
					hitRates[phase] = float64(h1-h0) / float64(n)
				}
			}
			t.Logf("%s %s: %.0f ops/s", phase, e.name, r.OpsPerSec)
		}
	}
	fmt.Print(ycsbTables(engines, phases, results, hitRates, cfg))
}

// ycsbTables renders the results: ops/s per phase and engine (with each
// peer's ratio to shale), then p99 per operation type.
func ycsbTables(engines []*ycsbEngine, phases []string, results map[string][]*ycsb.Result, hitRates map[string]float64, cfg ycsb.Config) string {
	var b strings.Builder
	names := make([]string, len(engines))
	for i, e := range engines {
		names[i] = e.name
	}
	fmt.Fprintf(&b, "\nYCSB, %d records of 10 x 100 B, %d operations per workload, threads: %d\n\n", cfg.Records, cfg.Operations, cfg.Threads)
	fmt.Fprintf(&b, "| ops/s | %s | shale+rows row cache hits |\n|---|%s---|\n", strings.Join(names, " | "), strings.Repeat("---|", len(engines)))
	for _, phase := range phases {
		rs := results[phase]
		fmt.Fprintf(&b, "| %s |", phase)
		for i, r := range rs {
			if i == 0 {
				fmt.Fprintf(&b, " %.0f |", r.OpsPerSec)
			} else {
				fmt.Fprintf(&b, " %.0f (%.2fx) |", r.OpsPerSec, r.OpsPerSec/rs[0].OpsPerSec)
			}
		}
		if rate, ok := hitRates[phase]; ok {
			fmt.Fprintf(&b, " %.1f%% |\n", 100*rate)
		} else {
			b.WriteString(" - |\n")
		}
	}
	fmt.Fprintf(&b, "\n| p99 µs | op | %s |\n|---|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(engines)))
	for _, phase := range phases {
		for k, o := range results[phase][0].ByOp {
			fmt.Fprintf(&b, "| %s | %s |", phase, o.Op)
			for _, r := range results[phase] {
				fmt.Fprintf(&b, " %.1f |", float64(r.ByOp[k].P99)/float64(time.Microsecond))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func openShaleYCSB(name string, rowCache int) (*ycsbEngine, error) {
	db, err := shale.Open(tempDir(name), &shale.Options{NoSync: true, RowCacheSize: rowCache})
	if err != nil {
		return nil, err
	}
	e := &ycsbEngine{name: name, store: ycsb.Shale(db), close: db.Close}
	if rowCache > 0 {
		e.rowCache = func() (int64, int64) {
			m := db.Metrics()
			return m.RowCacheHits, m.RowCacheMisses
		}
	}
	return e, nil
}

// goleveldbStore runs YCSB on goleveldb, with its default 8 MiB block
// cache and a 10-bit Bloom filter, like shale's defaults.
type goleveldbStore struct{ db *leveldb.DB }

func openGoleveldbYCSB() (*ycsbEngine, error) {
	db, err := leveldb.OpenFile(tempDir("goleveldb"), &opt.Options{Filter: filter.NewBloomFilter(bitsPerKey), NoSync: true})
	if err != nil {
		return nil, err
	}
	return &ycsbEngine{name: "goleveldb", store: goleveldbStore{db}, close: db.Close}, nil
}

func (s goleveldbStore) Get(key []byte) ([]byte, bool, error) {
	v, err := s.db.Get(key, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (s goleveldbStore) Put(key, value []byte) error { return s.db.Put(key, value, nil) }

func (s goleveldbStore) Scan(start []byte, n int, visit func(key, value []byte) error) error {
	it := s.db.NewIterator(&util.Range{Start: start}, nil)
	defer it.Release()
	for ok := it.First(); ok && n > 0; ok, n = it.Next(), n-1 {
		if err := visit(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// pebbleStore runs YCSB on Pebble, with a 16 MiB cache (its memtables are
// charged to it; see the README) and 10-bit Bloom filters.
type pebbleStore struct{ db *pebble.DB }

func openPebbleYCSB() (*ycsbEngine, error) {
	cache := pebble.NewCache(pebbleCacheSize)
	defer cache.Unref() // the DB holds its own reference
	db, err := pebble.Open(tempDir("pebble"), &pebble.Options{
		Cache:  cache,
		Levels: [7]pebble.LevelOptions{{FilterPolicy: pebblebloom.FilterPolicy(bitsPerKey)}},
	})
	if err != nil {
		return nil, err
	}
	return &ycsbEngine{name: "pebble", store: pebbleStore{db}, close: db.Close}, nil
}

func (s pebbleStore) Get(key []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v = append([]byte(nil), v...) // valid only until closer.Close
	return v, true, closer.Close()
}

func (s pebbleStore) Put(key, value []byte) error { return s.db.Set(key, value, pebble.NoSync) }

func (s pebbleStore) Scan(start []byte, n int, visit func(key, value []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: start})
	if err != nil {
		return err
	}
	for ok := it.First(); ok && n > 0; ok, n = it.Next(), n-1 {
		if err := visit(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}
