package shale

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale/internal/procstat"
	"github.com/shale-db/shale/vfs"
)

// Benchmarks of the DB as a whole. Compare runs with benchstat, e.g.
//
//	go test -run '^$' -bench 'Get|Put' -count 6 . > new.txt
//	benchstat old.txt new.txt

func benchKey(i int) []byte { return fmt.Appendf(nil, "key%010d", i) }

// openBench opens a store in a temp dir on the OS file system.
func openBench(b *testing.B, opts *Options) *DB {
	b.Helper()
	db, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkGet measures point lookups of present and absent keys, served
// from the memtable or from 8 overlapping L0 tables, with and without
// filters. The block cache is on, so table reads are mostly cache hits;
// disk-reads/op shows the blocks that were not.
func BenchmarkGet(b *testing.B) {
	const n = 100_000
	for _, where := range []string{"memtable", "sstables"} {
		for _, bits := range []int{10, NoFilter} {
			if where == "memtable" && bits == NoFilter {
				continue
			}
			opts := &Options{BloomBitsPerKey: bits, NoSync: true, DisableAutomaticCompactions: true, MemTableSize: 64 << 20}
			db := openBench(b, opts)
			const files = 8
			for f := 0; f < files; f++ {
				batch := db.NewBatch()
				for i := f; i < n; i += files {
					batch.Put(benchKey(i*2), []byte("value-value-value-value"))
				}
				if err := db.Apply(batch); err != nil {
					b.Fatal(err)
				}
				if where == "sstables" {
					if err := db.Flush(); err != nil {
						b.Fatal(err)
					}
				}
			}
			filter := "bloom10"
			if bits == NoFilter {
				filter = "nofilter"
			}
			for _, present := range []bool{true, false} {
				name := fmt.Sprintf("%s/%s/present=%v", where, filter, present)
				b.Run(name, func(b *testing.B) {
					rng := rand.New(rand.NewPCG(1, 2))
					before := db.Metrics()
					b.ReportAllocs()
					for i := 0; b.Loop(); i++ {
						k := rng.IntN(n) * 2
						if !present {
							k++
						}
						_, err := db.Get(benchKey(k))
						if present != (err == nil) {
							b.Fatalf("Get(%d): %v", k, err)
						}
					}
					after := db.Metrics()
					b.ReportMetric(float64(after.DiskReads-before.DiskReads)/float64(b.N), "disk-reads/op")
				})
			}
		}
	}
}

// BenchmarkGetParallel measures point lookups from every core at once, of
// keys in the memtable, so that the figure is the read path's own cost,
// taking its state, with no I/O. Run it with -cpu 1,2,... to see how reads
// scale with cores.
func BenchmarkGetParallel(b *testing.B) {
	const n = 100_000
	db := openBench(b, &Options{NoSync: true, MemTableSize: 64 << 20})
	batch := db.NewBatch()
	for i := range n {
		batch.Put(benchKey(i), []byte("value-value-value-value"))
	}
	if err := db.Apply(batch); err != nil {
		b.Fatal(err)
	}
	getRandomParallel(b, db, n, true)
}

// BenchmarkGetAbsentParallel measures lookups of absent keys from every
// core at once, each asking the filters of 8 overlapping L0 tables (every
// one says "definitely not", or rarely a false positive reads a cached
// block): the cost of a filter probe and of counting it. Run it with
// -cpu 1,2,... to see what the probes' shared counters cost across cores.
func BenchmarkGetAbsentParallel(b *testing.B) {
	const n, tables = 100_000, 8
	db := openBench(b, &Options{NoSync: true, DisableAutomaticCompactions: true, MemTableSize: 64 << 20})
	flushStriped(b, db, n, tables)
	getRandomParallel(b, db, n, false)
}

// getRandomParallel times Gets from every core at once of benchKey(i) for
// i in 0..n-1 at random, present keys, or, with present false, of keys
// just after them, which the store must not hold.
func getRandomParallel(b *testing.B, db *DB, n int, present bool) {
	var seed atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(seed.Add(1), 0))
		for pb.Next() {
			key := benchKey(rng.IntN(n))
			if !present {
				key = append(key, '~')
			}
			if _, err := db.Get(key); present != (err == nil) {
				b.Errorf("Get(%q): %v", key, err)
				return
			}
		}
	})
}

