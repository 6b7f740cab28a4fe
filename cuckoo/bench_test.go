package cuckoo

import (
	"fmt"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/internal/filtertest"
)

// benchItems is the number of items of the benchmark filters: 1M.
const benchItems = 1 << 20

// deletable is what the filters that can remove items have in common.
type deletable interface {
	Add(item []byte)
	MayContain(item []byte) bool
	Remove(item []byte) bool
}

// cuckooAdder adapts Filter to deletable; an ErrFull, which the benchmark
// never meets, panics.
type cuckooAdder struct{ *Filter }

func (c cuckooAdder) Add(item []byte) {
	if err := c.Filter.Add(item); err != nil {
		panic(err)
	}
}

// BenchmarkOps measures, side by side on the same 1M random items, a
// cuckoo filter at 8, 12 and 16-bit fingerprints, a counting Bloom filter
// and a Bloom filter (at 0.95%, the counting filter the same): add, probe
// of a present and an absent item, and (but the Bloom filter) remove, ns
// per item ("cpu-ns/op": CPU time, see filtertest.CPUTimer); and bits per
// item. (TestLoadBeforeFull measures the load at
// which the first Add fails.)
//
//	go test -run '^$' -bench Ops -benchtime 1000000x ./cuckoo/
func BenchmarkOps(b *testing.B) {
	ks := filtertest.Sets[0]
	items := make([][]byte, 2*benchItems)
	for i := range items {
		items[i] = ks.Key(i)
	}
	added, absent := items[:benchItems], items[benchItems:]
	type filter struct {
		name string
		make func() (deletable, func() int) // the filter and its size in bytes
	}
	filters := []filter{
		{"counting", func() (deletable, func() int) {
			c := bloom.NewCounting(benchItems, 0.0095)
			return c, func() int { data, _ := c.MarshalBinary(); return len(data) }
		}},
	}
	for _, f := range []int{8, 12, 16} {
		filters = append(filters, filter{fmt.Sprintf("cuckoo%d", f), func() (deletable, func() int) {
			c := New(benchItems, f)
			return cuckooAdder{c}, func() int { data, _ := c.MarshalBinary(); return len(data) }
		}})
	}
	for _, f := range filters {
		var d deletable
		var size func() int
		b.Run(f.name+"/add", func(b *testing.B) {
			d, size = f.make() // a run before this one (-count) filled the last
			i := 0
			cpu := filtertest.StartCPU()
			for b.Loop() {
				if i == benchItems {
					b.StopTimer()
					d, size = f.make()
					i = 0
					b.StartTimer()
				}
				d.Add(added[i])
				i++
			}
			cpu.Report(b, b.N)
			for ; i < benchItems; i++ {
				d.Add(added[i])
			}
			b.ReportMetric(float64(8*size())/benchItems, "bits/item")
		})
		for _, present := range []bool{true, false} {
			probe, what := added, "present"
			if !present {
				probe, what = absent, "absent"
			}
			b.Run(f.name+"/probe-"+what, func(b *testing.B) {
				i := 0
				cpu := filtertest.StartCPU()
				for b.Loop() {
					d.MayContain(probe[i&(benchItems-1)])
					i++
				}
				cpu.Report(b, b.N)
				if !present {
					fp := 0
					for _, it := range absent {
						if d.MayContain(it) {
							fp++
						}
					}
					b.ReportMetric(100*float64(fp)/benchItems, "fp%")
				}
			})
		}
		b.Run(f.name+"/remove", func(b *testing.B) {
			d, _ = f.make() // a run before this one (-count) emptied the last
			for _, it := range added {
				d.Add(it)
			}
			i := 0
			cpu := filtertest.StartCPU()
			for b.Loop() {
				if i == benchItems {
					b.StopTimer()
					for _, it := range added {
						d.Add(it)
					}
					i = 0
					b.StartTimer()
				}
				d.Remove(added[i])
				i++
			}
			cpu.Report(b, b.N)
		})
	}
	bf := bloom.New(benchItems, 0.0095)
	b.Run("bloom/add", func(b *testing.B) {
		i := 0
		cpu := filtertest.StartCPU()
		for b.Loop() {
			bf.Add(added[i&(benchItems-1)])
			i++
		}
		cpu.Report(b, b.N)
		for _, it := range added {
			bf.Add(it)
		}
		b.ReportMetric(bf.BitsPerKey(), "bits/item")
	})
	for _, present := range []bool{true, false} {
		probe, what := added, "present"
		if !present {
			probe, what = absent, "absent"
		}
		b.Run("bloom/probe-"+what, func(b *testing.B) {
			i := 0
			cpu := filtertest.StartCPU()
			for b.Loop() {
				bf.MayContain(probe[i&(benchItems-1)])
				i++
			}
			cpu.Report(b, b.N)
			if !present {
				fp := 0
				for _, it := range absent {
					if bf.MayContain(it) {
						fp++
					}
				}
				b.ReportMetric(100*float64(fp)/benchItems, "fp%")
			}
		})
	}
}
