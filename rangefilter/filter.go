package rangefilter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Bits per key accepted by New.
const (
	MinBitsPerKey = 6
	MaxBitsPerKey = 40
	// DefaultBitsPerKey: a range of up to 16 values is a false positive
	// with probability at most 16/2^14 = 0.1%.
	DefaultBitsPerKey = 16
)

// maxCodes bounds r, the size of the code space: the hash's prime
// (2^61 - 1) must dwarf it for the codes to be nearly uniform, and a filter
// of more keys or bits than it allows answers as if it had fewer bits per key.
const maxCodes = 1 << 50

const mersenne61 = 1<<61 - 1

// Filter is a Grafite range filter over uint64 keys. The zero Filter holds
// no keys. A Filter is immutable and safe for concurrent use.
type Filter struct {
	// r is the size of the code space and the width of a hash block: key x
	// lies in block x/r and has code (q(x/r) + x%r) mod r. It is 0 in a
	// filter of no keys, whose codes are nil.
	r uint64
	// a and b choose q(y) = ((a*y + b) mod (2^61-1)) mod r, pairwise
	// independent over blocks.
	a, b  uint64
	codes *eliasFano // the distinct codes of the keys, sorted
}

// New builds a filter of keys (in any order, repeats allowed) at
// bitsPerKey bits per key, MinBitsPerKey to MaxBitsPerKey. seed chooses the
// hash; the false-positive bound holds for keys and queries chosen without
// knowing it.
func New(keys []uint64, bitsPerKey int, seed uint64) (*Filter, error) {
	if bitsPerKey < MinBitsPerKey || bitsPerKey > MaxBitsPerKey {
		return nil, fmt.Errorf("rangefilter: %d bits per key, want %d to %d", bitsPerKey, MinBitsPerKey, MaxBitsPerKey)
	}
	if len(keys) == 0 {
		return &Filter{}, nil
	}
	r := codeSpace(len(keys), bitsPerKey)
	s1, s2 := splitmix(seed), splitmix(seed+1)
	f := &Filter{r: r, a: s1%(mersenne61-1) + 1, b: s2 % mersenne61}
	codes := make([]uint64, len(keys))
	for i, x := range keys {
		codes[i] = f.code(x)
	}
	slices.Sort(codes)
	f.codes = newEliasFano(slices.Compact(codes), r)
	return f, nil
}

// codeSpace is r for n keys at bitsPerKey bits per key: n*2^(bitsPerKey-2),
// at most maxCodes.
func codeSpace(n, bitsPerKey int) uint64 {
	m := uint64(n)
	if m > maxCodes>>(bitsPerKey-2) {
		return maxCodes
	}
	return m << (bitsPerKey - 2)
}

// splitmix is SplitMix64's output function: it spreads a seed over 64 bits.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// code is the locality-preserving hash: keys of one block keep their
// distances (mod r), and the blocks are moved by independent offsets.
func (f *Filter) code(x uint64) uint64 {
	c := f.q(x/f.r) + x%f.r
	if c >= f.r {
		c -= f.r
	}
	return c
}

// q is the pairwise-independent hash of a block number y < 2^61 - 1 (r >=
// 16 makes every block number smaller).
func (f *Filter) q(y uint64) uint64 {
	hi, lo := bits.Mul64(f.a, y)
	lo, carry := bits.Add64(lo, f.b, 0)
	hi += carry
	// hi*2^64 + lo = (hi*8 + lo>>61)*2^61 + lo&p, and 2^61 = 1 mod p.
	v := lo&mersenne61 + (hi<<3 | lo>>61)
	v = v&mersenne61 + v>>61
	if v >= mersenne61 {
		v -= mersenne61
	}
	return v % f.r
}

// MayContain reports whether a key may lie in [lo, hi] (inclusive). false
// is certain: no key of the filter is there. true is a false positive with
// probability at most L/2^(B-2) for a range of L = hi-lo+1 values at B bits
// per key. An empty range (lo > hi) answers false; a range wider than
// MaxRange answers true.
func (f *Filter) MayContain(lo, hi uint64) bool {
	if f.codes == nil || lo > hi {
		return false
	}
	if hi-lo >= f.r {
		return true
	}
	if split := hi - hi%f.r; split > lo { // the range straddles two blocks
		return f.mayContainInBlock(lo, split-1) || f.mayContainInBlock(split, hi)
	}
	return f.mayContainInBlock(lo, hi)
}

