package rangefilter

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// fprWorkload draws a key set and empty query ranges of L values.
type fprWorkload struct {
	name string
	keys func(rng *rand.Rand, n int) []uint64
	// query returns the range [lo, lo+L-1], which must hold no key (the
	// test checks).
	query func(rng *rand.Rand, keys []uint64, L uint64) uint64
}

const seqGap = 4096 // sequential keys: room for an empty range of 2^10 between two

var fprWorkloads = []fprWorkload{
	{"random", randomKeys, func(rng *rand.Rand, _ []uint64, _ uint64) uint64 { return rng.Uint64() }},
	{"sequential", func(_ *rand.Rand, n int) []uint64 { return sequentialKeys(seqGap, seqGap, n) },
		func(rng *rand.Rand, keys []uint64, L uint64) uint64 {
			return keys[rng.IntN(len(keys))] + 1 + rng.Uint64N(seqGap-L)
		}},
	// A range starting just after a present key: where heuristic range
	// filters fail.
	{"correlated", randomKeys, func(rng *rand.Rand, keys []uint64, _ uint64) uint64 {
		return keys[rng.IntN(len(keys))] + 1
	}},
}

// TestFalsePositiveBound measures the false-positive rate of empty ranges
// of L values, for L = 1 to 2^10 and B = 8, 12, 16 bits per key, against
// the bound L/2^(B-2), on random keys, sequential keys and correlated
// queries. Each rate must stay under the bound plus a margin of four
// standard deviations of a binomial at the bound (plus 3 queries), which a
// rate at the bound exceeds with odds below 1 in 10^4; the seeds are
// fixed, so the test cannot flake. go test -v prints the table (the
// "Range filters" section of docs/filters.md).
func TestFalsePositiveBound(t *testing.T) {
	const n, queries = 10000, 10000
	var table strings.Builder
	fmt.Fprintf(&table, "| L | B | bound | random | sequential | correlated |\n|---:|---:|---:|---:|---:|---:|\n")
	for _, B := range []int{8, 12, 16} {
		filters := make([]*Filter, len(fprWorkloads))
		keySets := make([][]uint64, len(fprWorkloads))
		for i, w := range fprWorkloads {
			rng := rand.New(rand.NewPCG(uint64(B), uint64(i)))
			keySets[i] = w.keys(rng, n)
			slices.Sort(keySets[i])
			f, err := New(keySets[i], B, rng.Uint64())
			if err != nil {
				t.Fatal(err)
			}
			filters[i] = f
		}
		for L := uint64(1); L <= 1<<10; L *= 2 {
			bound := min(1, float64(L)/math.Exp2(float64(B-2)))
			limit := queries*bound + 4*math.Sqrt(queries*bound*(1-bound)) + 3
			fmt.Fprintf(&table, "| %d | %d | %.4f |", L, B, bound)
			for i, w := range fprWorkloads {
				rng := rand.New(rand.NewPCG(uint64(B)<<32|L, uint64(i)))
				fp := 0
				for range queries {
					lo := w.query(rng, keySets[i], L)
					hi := lo + L - 1
					if hi < lo || holdsKey(keySets[i], lo, hi) {
						t.Fatalf("%s: query [%d, %d] is not empty", w.name, lo, hi)
					}
					if filters[i].MayContain(lo, hi) {
						fp++
					}
				}
				if float64(fp) > limit {
					t.Errorf("B=%d L=%d %s: %d false positives in %d queries, bound %.4f allows %.0f", B, L, w.name, fp, queries, bound, limit)
				}
				fmt.Fprintf(&table, " %.4f |", float64(fp)/queries)
			}
			table.WriteString("\n")
		}
	}
	t.Logf("false-positive rate of empty ranges of L values, %d keys, %d queries a cell:\n%s", n, queries, table.String())
}

// holdsKey reports whether sorted keys hold a key in [lo, hi].
func holdsKey(keys []uint64, lo, hi uint64) bool {
	i, _ := slices.BinarySearch(keys, lo)
	return i < len(keys) && keys[i] <= hi
}

// BenchmarkMayContain measures a probe of an empty range of 16 values in a
// filter of 1M random keys at the default bits per key.
func BenchmarkMayContain(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	f, err := New(randomKeys(rng, 1<<20), DefaultBitsPerKey, 1)
	if err != nil {
		b.Fatal(err)
	}
	los := randomKeys(rng, 1<<12)
	b.ResetTimer()
	for i := range b.N {
		lo := los[i%len(los)]
		f.MayContain(lo, lo+15)
	}
}
