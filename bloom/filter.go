package bloom

import (
	"fmt"

	"github.com/shale-db/shale/filter"
)

// Filter is a Bloom filter for use outside the engine, e.g. a blocklist in
// front of a slow service. It is the table filter's blocked layout, sized so
// that its own expected rate, not the textbook one, meets the rate asked for,
// and it encodes to the same bytes (format.go), so a table's filter can be
// loaded into a Filter and a marshalled Filter decoded by the table policy.
// Items are hashed with filter.Hash.
//
// Use New or UnmarshalBinary to make one. A Filter is not safe for
// concurrent use while items are added; concurrent MayContain calls are.
type Filter struct {
	bits bitset
	keys uint64 // items the filter was sized for
}

// New returns an empty filter whose expected false-positive rate, once it
// holds expectedItems items (at least 1), is at most falsePositiveRate. It
// panics unless 0 < falsePositiveRate < 1.
func New(expectedItems int, falsePositiveRate float64) *Filter {
	bitsPerKey, k := blockedSizing(falsePositiveRate)
	n := max(expectedItems, 1)
	return &Filter{bits: newBitset(linesFor(n, bitsPerKey), k), keys: uint64(n)}
}

// NewWithBitsPerKey returns an empty filter of bitsPerKey bits for each of
// expectedItems items (at least 1), rounded up to whole 512-bit lines, with
// the number of probes best for the blocked layout: the filter the table
// policy (NewPolicy) writes for a table of expectedItems keys. Where New
// starts from a rate, this starts from the memory, e.g. to measure the rate
// that 5, 10 or 15 bits per item buy. It panics unless 1 <= bitsPerKey <= 1024.
func NewWithBitsPerKey(expectedItems int, bitsPerKey float64) *Filter {
	if !(bitsPerKey >= 1 && bitsPerKey <= maxBitsPerKey) {
		panic(fmt.Sprintf("bloom: %v bits per key is not in [1, %d]", bitsPerKey, maxBitsPerKey))
	}
	n := max(expectedItems, 1)
	return &Filter{bits: newBitset(linesFor(n, bitsPerKey), blockedProbes(bitsPerKey)), keys: uint64(n)}
}

// Add adds item.
func (f *Filter) Add(item []byte) { f.bits.add(filter.Hash(item)) }

// MayContain reports false only if item was never added.
func (f *Filter) MayContain(item []byte) bool { return f.bits.MayContain(filter.Hash(item)) }

// K returns the number of probes per item.
func (f *Filter) K() int { return f.bits.k }

// BitsPerKey returns the filter's size in bits over the number of items it
// was sized for (+Inf for a table filter of an empty table).
func (f *Filter) BitsPerKey() float64 { return float64(8*len(f.bits.lines)) / float64(f.keys) }

// MarshalBinary returns the filter in the format at the top of format.go.
func (f *Filter) MarshalBinary() ([]byte, error) {
	t := trailer{keys: f.keys, lines: f.bits.numLines, k: f.bits.k, layout: layoutBits}
	return t.appendTo(append(make([]byte, 0, len(f.bits.lines)+trailerLen), f.bits.lines...)), nil
}

// UnmarshalBinary replaces f with the filter encoded in data, which it
// copies. Malformed data gives an error matching shale.ErrCorruption and
// leaves f unchanged.
func (f *Filter) UnmarshalBinary(data []byte) error {
	t, lines, err := parseTrailer(data, layoutBits, "bloom filter")
	if err != nil {
		return err
	}
	f.bits = bitset{lines: append([]byte(nil), lines...), numLines: t.lines, k: t.k}
	f.keys = t.keys
	return nil
}
