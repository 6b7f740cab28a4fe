// Package permutation gives the benchmarks (cmd/kvbench, and the peers
// module's runner) a random order of 0..n-1 computed on demand, so that a
// store of 100M keys does not carry an 800 MB table of its fill order in
// the memory being measured.
package permutation

import "math/bits"

// Permutation is a bijection of 0..n-1. It mixes x in the smallest
// power-of-two range that holds n with steps that are each a bijection of
// that range (adding the seed, multiplying by an odd number, xor-ing with a
// right shift), and walks the cycle until it lands below n.
type Permutation struct {
	n, mask, seed uint64
	shift         int
}

// New returns the permutation of 0..n-1 that seed chooses; n >= 1.
func New(n int, seed uint64) Permutation {
	b := max(bits.Len64(uint64(n-1)), 2)
	return Permutation{n: uint64(n), mask: 1<<b - 1, seed: seed, shift: (b + 1) / 2}
}

// At returns the i-th element of the order, 0 <= i < n.
func (p Permutation) At(i int) uint64 {
	x := uint64(i)
	for {
		for range 4 {
			x = (x + p.seed) & p.mask
			x = (x * 0xd1342543de82ef95) & p.mask
			x ^= x >> p.shift
		}
		if x < p.n {
			return x
		}
	}
}