// mayContainInBlock answers MayContain for a range within one block, whose
// codes are the interval [code(lo), code(hi)], wrapping around past r.
func (f *Filter) mayContainInBlock(lo, hi uint64) bool {
	clo, chi := f.code(lo), f.code(hi)
	if clo <= chi {
		return f.codes.anyIn(clo, chi)
	}
	return f.codes.anyIn(clo, f.r-1) || f.codes.anyIn(0, chi)
}

// MaxRange is the widest range, in values, that MayContain answers from the
// filter; wider ones answer "maybe". It is n*2^(B-2) for n keys at B bits
// per key (capped at 2^50), where the bound L/2^(B-2) reaches n anyway; 0
// for a filter of no keys, which answers "no" to every range.
func (f *Filter) MaxRange() uint64 { return f.r }

// SizeBytes is the memory the filter holds.
func (f *Filter) SizeBytes() int {
	if f.codes == nil {
		return 0
	}
	return f.codes.sizeBytes()
}

// Encoding versions of MarshalBinary.
const (
	formatVersion = 1 // a filter of keys
	formatEmpty   = 2 // a filter of no keys
)

const headerLen = 1 + 4*8

// MarshalBinary encodes the filter. A filter of no keys is one byte,
// version 2. A filter of keys is:
//
//	version  1 byte, = 1
//	n        uint64: distinct codes, at least 1
//	r        uint64: size of the code space, 16 to 2^50
//	a        uint64: 1 to 2^61-2
//	b        uint64: 0 to 2^61-2
//	low      ceil(n*l/64) uint64 words: the codes' low l bits, packed, where
//	         l = floor(log2(r/n)) (0 when r/n < 2)
//	high     ceil((n + (r-1)>>l + 1)/64) uint64 words: the high parts in
//	         unary, Elias-Fano style (see eliasFano); unused bits zero
//
// Integers are little-endian. The codes strictly increase and are below r.
// UnmarshalBinary also reads a filter of no keys in version 1, n = 0, as
// encoders before version 2 wrote it: its high words are r/64 zero words.
func (f *Filter) MarshalBinary() ([]byte, error) {
	codes := f.codes
	if codes == nil {
		return []byte{formatEmpty}, nil
	}
	out := make([]byte, 0, headerLen+8*(len(codes.low)+len(codes.high)))
	out = append(out, formatVersion)
	for _, v := range []uint64{codes.n, f.r, f.a, f.b} {
		out = binary.LittleEndian.AppendUint64(out, v)
	}
	for _, w := range codes.low {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	for _, w := range codes.high {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	return out, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded, refusing any other
// bytes with an error.
func (f *Filter) UnmarshalBinary(data []byte) error {
	if len(data) == 1 && data[0] == formatEmpty {
		*f = Filter{}
		return nil
	}
	if len(data) > 0 && data[0] != formatVersion {
		return fmt.Errorf("rangefilter: format version %d, want %d or %d", data[0], formatVersion, formatEmpty)
	}
	if len(data) < headerLen {
		return fmt.Errorf("rangefilter: %d bytes, too short for a filter", len(data))
	}
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(data[1+8*i:]) }
	n, r, a, b := word(0), word(1), word(2), word(3)
	switch {
	case r < 16 || r > maxCodes:
		return fmt.Errorf("rangefilter: code space %d, want 16 to 2^50", r)
	case n > r:
		return fmt.Errorf("rangefilter: %d distinct codes in a space of %d", n, r)
	case a == 0 || a >= mersenne61 || b >= mersenne61:
		return errors.New("rangefilter: hash parameters out of range")
	}
	lowBits, highLen := efShape(n, r)
	nLow, nHigh := (n*uint64(lowBits)+63)/64, (highLen+63)/64
	if uint64(len(data)-headerLen) != 8*(nLow+nHigh) {
		return fmt.Errorf("rangefilter: %d bytes of codes, want %d", len(data)-headerLen, 8*(nLow+nHigh))
	}
	if n == 0 { // version 1's filter of no keys
		if slices.ContainsFunc(data[headerLen:], func(c byte) bool { return c != 0 }) {
			return errors.New("rangefilter: a filter of no codes has bits set")
		}
		*f = Filter{}
		return nil
	}
	words := make([]uint64, nLow+nHigh)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(data[headerLen+8*i:])
	}
	codes, err := decodeEliasFano(n, r, words[:nLow:nLow], words[nLow:])
	if err != nil {
		return err
	}
	*f = Filter{r: r, a: a, b: b, codes: codes}
	return nil
}
