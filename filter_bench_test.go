package shale

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// BenchmarkFilterPolicy builds a multi-level tree under each filter policy
// (300k random keys with incompressible 100-byte values, small level
// targets so the data spans L0-L3; compactions run in the foreground after
// each flush, so the build is deterministic) and measures absent-key
// lookups: candidate files (filter checks) per lookup, disk reads per
// lookup (all false positives, as the block cache is off), filter bits per
// key, and ns per lookup. MonkeyBloom should need fewer reads than uniform
// Bloom filters of the same memory; Ribbon filters, fewer than Bloom
// filters of the same memory, and than fuse filters of about the same.
//
//	go test -run '^$' -bench FilterPolicy -benchtime 200000x .
func BenchmarkFilterPolicy(b *testing.B) {
	policies := []struct {
		name   string
		policy FilterPolicy
	}{
		{"bloom10", UniformFilter(BloomFilter(10))},
		{"monkey10", MonkeyBloom(10)},
		{"bloom9", UniformFilter(BloomFilter(9))},
		{"bloom8", UniformFilter(BloomFilter(8))},
		{"monkey8", MonkeyBloom(8)},
		{"fuse", UniformFilter(FuseFilter())},
		{"ribbon10", UniformFilter(RibbonFilter(10))},
		{"ribbon11.2", UniformFilter(RibbonFilter(11.2))}, // about fuse's memory, with its headers
	}
	const n = 300_000
	for _, p := range policies {
		b.Run(p.name, func(b *testing.B) {
			db := mustOpenBench(b, &Options{
				FS:                          vfs.NewMem(),
				FilterPolicy:                p.policy,
				NoSync:                      true,
				BlockCacheSize:              -1,
				MemTableSize:                256 << 10,
				LBaseMaxBytes:               512 << 10,
				TargetFileSize:              128 << 10,
				DisableAutomaticCompactions: true,
			})
			rng := rand.New(rand.NewPCG(7, 7))
			value := make([]byte, 100)
			batch := db.NewBatch()
			for i := 1; i <= n; i++ {
				for j := range value {
					value[j] = byte(rng.Uint32())
				}
				batch.Put(fmt.Appendf(nil, "key%012d", rng.Uint64N(1e12)), value)
				if i%1000 != 0 {
					continue
				}
				if err := db.Apply(batch); err != nil {
					b.Fatal(err)
				}
				batch.Reset()
				if i%2000 == 0 {
					if err := db.Flush(); err != nil {
						b.Fatal(err)
					}
					settleCompactions(b, db)
				}
			}
			before := db.Metrics()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				// Odd suffixes are never written ("key" + 12 digits + "x").
				db.Get(fmt.Appendf(nil, "key%012dx", rng.Uint64N(1e12)))
			}
			b.StopTimer()
			after := db.Metrics()
			b.ReportMetric(float64(after.FilterChecks-before.FilterChecks)/float64(b.N), "candidates/op")
			b.ReportMetric(float64(after.DiskReads-before.DiskReads)/float64(b.N), "disk-reads/op")
			b.ReportMetric(float64(after.FilterMemory*8)/n, "filter-bits/key")
		})
	}
}

func mustOpenBench(b *testing.B, opts *Options) *DB {
	b.Helper()
	db, err := Open("db", opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}
