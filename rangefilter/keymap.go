package rangefilter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// KeyMap maps the byte-string keys of one set (a table's) to integers,
// densely and in order. It drops the keys' common prefix and reads each of
// the next positions as a digit in the alphabet of the byte values that
// occur there among the keys (plus "the key has ended", lowest, when a key
// is that short). A key maps to its mixed-radix rank: decimal keys of equal
// length in which every digit occurs at each position map to their numeric
// value, and n consecutive keys to a range of about n integers, where taking their bytes as a big-endian number would
// spread them over a range up to 2^(8*length) wide.
//
// The window of positions read ends before the number of ranks (the
// product of the alphabets' sizes) would exceed a bound the builder is
// given. Builder gives the filter's code space, n*2^(B-2) for n keys at B
// bits per key: with no more ranks than that, the filter holds every rank
// without a hash collision, and each further position would multiply the
// width of every query's image, and with it the false-positive bound, by
// its alphabet's size. Bytes past the window are ignored: keys that differ
// only there map to one integer, which costs false positives (the filter
// cannot tell them apart, and a query near them sees them all) and never a
// false negative. Keys whose differing bytes lie within the window, such as
// decimal keys of up to log10(n*2^(B-2)) significant digits after their
// common prefix, map exactly.
//
// Any string, in the set or not, has a floor (the largest rank of a key
// shape at or below it) and a ceiling; Range maps query bounds by them, so
// that no key of the set in the byte range falls outside the integer range.
type KeyMap struct {
	prefix []byte
	digits []digit // the window, from the first position after prefix
}

// digit is the alphabet of one position.
type digit struct {
	set   [4]uint64 // the byte values that occur
	end   bool      // some key ends before the position: digit 0
	radix uint64    // the alphabet's size: popcount(set) + end
}

// rank returns c's digit value: the number of alphabet symbols below it,
// and whether c is in the alphabet. c < 0 is the end of the key.
func (d *digit) rank(c int) (uint64, bool) {
	if c < 0 {
		return 0, d.end
	}
	n := uint64(0)
	if d.end {
		n = 1
	}
	w, bit := c/64, uint(c%64)
	for i := range w {
		n += uint64(bits.OnesCount64(d.set[i]))
	}
	n += uint64(bits.OnesCount64(d.set[w] & (1<<bit - 1)))
	return n, d.set[w]&(1<<bit) != 0
}

// KeyMapBuilder collects the keys of a set to build its KeyMap.
type KeyMapBuilder struct {
	n      int
	prefix []byte      // the common prefix of the keys so far
	minLen int         // the shortest key's length
	sets   [][4]uint64 // the byte values seen at each position
}

// Add adds a key; the keys may come in any order, and repeat. The builder
// keeps no reference to key.
func (b *KeyMapBuilder) Add(key []byte) {
	if b.n == 0 {
		b.prefix = append(b.prefix[:0], key...)
		b.minLen = len(key)
	} else {
		i := 0
		for i < len(b.prefix) && i < len(key) && b.prefix[i] == key[i] {
			i++
		}
		b.prefix = b.prefix[:i]
		b.minLen = min(b.minLen, len(key))
	}
	b.n++
	for len(b.sets) < len(key) {
		b.sets = append(b.sets, [4]uint64{})
	}
	for i, c := range key {
		b.sets[i][c/64] |= 1 << (c % 64)
	}
}

// Finish returns the KeyMap of the keys added, whose window ends before
// the number of ranks would exceed maxRanks (or 2^64 - 2).
func (b *KeyMapBuilder) Finish(maxRanks uint64) *KeyMap {
	m := &KeyMap{prefix: bytes.Clone(b.prefix)}
	product := uint64(1)
	for pos := len(b.prefix); pos < len(b.sets); pos++ {
		d := digit{set: b.sets[pos], end: pos >= b.minLen}
		d.radix = d.count()
		hi, lo := bits.Mul64(product, d.radix)
		if hi != 0 || lo > maxRanks || lo == 1<<64-1 { // ranks() and ceil's "none" must fit
			break
		}
		product = lo
		m.digits = append(m.digits, d)
	}
	return m
}

func (d *digit) count() uint64 {
	n := uint64(0)
	if d.end {
		n = 1
	}
	for _, w := range d.set {
		n += uint64(bits.OnesCount64(w))
	}
	return n
}

// Map returns the integer a key of the set maps to (for any other string,
// its ceiling).
func (m *KeyMap) Map(key []byte) uint64 {
	r, _, _ := m.ceil(key)
	return r
}

