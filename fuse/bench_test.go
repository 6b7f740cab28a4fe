package fuse

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/shale-db/shale/bloom"
	tablefilter "github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/filtertest"
)

// benchKeys is the size of the benchmark filters: 1M keys.
const benchKeys = 1 << 20

// The filters compared: this package's, and the Bloom filter the engine
// uses by default, at 10 bits per key. Both are built and probed through
// tablefilter.Policy, as a table writer and reader use them.
var candidates = []struct {
	name   string
	policy tablefilter.Policy
}{
	{"fuse8", NewPolicy()},
	{"bloom10", bloom.NewPolicy(10)},
}

// BenchmarkBuild measures building a filter of 1M random keys from their
// hashes: ns per key, and the bits per key of the result.
//
//	go test -run '^$' -bench 'Build' ./fuse/
func BenchmarkBuild(b *testing.B) {
	hs := filtertest.Sets[0].Hashes(0, benchKeys)
	for _, c := range candidates {
		b.Run("filter="+c.name, func(b *testing.B) {
			builds, size := 0, 0
			for b.Loop() {
				w := c.policy.NewWriter()
				for _, h := range hs {
					w.AddHash(h)
				}
				size = len(filtertest.Finish(b, w))
				builds++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(builds*benchKeys), "ns/key")
			b.ReportMetric(float64(8*size)/benchKeys, "bits/key")
		})
	}
}

// BenchmarkProbe measures a probe of a filter of 1M keys, for a present and
// an absent key, random or sequential keys; an absent-key run also reports
// the false positives among 1M keys never added ("fp%").
//
//	go test -run '^$' -bench 'Probe' -benchtime 2000000x ./fuse/
func BenchmarkProbe(b *testing.B) {
	for _, ks := range filtertest.Sets {
		added, absent := ks.Hashes(0, benchKeys), ks.Hashes(benchKeys, 2*benchKeys)
		for _, c := range candidates {
			w := c.policy.NewWriter()
			for _, h := range added {
				w.AddHash(h)
			}
			f, err := c.policy.Decode(filtertest.Finish(b, w))
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC() // not in the timings: the garbage of the setup
			for _, present := range []bool{true, false} {
				hs, what := added, "present"
				if !present {
					hs, what = absent, "absent"
				}
				b.Run(fmt.Sprintf("filter=%s/keys=%s/%s", c.name, ks.Name, what), func(b *testing.B) {
					b.ReportAllocs()
					probes, found := 0, 0
					for b.Loop() {
						if f.MayContain(hs[probes&(benchKeys-1)]) {
							found++
						}
						probes++
					}
					if !present {
						b.ReportMetric(100*filtertest.PositiveRate(f, absent), "fp%")
					} else if found != probes {
						b.Fatal("a present key was not found")
					}
				})
			}
		}
	}
}
