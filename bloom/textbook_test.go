package bloom

import (
	"fmt"
	"math/bits"
	"testing"

	"github.com/shale-db/shale/internal/filtertest"
)

// textbook is the layout this package decided against, kept in the tests
// only so that the measurements in doc.go can be repeated side by side with
// the blocked layout: k probes anywhere in one array of m bits, at
// positions from double hashing on the whole 64-bit hash. g_i = h + i·step
// (mod 2^64) with step = h rotated by 32 bits, forced odd so that the g_i
// are distinct; position i is g_i scaled to [0, m) by its high bits. The
// positions are far apart, so two keys share one only by chance, and the
// rate matches the textbook formula; but a key costs up to k cache misses
// where the blocked layout costs one.
type textbook struct {
	words []uint64
	m     uint64 // bits
	k     int
}

func newTextbook(hashes []uint64, bitsPerKey int) *textbook {
	m := max(uint64(len(hashes)*bitsPerKey+63)/64*64, 64)
	t := &textbook{words: make([]uint64, m/64), m: m, k: ProbesForBitsPerKey(float64(bitsPerKey))}
	for _, h := range hashes {
		g, step := h, bits.RotateLeft64(h, 32)|1
		for range t.k {
			pos, _ := bits.Mul64(g, t.m)
			t.words[pos/64] |= 1 << (pos % 64)
			g += step
		}
	}
	return t
}

func (t *textbook) MayContain(h uint64) bool {
	g, step := h, bits.RotateLeft64(h, 32)|1
	for range t.k {
		pos, _ := bits.Mul64(g, t.m)
		if t.words[pos/64]&(1<<(pos%64)) == 0 {
			return false
		}
		g += step
	}
	return true
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
			want := ExpectedFalsePositiveRate(float64(f.m)/n, f.k)
			checkMeasuredRate(t, fmt.Sprintf("textbook, %s keys, %d bits/key", ks.Name, bpk), filtertest.PositiveRate(f, absent), want, probes)
		}
	}
}