// Range returns the integer range [a, b] that holds the image of every key
// of the set in the byte range [lo, hi) (hi excluded), or ok = false when
// no key of the set can lie in it. This is also the clamping of the query
// to the set's smallest and largest keys, done on ranks: lo and hi may lie
// anywhere. The image of [lo, hi) may be [a, b] with a > b, for example
// when both lie between two key shapes: ok is then false.
func (m *KeyMap) Range(lo, hi []byte) (a, b uint64, ok bool) {
	if bytes.Compare(lo, hi) >= 0 {
		return 0, 0, false
	}
	a, _, _ = m.ceil(lo)
	b, exact, truncated := m.ceil(hi)
	// A key below hi has a rank below b, unless hi's shape is exact and
	// cut off by the window: then keys below hi may share it.
	if !exact || !truncated {
		if b == 0 {
			return 0, 0, false
		}
		b--
	}
	if a > b {
		return 0, 0, false
	}
	return a, b, true
}

// ranks is the number of key shapes: the product of the radices, which
// Finish keeps below 2^64.
func (m *KeyMap) ranks() uint64 {
	p := uint64(1)
	for _, d := range m.digits {
		p *= d.radix
	}
	return p
}

// ceil returns the smallest rank whose key shape is >= s (ranks() when
// none is), whether s has that shape within the window, and whether s
// runs past the window. The carry of a byte above every symbol of its
// position is the arithmetic's: rank*radix + radix.
func (m *KeyMap) ceil(s []byte) (rank uint64, exact, truncated bool) {
	n := min(len(s), len(m.prefix))
	switch c := bytes.Compare(s[:n], m.prefix[:n]); {
	case c < 0 || (c == 0 && len(s) < len(m.prefix)):
		return 0, false, false // below every shape
	case c > 0:
		return m.ranks(), false, false // above every shape
	}
	rest := s[len(m.prefix):]
	truncated = len(rest) > len(m.digits)
	exact = true
	for i := range m.digits {
		d := &m.digits[i]
		v := uint64(0)
		if exact { // after the first symbol outside its alphabet, digits are 0
			sym := -1
			if i < len(rest) {
				sym = int(rest[i])
			}
			v, exact = d.rank(sym)
		}
		rank = rank*d.radix + v
	}
	return rank, exact, truncated
}

// MarshalBinary encodes the map:
//
//	prefix_len  uvarint
//	prefix      prefix_len bytes: the keys' common prefix
//	digits      uvarint: the window's positions
//	per position:
//	  flags     1 byte: 1 if "the key has ended" is in the alphabet, else 0
//	  set       32 bytes: 4 little-endian uint64, bit c%64 of word c/64 set
//	            when byte value c is in the alphabet
//
// Every alphabet is non-empty, and the product of their sizes is below
// 2^64 - 1.
func (m *KeyMap) MarshalBinary() ([]byte, error) {
	out := binary.AppendUvarint(nil, uint64(len(m.prefix)))
	out = append(out, m.prefix...)
	out = binary.AppendUvarint(out, uint64(len(m.digits)))
	for _, d := range m.digits {
		flags := byte(0)
		if d.end {
			flags = 1
		}
		out = append(out, flags)
		for _, w := range d.set {
			out = binary.LittleEndian.AppendUint64(out, w)
		}
	}
	return out, nil
}

const digitLen = 1 + 32

// UnmarshalBinary decodes what MarshalBinary encoded, refusing any other
// bytes with an error.
func (m *KeyMap) UnmarshalBinary(data []byte) error {
	plen, n := binary.Uvarint(data)
	if n <= 0 || plen > uint64(len(data)-n) {
		return errors.New("rangefilter: key map prefix overruns the data")
	}
	prefix := bytes.Clone(data[n : n+int(plen)])
	data = data[n+int(plen):]
	count, n := binary.Uvarint(data)
	if n <= 0 || count > uint64(len(data)-n)/digitLen || uint64(len(data)-n) != count*digitLen {
		return errors.New("rangefilter: key map positions do not fill the data")
	}
	data = data[n:]
	digits := make([]digit, count)
	product := uint64(1)
	for i := range digits {
		d := &digits[i]
		switch data[0] {
		case 0:
		case 1:
			d.end = true
		default:
			return fmt.Errorf("rangefilter: key map position %d has flags %#x", i, data[0])
		}
		for j := range d.set {
			d.set[j] = binary.LittleEndian.Uint64(data[1+8*j:])
		}
		data = data[digitLen:]
		d.radix = d.count()
		hi, lo := bits.Mul64(product, d.radix)
		if d.radix == 0 || hi != 0 || lo == 1<<64-1 {
			return fmt.Errorf("rangefilter: key map position %d: empty alphabet, or the window overflows 64 bits", i)
		}
		product = lo
	}
	*m = KeyMap{prefix: prefix, digits: digits}
	return nil
}
