package bloom

import (
	"fmt"
	"testing"

	"github.com/shale-db/shale/internal/filtertest"
)

// newTextbook returns the layout this package decided against
// (filtertest.Textbook: k probes anywhere in one bit array), at bitsPerKey
// and the textbook's best k, so that the measurements in doc.go can be
// repeated side by side with the blocked layout.
func newTextbook(hashes []uint64, bitsPerKey int) *filtertest.Textbook {
	return filtertest.NewTextbook(hashes, uint64(len(hashes)*bitsPerKey), ProbesForBitsPerKey(float64(bitsPerKey)))
}

// TestTextbookRate checks the comparison layout against the formula, so
// that the comparison in doc.go compares with a correct textbook filter.
func TestTextbookRate(t *testing.T) {
	const n, probes = 200_000, 1_000_000
	for _, ks := range filtertest.Sets {
		added, absent := ks.Hashes(0, n), ks.Hashes(n, n+probes)
		for _, bpk := range []int{5, 10, 15} {
			f := newTextbook(added, bpk)
			if r := filtertest.PositiveRate(f, added); r != 1 {
				t.Fatalf("%s keys, %d bits/key: only %.2f%% of added keys found", ks.Name, bpk, 100*r)
			}
			want := ExpectedFalsePositiveRate(float64(f.Bits())/n, f.K())
			checkMeasuredRate(t, fmt.Sprintf("textbook, %s keys, %d bits/key", ks.Name, bpk), filtertest.PositiveRate(f, absent), want, probes)
		}
	}
}
