package ribbon

import tablefilter "github.com/shale-db/shale/filter"

// PolicyName is the name of the table filter format, written into every
// table that carries one. Stable forever.
const PolicyName = "shale.ribbon.v1"

// NewPolicy returns the table filter policy of Ribbon filters at bitsPerKey
// bits per key (0..32, any fraction), in the format at the top of
// ribbon.go. Its Decode reads a filter of that format written at any bits
// per key. It panics if bitsPerKey is outside 0..32.
//
// While a table is written, its writer holds 8 bytes a key (the hashes),
// and Finish about 21 more besides the filter itself (the keys' mixed
// hashes, 8 bytes a key, and the banded system, 12 bytes a slot at about
// 1.1 slots a key): about 30 bytes a key in all.
func NewPolicy(bitsPerKey float64) tablefilter.Policy {
	checkBitsPerKey(bitsPerKey)
	return policy{bitsPerKey: bitsPerKey}
}

type policy struct{ bitsPerKey float64 }

// Name returns PolicyName.
func (policy) Name() string { return PolicyName }

// NewWriter returns a writer of one filter.
func (p policy) NewWriter() tablefilter.Writer { return &writer{policy: p} }

// Decode checks the header of data against its length and returns a filter
// that probes data in place; data must not change while the filter is used.
func (policy) Decode(data []byte) (tablefilter.Filter, error) {
	f, _, err := parse(data, "ribbon filter")
	if err != nil {
		return nil, err
	}
	return f, nil
}

// writer collects hashes until Finish.
type writer struct {
	policy
	hashes tablefilter.HashList
}

// AddHash adds the hash of a key. A hash equal to the one added just before
// is dropped; other repeats cancel out in the build.
func (w *writer) AddHash(h uint64) { w.hashes.Add(h) }

// Finish returns the encoded filter, or an error matching ErrBuildFailed
// if no seed solves its system (the table is then written without a
// filter).
func (w *writer) Finish() ([]byte, error) {
	data, _, err := build(w.hashes, w.bitsPerKey)
	w.hashes.Release()
	return data, err
}
