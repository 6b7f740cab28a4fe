package ribbon

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/shale-db/shale/internal/base"
)

const (
	maxAttempts     = 32 // seeds tried before giving up
	attemptsPerSize = 4  // seeds tried at one size before the slack grows
)

// MaxBitsPerKey is the most bits per key a filter takes (New, NewPolicy):
// one per bit of the fingerprint.
const MaxBitsPerKey = maxColumns

// checkBitsPerKey panics unless 0 ≤ bitsPerKey ≤ MaxBitsPerKey.
func checkBitsPerKey(bitsPerKey float64) {
	if !(bitsPerKey >= 0 && bitsPerKey <= MaxBitsPerKey) {
		panic(fmt.Sprintf("ribbon: %v bits per key, want 0..%d", bitsPerKey, MaxBitsPerKey))
	}
}

// build returns the encoded filter of hashes at bitsPerKey and the number
// of seeds it tried. Each failed attempt tries the next seed, and every
// attemptsPerSize failures the slack grows by half its first size, which
// makes the system easier to solve (at a slightly higher false-positive
// rate, the same bits being spread over more slots). A hash repeated in
// hashes gives a row that cancels out and costs nothing.
func build(hashes []uint64, bitsPerKey float64) ([]byte, int, error) {
	return buildWithSlack(hashes, bitsPerKey, slack(len(hashes)))
}

// buildWithSlack is build with the first attempts' slack given.
func buildWithSlack(hashes []uint64, bitsPerKey, firstSlack float64) ([]byte, int, error) {
	if len(hashes) == 0 {
		return encode(shape{}, 0, 0), 0, nil
	}
	if len(hashes) > maxKeys {
		return nil, 0, fmt.Errorf("%w: %d keys, more than the %d a filter holds", ErrBuildFailed, len(hashes), maxKeys)
	}
	var b builder
	for attempt := range maxAttempts {
		grow := 1 + 0.5*float64(attempt/attemptsPerSize)
		s := shapeFor(len(hashes), bitsPerKey, grow*firstSlack)
		seed := base.FilterSeed(attempt)
		if b.band(s, seed, hashes) {
			data := encode(s, seed, uint64(len(hashes)))
			b.solve(s, data[headerLen:])
			return data, attempt + 1, nil
		}
	}
	return nil, maxAttempts, fmt.Errorf("%w: %d keys, %d seeds", ErrBuildFailed, len(hashes), maxAttempts)
}

// encode returns the header of a filter of shape s, seed and n keys,
// followed by a solution of zeros.
func encode(s shape, seed, n uint64) []byte {
	buf := make([]byte, headerLen+8*s.words())
	buf[0] = version
	binary.LittleEndian.PutUint64(buf[1:], seed)
	binary.LittleEndian.PutUint64(buf[9:], n)
	binary.LittleEndian.PutUint32(buf[17:], s.blocks)
	buf[21] = s.columns
	binary.LittleEndian.PutUint32(buf[22:], s.upper)
	return buf
}

// builder holds the scratch space of build attempts, 20 bytes a key and 12
// a slot: the banded system, one row per slot at most, in which the row
// held at slot i has its first coefficient at i (bit 0 of coeff[i]) and its
// last at most 63 slots on; and the keys' mixed hashes, in the order of
// their start blocks.
type builder struct {
	coeff []uint64 // 0: no row has its first coefficient here (yet)
	rhs   []uint32 // the row's right-hand side: a fingerprint, or the XOR of several
	as    []uint64 // mix(h + seed) of each key, ordered by start block
	next  []int    // next[b]: where the next key of start block b goes in as
}

// band adds the rows of hashes to an empty system of shape s, eliminating
// as it goes (Gaussian elimination on the fly, as in the Ribbon paper):
// a row whose first slot is taken is XORed with the row there, which
// moves its first coefficient further on, until it finds a free slot. It
// reports false if a row cancels out entirely but for its right-hand side:
// the system has no solution for this seed.
//
// The rows are added in the order of their start blocks (a counting sort),
// so that the elimination sweeps the system from one end to the other
// instead of jumping about it.
func (b *builder) band(s shape, seed uint64, hashes []uint64) bool {
	b.coeff = resize(b.coeff, s.slots())
	b.rhs = resize(b.rhs, s.slots())
	starts := s.starts()
	b.next = resize(b.next, int(s.blocks)+1)
	for _, h := range hashes {
		start, _, _ := rowOf(base.Mix64(h+seed), starts)
		b.next[start/64+1]++
	}
	for i := 1; i < len(b.next); i++ {
		b.next[i] += b.next[i-1]
	}
	b.as = resize(b.as, len(hashes))
	for _, h := range hashes {
		a := base.Mix64(h + seed)
		start, _, _ := rowOf(a, starts)
		b.as[b.next[start/64]] = a
		b.next[start/64]++
	}

	for _, a := range b.as {
		start, c, fp := rowOf(a, starts)
		for {
			if b.coeff[start] == 0 {
				b.coeff[start], b.rhs[start] = c, fp
				break
			}
			c ^= b.coeff[start]
			fp ^= b.rhs[start]
			if c == 0 {
				if fp != 0 {
					return false
				}
				break // the same key again: nothing to add
			}
			// Both rows had bit 0 set, so c's first coefficient moved on.
			tz := bits.TrailingZeros64(c)
			start += tz
			c >>= tz
		}
	}
	return true
}

// solve writes the solution of the banded system into out (the words after
// the header), column by column, by back-substitution from the last slot
// down: the bit of a slot that holds a row is what makes that row's parity
// its right-hand side, given the bits above it; a free slot's bit is 0. A
// column stops at the first block that does not have it: the keys checked
// against the column start at or above that block, and the rows their
// elimination used all have their first slot at or above their start.
func (b *builder) solve(s shape, out []byte) {
	for j := range int(s.columns) + 1 {
		first := uint32(0)
		if j == int(s.columns) {
			first = s.upper
		}
		var window uint64 // bit k: the solution at slot i+1+k
		for i := s.slots() - 1; i >= 64*int(first); i-- {
			var bit uint64
			if c := b.coeff[i]; c != 0 {
				bit = uint64(b.rhs[i]>>j^uint32(bits.OnesCount64(c>>1&window))) & 1
			}
			window = window<<1 | bit
			if i%64 == 0 {
				w := s.wordOf(uint32(i/64)) + j
				binary.LittleEndian.PutUint64(out[8*w:], window)
			}
		}
	}
}

// resize returns s with length n, all zero, reusing its memory if it can.
func resize[T int | uint32 | uint64](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
