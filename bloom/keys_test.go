package bloom

import (
	"fmt"
	"math"
	"testing"

	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/filtertest"
)

// build returns the table filter of hashes at bitsPerKey, decoded.
func build(tb testing.TB, bitsPerKey int, hashes []uint64) filter.Filter {
	tb.Helper()
	p := NewPolicy(bitsPerKey)
	w := p.NewWriter()
	for _, h := range hashes {
		w.AddHash(h)
	}
	f, err := p.Decode(filtertest.Finish(tb, w))
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// checkMeasuredRate fails tb unless got, a rate measured over probes absent
// keys, is within 4 standard deviations of the binomial count, plus 2% of
// want for the model, of want. The keys are fixed, so the check is
// deterministic; a fresh set of keys would fail it by chance about once in
// 16,000 times.
func checkMeasuredRate(tb testing.TB, what string, got, want float64, probes int) {
	tb.Helper()
	sigma := math.Sqrt(want * (1 - want) / float64(probes))
	if tol := 4*sigma + 0.02*want; math.Abs(got-want) > tol {
		tb.Errorf("%s: measured false-positive rate %.4f%%, want %.4f%% ± %.4f%%", what, 100*got, 100*want, 100*tol)
	} else {
		tb.Logf("%s: measured false-positive rate %.4f%%, want %.4f%% ± %.4f%%", what, 100*got, 100*want, 100*tol)
	}
}

func TestSeqKeys(t *testing.T) {
	for _, i := range []int{0, 7, 1234567890} {
		if got, want := string(filtertest.Sets[1].Key(i)), fmt.Sprintf("key%010d", i); got != want {
			t.Fatalf("key %d is %q, want %q", i, got, want)
		}
	}
}
