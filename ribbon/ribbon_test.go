package ribbon

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/shale-db/shale/bloom"
	tablefilter "github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/filtertest"
)

// buildFilter returns the table filter of hashes at bitsPerKey, encoded
// and decoded.
func buildFilter(tb testing.TB, bitsPerKey float64, hashes []uint64) (filter, []byte) {
	tb.Helper()
	w := NewPolicy(bitsPerKey).NewWriter()
	for _, h := range hashes {
		w.AddHash(h)
	}
	data, err := w.Finish()
	if err != nil {
		tb.Fatal(err)
	}
	f, _, err := parse(data, "test")
	if err != nil {
		tb.Fatal(err)
	}
	return f, data
}

// expectedRate returns the false-positive rate a filter of shape s should
// show: 2^-r for the keys starting in a lower block, 2^-(r+1) in an upper
// one, weighted by the share of the starts each holds.
func expectedRate(s shape) float64 {
	lower := min(float64(64*s.upper), float64(s.starts())) / float64(s.starts())
	return lower*math.Pow(2, -float64(s.columns)) + (1-lower)*math.Pow(2, -float64(s.columns)-1)
}

// checkRate fails tb unless got, measured over probes absent keys, is
// within 4 standard deviations of the binomial count, plus 2% of want, of
// want. The keys are fixed, so the check is deterministic.
func checkRate(tb testing.TB, what string, got, want float64, probes int) {
	tb.Helper()
	sigma := math.Sqrt(want * (1 - want) / float64(probes))
	if tol := 4*sigma + 0.02*want; math.Abs(got-want) > tol {
		tb.Errorf("%s: measured false-positive rate %.4f%%, want %.4f%% ± %.4f%%", what, 100*got, 100*want, 100*tol)
	} else {
		tb.Logf("%s: measured false-positive rate %.4f%%, want %.4f%% ± %.4f%%", what, 100*got, 100*want, 100*tol)
	}
}

// TestRate builds filters of 100,000 keys at several bits per key, checks
// that every key added is found, and that the false-positive rate over
// 500,000 keys never added is the one the shape predicts. Sequential keys
// are checked at one setting: the hash leaves no trace of their order.
func TestRate(t *testing.T) {
	const n, probes = 100_000, 500_000
	for _, ks := range filtertest.Sets {
		added, absent := ks.Hashes(0, n), ks.Hashes(n, n+probes)
		settings := []float64{3.5, 7, 10, 14}
		if ks.Name == "seq" {
			settings = []float64{10}
		}
		for _, bpk := range settings {
			f, data := buildFilter(t, bpk, added)
			what := fmt.Sprintf("%s keys, %v bits/key", ks.Name, bpk)
			if r := filtertest.PositiveRate(f, added); r != 1 {
				t.Fatalf("%s: only %.4f%% of added keys found", what, 100*r)
			}
			if got := float64(8*(len(data)-headerLen)) / n; math.Abs(got-bpk) > 0.01 {
				t.Errorf("%s: %.3f bits/key", what, got)
			}
			checkRate(t, what, filtertest.PositiveRate(f, absent), expectedRate(f.shape), probes)
		}
	}
}

// TestSmallSets checks filters of 0 to 300 keys, and a few larger sizes,
// for false negatives, at a fractional bits per key.
func TestSmallSets(t *testing.T) {
	hs := filtertest.Sets[0].Hashes(0, 5000)
	for _, n := range []int{0, 1, 2, 3, 63, 64, 65, 127, 128, 300, 1000, 5000} {
		f, _ := buildFilter(t, 9.3, hs[:n])
		if r := filtertest.PositiveRate(f, hs[:n]); n > 0 && r != 1 {
			t.Fatalf("%d keys: only %.2f%% found", n, 100*r)
		}
		if n == 0 && filtertest.PositiveRate(f, hs) != 0 {
			t.Fatal("a filter of no keys holds a key")
		}
	}
}

// TestRepeats adds each key three times, not in a row: the repeats cancel
// out in the build, and the filter is the filter of the distinct keys.
func TestRepeats(t *testing.T) {
	hs := filtertest.Sets[1].Hashes(0, 1000)
	var tripled []uint64
	for range 3 {
		tripled = append(tripled, hs...)
	}
	data, _, err := build(tripled, 10)
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := parse(data, "test")
	if err != nil {
		t.Fatal(err)
	}
	if r := filtertest.PositiveRate(f, hs); r != 1 {
		t.Fatalf("only %.2f%% of keys found", 100*r)
	}
}

// TestFirstSeed checks that the slack lets the first seed solve the system
// for sets of several sizes, as slack's doc says, so that a build seldom
// pays for a second attempt.
func TestFirstSeed(t *testing.T) {
	for _, n := range []int{10, 1000, 10_000, 100_000} {
		for _, ks := range filtertest.Sets {
			if _, attempts, err := build(ks.Hashes(0, n), 10); err != nil || attempts != 1 {
				t.Errorf("%d %s keys: %d attempts, %v", n, ks.Name, attempts, err)
			}
		}
	}
}

