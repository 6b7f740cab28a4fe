package ribbon

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/cuckoo"
	tablefilter "github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/fuse"
	"github.com/shale-db/shale/internal/filtertest"
)

// benchKeys is the size of the benchmark filters: 1M keys.
const benchKeys = 1 << 20

// set is a filter under comparison, built from items and probed by item,
// as the standalone filters are used (a table filter is probed with the
// hash computed once for all of a lookup's files; here its probe hashes
// the item, like the others).
type set interface{ MayContain(item []byte) bool }

// policyFilter probes a table filter by item.
type policyFilter struct{ f tablefilter.Filter }

func (p policyFilter) MayContain(item []byte) bool { return p.f.MayContain(tablefilter.Hash(item)) }

// compared are the filters of the comparison in doc.go; each builds a
// filter of items and returns it with its size in bytes.
var compared = []struct {
	name  string
	build func(items [][]byte) (set, int)
}{
	{"bloom10", tableFilter(bloom.NewPolicy(10))},
	{"counting", func(items [][]byte) (set, int) {
		c := bloom.NewCounting(len(items), 0.0096) // the rate of bloom10
		for _, it := range items {
			c.Add(it)
		}
		data, _ := c.MarshalBinary()
		return c, len(data)
	}},
	{"cuckoo8", cuckooFilter(8)},
	{"cuckoo12", cuckooFilter(12)},
	{"cuckoo16", cuckooFilter(16)},
	{"fuse8", tableFilter(fuse.NewPolicy())},
	{"ribbon7", tableFilter(NewPolicy(7))},
	{"ribbon10", tableFilter(NewPolicy(10))},
	{"ribbon14", tableFilter(NewPolicy(14))},
}

func tableFilter(p tablefilter.Policy) func(items [][]byte) (set, int) {
	return func(items [][]byte) (set, int) {
		w := p.NewWriter()
		for _, it := range items {
			w.AddHash(tablefilter.Hash(it))
		}
		data, err := w.Finish()
		if err != nil {
			panic(err)
		}
		f, err := p.Decode(data)
		if err != nil {
			panic(err)
		}
		return policyFilter{f}, len(data)
	}
}

func cuckooFilter(bits int) func(items [][]byte) (set, int) {
	return func(items [][]byte) (set, int) {
		c := cuckoo.New(len(items), bits)
		for _, it := range items {
			if err := c.Add(it); err != nil {
				panic(err)
			}
		}
		data, _ := c.MarshalBinary()
		return c, len(data)
	}
}

// benchItems returns keys [from, to) of the random family.
func benchItems(from, to int) [][]byte {
	items := make([][]byte, 0, to-from)
	for i := from; i < to; i++ {
		items = append(items, filtertest.Sets[0].Key(i))
	}
	return items
}

// BenchmarkCompareBuild measures building each filter of the comparison
// from the same 1M random keys: ns/key (and "cpu-ns/op", the CPU time a
// key, see filtertest.CPUTimer), and the bits/key of the result.
//
//	go test -run '^$' -bench CompareBuild -benchtime 3x ./ribbon/
func BenchmarkCompareBuild(b *testing.B) {
	added := benchItems(0, benchKeys)
	for _, c := range compared {
		b.Run("filter="+c.name, func(b *testing.B) {
			builds, size := 0, 0
			cpu := filtertest.StartCPU()
			for b.Loop() {
				_, size = c.build(added)
				builds++
			}
			cpu.Report(b, builds*benchKeys)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(builds*benchKeys), "ns/key")
			b.ReportMetric(float64(8*size)/benchKeys, "bits/key")
		})
	}
}

// BenchmarkCompareProbe measures a probe of each filter of the comparison,
// built from the same 1M random keys, for a present and an absent key; an
// absent-key run also reports the false positives among 1M keys never
// added ("fp%"); "cpu-ns/op" is the CPU time a probe (filtertest.CPUTimer).
//
//	go test -run '^$' -bench CompareProbe -benchtime 2000000x ./ribbon/
func BenchmarkCompareProbe(b *testing.B) {
	added, absent := benchItems(0, benchKeys), benchItems(benchKeys, 2*benchKeys)
	for _, c := range compared {
		f, _ := c.build(added)
		runtime.GC() // not in the timings: the garbage of the build
		for _, present := range []bool{true, false} {
			items, what := added, "present"
			if !present {
				items, what = absent, "absent"
			}
			b.Run(fmt.Sprintf("filter=%s/%s", c.name, what), func(b *testing.B) {
				probes, found := 0, 0
				cpu := filtertest.StartCPU()
				for b.Loop() {
					if f.MayContain(items[probes&(benchKeys-1)]) {
						found++
					}
					probes++
				}
				cpu.Report(b, probes)
				if present && found != probes {
					b.Fatal("a present key was not found")
				}
				if !present {
					fp := 0
					for _, it := range absent {
						if f.MayContain(it) {
							fp++
						}
					}
					b.ReportMetric(100*float64(fp)/benchKeys, "fp%")
				}
			})
		}
	}
}
