package bloom

import (
	"fmt"

	"github.com/shale-db/shale/filter"
)

// PolicyName is the name of the table filter format, written into every
// table that carries one. Stable forever.
const PolicyName = "shale.bloom.v1"

// NewPolicy returns the table filter policy: blocked Bloom filters at
// bitsPerKey bits per key, with the number of probes best for that layout
// (blockedProbes: 6 at 10 bits per key), in the format at the top of
// format.go. Its Decode reads a filter of that format written at any bits
// per key. It panics if bitsPerKey < 1.
func NewPolicy(bitsPerKey int) filter.Policy {
	if bitsPerKey < 1 {
		panic(fmt.Sprintf("bloom: %d bits per key", bitsPerKey))
	}
	return policy{bitsPerKey: bitsPerKey, k: blockedProbes(float64(bitsPerKey))}
}

type policy struct {
	bitsPerKey int
	k          int
}

// Name returns PolicyName.
func (policy) Name() string { return PolicyName }

// NewWriter returns a writer of one filter.
func (p policy) NewWriter() filter.Writer { return &writer{policy: p} }

// Decode checks the trailer of data against its length and returns a filter
// that probes data in place; data must not change while the filter is used.
func (policy) Decode(data []byte) (filter.Filter, error) {
	t, lines, err := parseTrailer(data, layoutBits, "bloom filter")
	if err != nil {
		return nil, err
	}
	return bitset{lines: lines, numLines: t.lines, k: t.k}, nil
}

// writer collects hashes until Finish, which sizes the filter for the number
// of distinct hashes.
type writer struct {
	policy
	hashes filter.HashList
}

// AddHash adds the hash of a key. A hash equal to the one added just before
// is dropped: a table adds its keys in order, so the versions of one user key
// arrive back to back and count once. A repeat that is not adjacent sets the
// same bits again, so the filter stays exact, but it counts toward the size.
func (w *writer) AddHash(h uint64) { w.hashes.Add(h) }

// Finish returns the encoded filter: at least one line, even for no keys.
// It never fails.
func (w *writer) Finish() ([]byte, error) {
	b := newBitset(linesFor(len(w.hashes), float64(w.bitsPerKey)), w.k)
	for _, h := range w.hashes {
		b.add(h)
	}
	t := trailer{keys: uint64(len(w.hashes)), lines: b.numLines, k: b.k, layout: layoutBits}
	w.hashes.Release()
	return t.appendTo(b.lines), nil
}
