package bloom

import (
	"math"
	"testing"
)

func TestSizingFormulas(t *testing.T) {
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-3*math.Abs(want) }
	if got := BitsForKeys(1_000_000, 0.01); got != 9585059 {
		t.Errorf("BitsForKeys(1e6, 0.01) = %d, want 9585059", got)
	}
	if got := BitsPerKeyForRate(0.01); !near(got, 9.5851) {
		t.Errorf("BitsPerKeyForRate(0.01) = %v", got)
	}
	for _, c := range []struct {
		bpk  float64
		k    int
		rate float64 // the textbook rate at that k
	}{
		{5, 3, 0.09185}, {10, 7, 0.008194}, {15, 10, 0.0007440},
		{0.1, 1, 0.9999546}, {100, 30, 0}, // k is clamped to [1, 30]
	} {
		if got := ProbesForBitsPerKey(c.bpk); got != c.k {
			t.Errorf("ProbesForBitsPerKey(%v) = %d, want %d", c.bpk, got, c.k)
		}
		if c.rate == 0 {
			continue
		}
		if got := ExpectedFalsePositiveRate(c.bpk, c.k); !near(got, c.rate) {
			t.Errorf("ExpectedFalsePositiveRate(%v, %d) = %v, want %v", c.bpk, c.k, got, c.rate)
		}
	}
}

func TestRateOutOfRangePanics(t *testing.T) {
	for _, p := range []float64{0, 1, -0.5, 2, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("BitsPerKeyForRate(%v) did not panic", p)
				}
			}()
			BitsPerKeyForRate(p)
		}()
	}
}

// TestBlockedRate: with many keys per line the blocked rate approaches the
// textbook rate; it is always above it, most so at high bits per key.
func TestBlockedRate(t *testing.T) {
	for _, c := range []struct {
		bpk  float64
		k    int
		want float64
	}{
		{5, 3, 0.092885}, {10, 6, 0.0095757}, {15, 9, 0.0012062},
	} {
		got := blockedRate(c.bpk, c.k)
		if math.Abs(got-c.want) > 1e-4*c.want {
			t.Errorf("blockedRate(%v, %d) = %v, want %v", c.bpk, c.k, got, c.want)
		}
		if tb := ExpectedFalsePositiveRate(c.bpk, c.k); got <= tb {
			t.Errorf("blockedRate(%v, %d) = %v, not above the textbook %v", c.bpk, c.k, got, tb)
		}
	}
	// A line so large that it is the whole filter is a textbook filter.
	if got, want := blockedRate(0.01, 1), ExpectedFalsePositiveRate(0.01, 1); math.Abs(got-want) > 1e-3 {
		t.Errorf("blockedRate(0.01, 1) = %v, want about %v", got, want)
	}
}

func TestBlockedProbes(t *testing.T) {
	for bpk, want := range map[float64]int{1: 1, 5: 3, 10: 6, 15: 9, 20: 11, 1000: 30} {
		if got := blockedProbes(bpk); got != want {
			t.Errorf("blockedProbes(%v) = %d, want %d", bpk, got, want)
		}
	}
}

// TestBlockedSizing: the bits per key found is enough for p, and 1% less
// is not.
func TestBlockedSizing(t *testing.T) {
	for _, p := range []float64{0.1, 0.01, 1e-3, 1e-6, 1e-12} {
		bpk, k := blockedSizing(p)
		if r := blockedRate(bpk, k); r > p {
			t.Errorf("p=%v: %v bits/key, k=%d gives %v", p, bpk, k, r)
		}
		if less := 0.99 * bpk; blockedRate(less, blockedProbes(less)) <= p {
			t.Errorf("p=%v: %v bits/key would do, not %v", p, less, bpk)
		}
	}
}
