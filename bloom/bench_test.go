package bloom

import (
	"fmt"
	"testing"
)

// The sizes of the comparison benchmarks: 1M keys, so that a filter
// (1.2 MB at 10 bits per key) is larger than this machine's per-core L2.
const benchKeys = 1 << 20

// BenchmarkProbe measures a probe, through base.Filter as a table reader
// makes it, of a filter of 1M keys: layout × bits per key × key set ×
// present or absent key. The hash is computed beforehand, as a point lookup
// computes it once for all files. An absent-key run also reports the rate
// of false positives among 1M keys never added ("fp%").
//
//	go test -run '^$' -bench 'Probe' -benchtime 2000000x ./bloom/
func BenchmarkProbe(b *testing.B) {
	for _, ks := range keySets {
		added, absent := ks.hashes(0, benchKeys), ks.hashes(benchKeys, 2*benchKeys)
		for _, bpk := range []int{5, 10, 15} {
			layouts := []struct {
				name string
				f    interface{ MayContain(uint64) bool }
			}{
				{"blocked", build(b, bpk, added)},
				{"textbook", newTextbook(added, bpk)},
			}
			for _, l := range layouts {
				for _, present := range []bool{true, false} {
					hs, what := added, "present"
					if !present {
						hs, what = absent, "absent"
					}
					name := fmt.Sprintf("layout=%s/bpk=%d/keys=%s/%s", l.name, bpk, ks.name, what)
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
							b.ReportMetric(100*positiveRate(l.f, absent), "fp%")
						} else if found != probes {
							b.Fatal("a present key was not found")
						}
					})
				}
			}
		}
	}
}

// BenchmarkBuild measures building a filter of 1M keys from their hashes
// (ns per key; bits per key as built).
//
//	go test -run '^$' -bench 'Build' ./bloom/
func BenchmarkBuild(b *testing.B) {
	hs := keySets[0].hashes(0, benchKeys)
	for _, bpk := range []int{5, 10, 15} {
		b.Run(fmt.Sprintf("layout=blocked/bpk=%d", bpk), func(b *testing.B) {
			builds, size := 0, 0
			for b.Loop() {
				w := NewPolicy(bpk).NewWriter()
				for _, h := range hs {
					w.AddHash(h)
				}
				size = len(w.Finish())
				builds++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(builds*benchKeys), "ns/key")
			b.ReportMetric(float64(8*size)/benchKeys, "bits/key")
		})
		b.Run(fmt.Sprintf("layout=textbook/bpk=%d", bpk), func(b *testing.B) {
			builds, t := 0, (*textbook)(nil)
			for b.Loop() {
				t = newTextbook(hs, bpk)
				builds++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(builds*benchKeys), "ns/key")
			b.ReportMetric(float64(t.m)/benchKeys, "bits/key")
		})
	}
}
