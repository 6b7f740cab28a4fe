package bloom

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/shale-db/shale/internal/filtertest"
)

// The sizes of the comparison benchmarks: 1M keys, so that a filter
// (1.2 MB at 10 bits per key) is larger than this machine's per-core L2.
const benchKeys = 1 << 20

// BenchmarkProbe measures a probe, through filter.Filter as a table reader
// makes it, of a filter of 1M keys: layout × bits per key × key set ×
// present or absent key. The hash is computed beforehand, as a point lookup
// computes it once for all files. An absent-key run also reports the rate
// of false positives among 1M keys never added ("fp%").
//
//	go test -run '^$' -bench 'Probe' -benchtime 2000000x ./bloom/
func BenchmarkProbe(b *testing.B) {
	for _, ks := range filtertest.Sets {
		added, absent := ks.Hashes(0, benchKeys), ks.Hashes(benchKeys, 2*benchKeys)
		for _, bpk := range []int{5, 10, 15} {
			layouts := []struct {
				name string
				f    interface{ MayContain(uint64) bool }
			}{
				{"blocked", build(b, bpk, added)},
				{"textbook", newTextbook(added, bpk)},
			}
			runtime.GC() // not in the timings: the garbage of the setup
			for _, l := range layouts {
				for _, present := range []bool{true, false} {
					hs, what := added, "present"
					if !present {
						hs, what = absent, "absent"
					}
					name := fmt.Sprintf("layout=%s/bpk=%d/keys=%s/%s", l.name, bpk, ks.Name, what)
					b.Run(name, func(b *testing.B) {
						b.ReportAllocs()
						probes, found := 0, 0
						for b.Loop() {
							if l.f.MayContain(hs[probes&(benchKeys-1)]) {
								found++
							}
							probes++
						}
						if !present {
							b.ReportMetric(100*filtertest.PositiveRate(l.f, absent), "fp%")
						} else if found != probes {
							b.Fatal("a present key was not found")
						}
					})
				}
			}
		}
	}
}

// BenchmarkBuild measures building a filter of 1M keys from their hashes,
// in ns per key: each layout from a slice of hashes, and the table filter
// through its writer, which buffers the hashes as they come and sizes the
// filter at Finish.
//
//	go test -run '^$' -bench 'Build' -benchtime 10x ./bloom/
func BenchmarkBuild(b *testing.B) {
	hs := filtertest.Sets[0].Hashes(0, benchKeys)
	perKey := func(b *testing.B, builds int) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(builds*benchKeys), "ns/key")
	}
	for _, bpk := range []int{5, 10, 15} {
		b.Run(fmt.Sprintf("layout=blocked/bpk=%d", bpk), func(b *testing.B) {
			builds := 0
			for b.Loop() {
				f := newBitset(linesFor(benchKeys, float64(bpk)), blockedProbes(float64(bpk)))
				for _, h := range hs {
					f.add(h)
				}
				builds++
			}
			perKey(b, builds)
		})
		b.Run(fmt.Sprintf("layout=textbook/bpk=%d", bpk), func(b *testing.B) {
			builds := 0
			for b.Loop() {
				newTextbook(hs, bpk)
				builds++
			}
			perKey(b, builds)
		})
	}
	b.Run("policy/bpk=10", func(b *testing.B) {
		builds := 0
		for b.Loop() {
			w := NewPolicy(10).NewWriter()
			for _, h := range hs {
				w.AddHash(h)
			}
			filtertest.Finish(b, w)
			builds++
		}
		perKey(b, builds)
	})
}

// BenchmarkProbeOutOfCache measures a probe when the filters do not fit in
// the cache, as in a store whose tables' filters add up to more than the
// last-level cache: 32 filters of 1M keys each at 10 bits per key, 40 MB
// in all (this machine's L3 is 32 MB), probed in turn. Filter j holds the
// hashes of the 1M keys XORed with a constant of its own.
//
//	go test -run '^$' -bench 'ProbeOutOfCache' -benchtime 2000000x ./bloom/
func BenchmarkProbeOutOfCache(b *testing.B) {
	const filters = 32
	added, absent := filtertest.Sets[0].Hashes(0, benchKeys), filtertest.Sets[0].Hashes(benchKeys, 2*benchKeys)
	salt := func(j int) uint64 { return uint64(j) * 0x9e3779b97f4a7c15 }
	salted := make([]uint64, benchKeys)
	type prober interface{ MayContain(uint64) bool }
	var blocked, textbook []prober
	for j := range filters {
		for i, h := range added {
			salted[i] = h ^ salt(j)
		}
		blocked = append(blocked, build(b, 10, salted))
		textbook = append(textbook, newTextbook(salted, 10))
	}
	runtime.GC() // not in the timings: the garbage of the setup
	for _, l := range []struct {
		name string
		fs   []prober
	}{{"blocked", blocked}, {"textbook", textbook}} {
		for _, present := range []bool{true, false} {
			hs, what := added, "present"
			if !present {
				hs, what = absent, "absent"
			}
			b.Run(fmt.Sprintf("layout=%s/bpk=10/%s", l.name, what), func(b *testing.B) {
				probes, found := 0, 0
				for b.Loop() {
					j := probes % filters
					if l.fs[j].MayContain(hs[probes&(benchKeys-1)] ^ salt(j)) {
						found++
					}
					probes++
				}
				if present && found != probes {
					b.Fatal("a present key was not found")
				}
			})
		}
	}
}
