package shale

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestRowCacheModel runs one random stream of writes, flushes, compactions,
// snapshots and reads against two stores, one with a small row cache (so
// rows are evicted as well as hit) and one without, and checks every read of
// both against a map: latest reads and reads at snapshots taken before later
// overwrites and deletes.
func TestRowCacheModel(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runRowCacheModel(t, seed, 4000) })
	}
}

func runRowCacheModel(t *testing.T, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, seed))
	open := func(rowCache int) *DB {
		db, err := Open("db", &Options{
			FS:                    vfs.NewMem(),
			MemTableSize:          4 << 10,
			BlockSize:             256,
			BlockCacheSize:        -1,
			RowCacheSize:          rowCache,
			L0CompactionThreshold: 2,
			LBaseMaxBytes:         16 << 10,
			TargetFileSize:        4 << 10,
			// Tables without filters: every lookup inside a table's range
			// reaches the row cache, absent keys included.
			BloomBitsPerKey: NoFilter,
		})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	dbs := []*DB{open(16 << 10), open(0)}
	defer func() {
		for _, db := range dbs {
			db.Close()
		}
	}()
	type snapshot struct {
		snaps []*Snapshot // one per store
		model map[string]string
	}
	var snaps []snapshot
	defer func() {
		for _, s := range snaps {
			for _, sn := range s.snaps {
				sn.Close()
			}
		}
	}()
	model := map[string]string{}
	key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(100)) }
	check := func(i int, what string, k []byte, get func(int, []byte) ([]byte, error), model map[string]string) {
		t.Helper()
		want, ok := model[string(k)]
		for d := range dbs {
			got, err := get(d, k)
			switch {
			case !ok && !errors.Is(err, ErrNotFound):
				t.Fatalf("op %d: store %d: %s Get(%s) = %q, %v; want not found", i, d, what, k, got, err)
			case ok && (err != nil || string(got) != want):
				t.Fatalf("op %d: store %d: %s Get(%s) = %q, %v; want %q", i, d, what, k, got, err, want)
			}
		}
	}
	for i := range ops {
		switch op := rng.IntN(100); {
		case op < 25:
			k, v := key(), fmt.Sprintf("v%d", i)
			for _, db := range dbs {
				if err := db.Put(k, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			model[string(k)] = v
		case op < 35:
			k := key()
			for _, db := range dbs {
				if err := db.Delete(k); err != nil {
					t.Fatal(err)
				}
			}
			delete(model, string(k))
		case op < 75:
			check(i, "latest", key(), func(d int, k []byte) ([]byte, error) { return dbs[d].Get(k) }, model)
		case op < 88:
			if len(snaps) > 0 {
				s := snaps[rng.IntN(len(snaps))]
				check(i, "snapshot", key(), func(d int, k []byte) ([]byte, error) { return s.snaps[d].Get(k) }, s.model)
			}
		case op < 91:
			s := snapshot{model: maps.Clone(model)}
			for _, db := range dbs {
				s.snaps = append(s.snaps, db.NewSnapshot())
			}
			snaps = append(snaps, s)
		case op < 93:
			if len(snaps) > 0 {
				j := rng.IntN(len(snaps))
				for _, sn := range snaps[j].snaps {
					if err := sn.Close(); err != nil {
						t.Fatal(err)
					}
				}
				snaps = append(snaps[:j], snaps[j+1:]...)
			}
		case op < 99:
			for _, db := range dbs {
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		default:
			for _, db := range dbs {
				if err := db.Compact(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	m := dbs[0].Metrics()
	t.Logf("row cache: %d hits, %d misses, %d bytes", m.RowCacheHits, m.RowCacheMisses, m.RowCacheBytes)
	if m.RowCacheHits == 0 || m.RowCacheMisses == 0 {
		t.Errorf("row cache had %d hits and %d misses: the stream did not exercise it", m.RowCacheHits, m.RowCacheMisses)
	}
	if off := dbs[1].Metrics(); off.RowCacheHits+off.RowCacheMisses+off.RowCacheBytes != 0 {
		t.Errorf("store without a row cache reports %+v", off)
	}
}

// TestRowCacheEviction checks that rows are charged their real size, that
// the row cache stays within its budget as more rows are read than it
// holds, and that a table's rows leave with the table.
func TestRowCacheEviction(t *testing.T) {
	const budget = 16 << 10
	db, err := Open("db", &Options{FS: vfs.NewMem(), RowCacheSize: budget, DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 1000
	value := make([]byte, 100)
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "key%04d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// One row: its 7-byte key, its 100-byte value and the fixed overhead.
	if _, err := db.Get([]byte("key0000")); err != nil {
		t.Fatal(err)
	}
	if got, want := db.Metrics().RowCacheBytes, int64(7+100+128); got != want {
		t.Fatalf("one row charged %d bytes, want %d", got, want)
	}
	for i := range n {
		if _, err := db.Get(fmt.Appendf(nil, "key%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	m := db.Metrics()
	if m.RowCacheBytes > budget || m.RowCacheBytes < budget-2*(7+100+128) {
		t.Fatalf("after %d rows read the row cache holds %d bytes; want just under its budget %d", n, m.RowCacheBytes, budget)
	}
	// The last rows read are still there; the first ones were evicted.
	before := db.Metrics()
	db.Get([]byte("key0999"))
	db.Get([]byte("key0001"))
	after := db.Metrics()
	if after.RowCacheHits-before.RowCacheHits != 1 || after.RowCacheMisses-before.RowCacheMisses != 1 {
		t.Fatalf("recent and evicted rows: %d hits, %d misses; want 1 and 1",
			after.RowCacheHits-before.RowCacheHits, after.RowCacheMisses-before.RowCacheMisses)
	}
	// Compaction replaces the table: its rows are evicted with it.
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := db.Metrics().RowCacheBytes; got != 0 {
		t.Fatalf("after the table left the tree its rows hold %d bytes", got)
	}
}

// TestRowCacheConcurrent reads keys while they are overwritten, flushed and
// compacted, with a row cache small enough to evict: each reader checks
// that a key's version never goes back, which a stale row would make it do
// (a row cache keyed by user key alone fails it).
// Under -race it also checks the row cache's locking.
func TestRowCacheConcurrent(t *testing.T) {
	db, err := Open("db", &Options{
		FS:                    vfs.NewMem(),
		MemTableSize:          8 << 10,
		BlockSize:             512,
		RowCacheSize:          8 << 10,
		L0CompactionThreshold: 2,
		LBaseMaxBytes:         32 << 10,
		TargetFileSize:        8 << 10,
		NoSync:                true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const keys, rounds = 50, 40
	key := func(i int) []byte { return fmt.Appendf(nil, "key%03d", i) }
	var wg sync.WaitGroup
	var written atomic.Bool
	errc := make(chan error, 4)
	wg.Add(1)
	go func() { // the writer: every key gets version 1, then 2, ..., each round flushed
		defer wg.Done()
		defer written.Store(true)
		for v := 1; v <= rounds; v++ {
			for i := range keys {
				if err := db.Put(key(i), fmt.Appendf(nil, "%06d", v)); err != nil {
					errc <- err
					return
				}
			}
			if err := db.Flush(); err != nil {
				errc <- err
				return
			}
		}
	}()
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 0))
			seen := make([]int, keys)
			// check reads key i, which must hold a version no older than
			// the last one this reader saw.
			check := func(i int) error {
				got, err := db.Get(key(i))
				if errors.Is(err, ErrNotFound) && seen[i] == 0 {
					return nil
				}
				var v int
				if err == nil {
					_, err = fmt.Sscanf(string(got), "%d", &v)
				}
				if err != nil || v < seen[i] {
					return fmt.Errorf("reader %d: %s read %q, %v after version %d", r, key(i), got, err, seen[i])
				}
				seen[i] = v
				return nil
			}
			// Random reads while the writer runs (at least 20,000), then
			// each key twice, all of them in tables by then: the second
			// read of a key is a row cache hit unless a compaction replaced
			// its table or the other reader evicted it in between, which will
			// not happen to all 50 keys.
			for n := 0; n < 20_000 || !written.Load(); n++ {
				if err := check(rng.IntN(keys)); err != nil {
					errc <- err
					return
				}
			}
			for i := range 2 * keys {
				if err := check(i / 2); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if m := db.Metrics(); m.RowCacheHits == 0 {
		t.Errorf("no row cache hit: %d misses", m.RowCacheMisses)
	}
}
