package filtertest

import "math/bits"

// Textbook is the Bloom filter layout package bloom decided against, kept
// for the tests so that other filters can be measured side by side with
// it: k probes anywhere in one array of m bits, at positions from double
// hashing on the whole 64-bit hash. g_i = h + i·step (mod 2^64) with step =
// h rotated by 32 bits, forced odd so that the g_i are distinct; position i
// is g_i scaled to [0, m) by its high bits. The positions are far apart, so
// two keys share one only by chance, and the rate matches the textbook
// formula (bloom's TestTextbookRate checks it); but a key costs up to k
// cache misses where a blocked layout costs one.
type Textbook struct {
	words []uint64
	m     uint64 // bits
	k     int
}

// NewTextbook returns the textbook filter of hashes in m bits (rounded up to
// a multiple of 64, at least 64) with k probes a key.
func NewTextbook(hashes []uint64, m uint64, k int) *Textbook {
	m = max((m+63)/64*64, 64)
	t := &Textbook{words: make([]uint64, m/64), m: m, k: k}
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

// Bits returns m, the filter's size in bits.
func (t *Textbook) Bits() uint64 { return t.m }

// K returns the number of probes a key.
func (t *Textbook) K() int { return t.k }

// MayContain reports whether the key with hash h may have been added.
func (t *Textbook) MayContain(h uint64) bool {
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