// BenchmarkPut measures write throughput with 1 and 8 concurrent writers,
// synced and not. With sync, 8 writers share each fsync (group commit), so
// their total throughput is several times one writer's.
func BenchmarkPut(b *testing.B) {
	value := make([]byte, 100)
	for _, synced := range []bool{true, false} {
		for _, writers := range []int{1, 8} {
			b.Run(fmt.Sprintf("sync=%v/writers=%d", synced, writers), func(b *testing.B) {
				db := openBench(b, &Options{NoSync: !synced})
				var next atomic.Int64
				b.SetBytes(int64(len(value) + 13))
				b.ResetTimer()
				var wg sync.WaitGroup
				for w := 0; w < writers; w++ {
					wg.Go(func() {
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							if err := db.Put(benchKey(int(i)), value); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			})
		}
	}
}

// BenchmarkRecovery measures Open on a store whose 64 MiB WAL must be
// replayed (and written to an L0 table), on the in-memory FS so that the
// figure is the engine's work, not the disk's. Values are 1,000 random
// bytes.
func BenchmarkRecovery(b *testing.B) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, MemTableSize: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 1000)
	rng := rand.New(rand.NewPCG(4, 4))
	for i := 0; db.Metrics().WALBytes < 64<<20; {
		batch := db.NewBatch()
		for j := 0; j < 100; j, i = j+1, i+1 {
			for k := range value {
				value[k] = byte(rng.Uint32()) // incompressible
			}
			batch.Put(benchKey(i), value)
		}
		if err := db.Apply(batch); err != nil {
			b.Fatal(err)
		}
	}
	crashed := fs.CrashClone() // the WAL, not yet flushed
	db.Close()
	b.SetBytes(64 << 20)
	for b.Loop() {
		b.StopTimer()
		clone := crashed.CrashClone()
		b.StartTimer()
		db, err := Open("db", &Options{FS: clone, MemTableSize: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
}

// flushStriped writes keys 0 to n-1 as that many L0 tables, key i in table
// i%tables, so that every table spans the whole key range.
func flushStriped(b *testing.B, db *DB, n, tables int) {
	for t := range tables {
		batch := db.NewBatch()
		for i := t; i < n; i += tables {
			batch.Put(benchKey(i), []byte("value-value-value-value"))
		}
		if err := db.Apply(batch); err != nil {
			b.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetFromFiles measures point lookups that read a table file:
// 100,000 present keys in 16 tables, no block cache, so each Get reads
// one block with one pread (the page cache serves it) through the table
// cache, from every core at once. Run it with -cpu 1,2,... to see what
// reads that reach a file cost beside the read itself.
func BenchmarkGetFromFiles(b *testing.B) {
	const n, tables = 100_000, 16
	db := openBench(b, &Options{NoSync: true, DisableAutomaticCompactions: true,
		MemTableSize: 64 << 20, BlockCacheSize: -1})
	flushStriped(b, db, n, tables)
	before := db.Metrics()
	getRandomParallel(b, db, n, true)
	after := db.Metrics()
	b.ReportMetric(float64(after.DiskReads-before.DiskReads)/float64(b.N), "disk-reads/op")
}

// BenchmarkScan measures YCSB E's short scans: each operation opens an
// iterator, seeks to a random key and reads 100 entries (key and value),
// forward (SeekGE, Next) or reverse (SeekLT, Prev), then closes it. The
// store holds 40,000 keys with 1,000-byte values in the bottom level,
// 10% of them overwritten in 4 L0 tables and 1% in the memtable, so that
// the merging iterator has 6 inputs, some of them ahead of the others. With
// "cached" the block cache holds every block, so the scans cost only the
// iterators' CPU; with "uncached" it holds an eighth of them, as in YCSB E,
// and most blocks come from files (the page cache). Profile it with
//
//	go test -run '^$' -bench Scan -cpuprofile cpu.out -memprofile mem.out .
func BenchmarkScan(b *testing.B) {
	const n, length = 40_000, 100
	for _, c := range []struct {
		name  string
		cache int
	}{{"cached", 128 << 20}, {"uncached", 5 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			db := openBench(b, &Options{NoSync: true, DisableAutomaticCompactions: true, BlockCacheSize: c.cache})
			value := make([]byte, 1000)
			rng := rand.New(rand.NewPCG(1, 2))
			put := func(i int) {
				for j := range value {
					value[j] = byte(rng.Uint32())
				}
				if err := db.Put(benchKey(i), value); err != nil {
					b.Fatal(err)
				}
			}
			for i := range n {
				put(i)
			}
			if err := db.Compact(); err != nil {
				b.Fatal(err)
			}
			for range 4 {
				for range n / 40 {
					put(rng.IntN(n))
				}
				if err := db.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			for range n / 100 {
				put(rng.IntN(n))
			}
			for _, reverse := range []bool{false, true} {
				name := "forward"
				if reverse {
					name = "reverse"
				}
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					before := db.Metrics()
					ioBefore, ioErr := procstat.ReadIO()
					cpuBefore, cpuErr := procstat.CPUTime()
					entries := 0
					for b.Loop() {
						it := db.NewIter(nil)
						k := benchKey(rng.IntN(n))
						seek, step := it.SeekGE, it.Next
						if reverse {
							seek, step = it.SeekLT, it.Prev
						}
						for ok, m := seek(k), 0; ok && m < length; ok, m = step(), m+1 {
							entries += len(it.Key()) + len(it.Value())
						}
						if err := it.Close(); err != nil {
							b.Fatal(err)
						}
					}
					after := db.Metrics()
					b.ReportMetric(float64(after.DiskReads-before.DiskReads)/float64(b.N), "disk-reads/op")
					// The process's read syscalls and CPU time (all
					// goroutines) per scan, where /proc says them: on a
					// shared machine, steadier than the time per scan.
					if ioAfter, err := procstat.ReadIO(); err == nil && ioErr == nil {
						b.ReportMetric(float64(ioAfter.Sub(ioBefore).SyscR)/float64(b.N), "read-syscalls/op")
					}
					if cpuAfter, err := procstat.CPUTime(); err == nil && cpuErr == nil {
						b.ReportMetric(float64(cpuAfter-cpuBefore)/float64(b.N), "cpu-ns/op")
					}
					if entries == 0 {
						b.Fatal("the scans read nothing")
					}
				})
			}
		})
	}
}