// TestBuildFailure gives the build fewer slots than keys, a system that
// no seed solves: it must report ErrBuildFailed after its bounded attempts,
// not panic or loop.
func TestBuildFailure(t *testing.T) {
	hs := filtertest.Sets[0].Hashes(0, 1000)
	_, attempts, err := buildWithSlack(hs, 10, -0.2)
	if !errors.Is(err, ErrBuildFailed) || attempts != maxAttempts {
		t.Fatalf("got %v after %d attempts, want ErrBuildFailed after %d", err, attempts, maxAttempts)
	}
}

// TestMemoryAgainstBloom tests the claim that a Ribbon filter takes about
// 30% less memory than a textbook Bloom filter of the same false-positive
// rate (RocksDB's documentation for its Ribbon filter), and measures it
// against the blocked Bloom filter shale uses too. For Ribbon filters of
// 100,000 random keys at 7, 10 and 14 bits per key, it measures the rate
// over 500,000 keys never added, builds a textbook Bloom filter of the size
// the formula gives for that rate (at the formula's best k) and a blocked
// one (bloom.New, sized by its own model), and measures theirs. The Bloom
// filters' measured rates must equal the Ribbon filter's within the noise
// of the counts (so the memory is compared at one rate), and the saving
// must be 30% within the tolerance stated here: 20-35% against the textbook
// filter, 22-40% against the blocked one. Measured: 22.2-23.8% against the
// textbook layout and 25.2-30.9% against the blocked one. Against the
// textbook filter that is less than 30%: see "Memory against Bloom filters"
// in doc.go for why.
func TestMemoryAgainstBloom(t *testing.T) {
	const n, probes = 100_000, 500_000
	ks := filtertest.Sets[0]
	added, absent := ks.Hashes(0, n), ks.Hashes(n, n+probes)
	for _, bpk := range []float64{7, 10, 14} {
		r, data := buildFilter(t, bpk, added)
		ribbonBits := float64(8*(len(data)-headerLen)) / n
		rate := filtertest.PositiveRate(r, absent)

		tbBits := bloom.BitsPerKeyForRate(rate)
		tb := filtertest.NewTextbook(added, uint64(math.Ceil(tbBits*n)), bloom.ProbesForBitsPerKey(tbBits))
		tbRate := filtertest.PositiveRate(tb, absent)

		blocked := bloom.New(n, rate)
		for i := range n {
			blocked.Add(ks.Key(i))
		}
		blockedFP := 0
		for i := n; i < n+probes; i++ {
			if blocked.MayContain(ks.Key(i)) {
				blockedFP++
			}
		}
		blockedRate := float64(blockedFP) / probes

		for _, c := range []struct {
			layout           string
			bits, rate       float64
			minSave, maxSave float64
		}{
			{"textbook", tbBits, tbRate, 0.20, 0.35},
			{"blocked", blocked.BitsPerKey(), blockedRate, 0.22, 0.40},
		} {
			save := 1 - ribbonBits/c.bits
			t.Logf("%v bits/key: ribbon %.2f bits/key, rate %.4f%%; %s Bloom %.2f bits/key, rate %.4f%%: %.1f%% less memory",
				bpk, ribbonBits, 100*rate, c.layout, c.bits, 100*c.rate, 100*save)
			// The two counts must agree within 4 standard deviations of
			// their difference, plus 5% for the models.
			if tol := 4*math.Sqrt((rate+c.rate)/probes) + 0.05*rate; math.Abs(c.rate-rate) > tol {
				t.Errorf("%v bits/key: %s Bloom filter measures %.4f%%, not the Ribbon filter's %.4f%% ± %.4f%%",
					bpk, c.layout, 100*c.rate, 100*rate, 100*tol)
			}
			if save < c.minSave || save > c.maxSave {
				t.Errorf("%v bits/key: Ribbon saves %.1f%% against the %s Bloom filter, want %.0f-%.0f%%",
					bpk, 100*save, c.layout, 100*c.minSave, 100*c.maxSave)
			}
		}
	}
}

// TestFilter builds a standalone Filter of 10,000 items at 8.5 bits per
// key, checks its items, its size, its round trip through MarshalBinary,
// and that the table policy decodes its bytes to the same answers.
func TestFilter(t *testing.T) {
	const n = 10_000
	ks := filtertest.Sets[1]
	var items [][]byte
	for i := range n {
		items = append(items, ks.Key(i))
	}
	f, err := New(items, 8.5)
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != n || math.Abs(f.BitsPerKey()-8.5) > 0.01 {
		t.Fatalf("Len %d, %.3f bits/key", f.Len(), f.BitsPerKey())
	}
	data, _ := f.MarshalBinary()
	var g Filter
	if err := g.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	table, err := NewPolicy(8.5).Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	fp := 0
	for i := range 2 * n {
		key := ks.Key(i)
		in := f.MayContain(key)
		if i < n && !in {
			t.Fatalf("item %d not found", i)
		}
		if g.MayContain(key) != in || table.MayContain(tablefilter.Hash(key)) != in {
			t.Fatalf("key %d: the decoded filters disagree", i)
		}
		if i >= n && in {
			fp++
		}
	}
	if want := expectedRate(f.f.shape); math.Abs(float64(fp)/n-want) > 4*math.Sqrt(want/n) {
		t.Errorf("%d false positives of %d, want about %.0f", fp, n, want*n)
	}
}
