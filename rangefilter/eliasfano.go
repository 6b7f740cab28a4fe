package rangefilter

import (
	"errors"
	"fmt"
	"math/bits"
)

// eliasFano holds a strictly increasing sequence of n integers below a
// bound u in about n(2 + log2(u/n)) bits (Elias 1974, Fano 1971): each value
// v is split into its low l = floor(log2(u/n)) bits, stored packed, and its
// high part v>>l, stored in unary in a bit vector where the i-th value
// (from 0) sets bit (v>>l) + i. The zeros of that vector mark where each high
// part begins, so the first value >= x is found by counting zeros, which
// zeroSamples speeds up; they are rebuilt on decoding, not stored.
type eliasFano struct {
	n       uint64
	lowBits uint
	low     []uint64 // n fields of lowBits bits, little-endian within words
	high    []uint64 // highLen bits; the bits past highLen are zero
	highLen uint64
	// zeroSamples[k] is the position in high of zero number k*zeroSampleRate
	// (counting from 0).
	zeroSamples []uint64
}

const zeroSampleRate = 256

// efShape returns the low-bit width and high-vector length for n values
// below u.
func efShape(n, u uint64) (lowBits uint, highLen uint64) {
	if n > 0 && u/n > 1 {
		lowBits = uint(bits.Len64(u/n) - 1)
	}
	return lowBits, n + (u-1)>>lowBits + 1
}

// newEliasFano encodes values, which must strictly increase and be below u.
func newEliasFano(values []uint64, u uint64) *eliasFano {
	n := uint64(len(values))
	e := &eliasFano{n: n}
	e.lowBits, e.highLen = efShape(n, u)
	e.low = make([]uint64, (n*uint64(e.lowBits)+63)/64)
	e.high = make([]uint64, (e.highLen+63)/64)
	mask := uint64(1)<<e.lowBits - 1
	for i, v := range values {
		putBits(e.low, uint64(i)*uint64(e.lowBits), e.lowBits, v&mask)
		p := v>>e.lowBits + uint64(i)
		e.high[p/64] |= 1 << (p % 64)
	}
	e.sampleZeros()
	return e
}

// decodeEliasFano rebuilds the sequence of n values below u from its low
// and high words, refusing words that do not encode a strictly increasing
// sequence below u.
func decodeEliasFano(n, u uint64, low, high []uint64) (*eliasFano, error) {
	e := &eliasFano{n: n, low: low, high: high}
	e.lowBits, e.highLen = efShape(n, u)
	if uint64(len(low)) != (n*uint64(e.lowBits)+63)/64 || uint64(len(high)) != (e.highLen+63)/64 {
		return nil, errors.New("rangefilter: code words have the wrong length")
	}
	if r := n * uint64(e.lowBits) % 64; r != 0 && low[len(low)-1]>>r != 0 {
		return nil, errors.New("rangefilter: padding bits set in low words")
	}
	if r := e.highLen % 64; r != 0 && high[len(high)-1]>>r != 0 {
		return nil, errors.New("rangefilter: padding bits set in high words")
	}
	ones := uint64(0)
	for _, w := range high {
		ones += uint64(bits.OnesCount64(w))
	}
	if ones != n {
		return nil, fmt.Errorf("rangefilter: high words hold %d values, want %d", ones, n)
	}
	e.sampleZeros()
	// Walk the values once: they must strictly increase and stay below u.
	pos, prev := uint64(0), uint64(0)
	for i := uint64(0); i < n; i++ {
		pos = e.nextOne(pos)
		v := e.value(i, pos)
		if v >= u || (i > 0 && v <= prev) {
			return nil, fmt.Errorf("rangefilter: value %d out of order or not below %d", i, u)
		}
		prev = v
		pos++
	}
	return e, nil
}

func (e *eliasFano) sampleZeros() {
	e.zeroSamples = e.zeroSamples[:0]
	zeros := uint64(0)
	for p := uint64(0); p < e.highLen; p++ {
		if e.high[p/64]&(1<<(p%64)) == 0 {
			if zeros%zeroSampleRate == 0 {
				e.zeroSamples = append(e.zeroSamples, p)
			}
			zeros++
		}
	}
}

// value returns the i-th value, whose one bit is at pos in high.
func (e *eliasFano) value(i, pos uint64) uint64 {
	return (pos-i)<<e.lowBits | getBits(e.low, i*uint64(e.lowBits), e.lowBits)
}

// nextOne returns the position of the first one bit at or after pos; there
// must be one.
func (e *eliasFano) nextOne(pos uint64) uint64 {
	i := pos / 64
	w := e.high[i] &^ (1<<(pos%64) - 1)
	for w == 0 {
		i++
		w = e.high[i]
	}
	return i*64 + uint64(bits.TrailingZeros64(w))
}

// selectZero returns the position in high of zero number k (from 0); there
// must be one.
func (e *eliasFano) selectZero(k uint64) uint64 {
	pos := e.zeroSamples[k/zeroSampleRate]
	k %= zeroSampleRate
	i := pos / 64
	w := ^e.high[i] &^ (1<<(pos%64) - 1) // the zeros at or after pos
	for c := uint64(bits.OnesCount64(w)); k >= c; c = uint64(bits.OnesCount64(w)) {
		k -= c
		i++
		w = ^e.high[i]
	}
	for ; k > 0; k-- {
		w &= w - 1
	}
	return i*64 + uint64(bits.TrailingZeros64(w))
}

// anyIn reports whether some value lies in [lo, hi]; lo <= hi < u.
func (e *eliasFano) anyIn(lo, hi uint64) bool {
	h := lo >> e.lowBits
	// The values with high part >= h start after zero number h-1.
	pos := uint64(0)
	if h > 0 {
		pos = e.selectZero(h-1) + 1
	}
	for i := pos - h; i < e.n; i++ {
		pos = e.nextOne(pos)
		if v := e.value(i, pos); v >= lo {
			return v <= hi
		}
		pos++
	}
	return false
}

// sizeBytes is the memory the sequence holds.
func (e *eliasFano) sizeBytes() int {
	return 8 * (len(e.low) + len(e.high) + len(e.zeroSamples))
}

// putBits stores the width low bits of v at bit offset pos of words, which
// must be zero there.
func putBits(words []uint64, pos uint64, width uint, v uint64) {
	if width == 0 {
		return
	}
	i, off := pos/64, uint(pos%64)
	words[i] |= v << off
	if off+width > 64 {
		words[i+1] |= v >> (64 - off)
	}
}

// getBits returns the width bits at bit offset pos of words.
func getBits(words []uint64, pos uint64, width uint) uint64 {
	if width == 0 {
		return 0
	}
	i, off := pos/64, uint(pos%64)
	v := words[i] >> off
	if off+width > 64 {
		v |= words[i+1] << (64 - off)
	}
	return v & (1<<width - 1)
}
