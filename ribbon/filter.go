package ribbon

import tablefilter "github.com/shale-db/shale/filter"

// Filter is a Ribbon filter for use outside the engine: a static set,
// built once from all its items, at any bits per key. It encodes to the
// table policy's format (ribbon.go), so a table's filter can be loaded
// into a Filter and a marshalled Filter decoded by the table policy. Items
// are hashed with tablefilter.Hash.
//
// Use New or UnmarshalBinary to make one. A Filter is safe for concurrent
// use.
type Filter struct {
	f    filter
	keys uint64
	data []byte // the encoded filter; f probes its solution in place
}

// New returns the filter of items at bitsPerKey bits per key (0..32), or
// an error matching ErrBuildFailed if no seed solves its system. Its
// false-positive rate is about 2^-(bitsPerKey/1.11) (TestRate). It panics
// if bitsPerKey is outside 0..32.
func New(items [][]byte, bitsPerKey float64) (*Filter, error) {
	checkBitsPerKey(bitsPerKey)
	hashes := make([]uint64, len(items))
	for i, item := range items {
		hashes[i] = tablefilter.Hash(item)
	}
	data, _, err := build(hashes, bitsPerKey)
	if err != nil {
		return nil, err
	}
	f, keys, err := parse(data, "ribbon filter")
	if err != nil {
		return nil, err // not reached: build writes what parse reads
	}
	return &Filter{f: f, keys: keys, data: data}, nil
}

// MayContain reports false only if item was not among the filter's items.
func (f *Filter) MayContain(item []byte) bool { return f.f.MayContain(tablefilter.Hash(item)) }

// Len returns the number of items the filter was built from.
func (f *Filter) Len() int { return int(f.keys) }

// BitsPerKey returns the size of the solution in bits over the number of
// items (+Inf for a filter of no items).
func (f *Filter) BitsPerKey() float64 { return float64(8*len(f.f.solution)) / float64(f.keys) }

// MarshalBinary returns the filter in the format at the top of ribbon.go.
func (f *Filter) MarshalBinary() ([]byte, error) { return append([]byte(nil), f.data...), nil }

// UnmarshalBinary replaces f with the filter encoded in data, which it
// copies. Malformed data gives an error matching shale.ErrCorruption and
// leaves f unchanged.
func (f *Filter) UnmarshalBinary(data []byte) error {
	data = append([]byte(nil), data...)
	p, keys, err := parse(data, "ribbon filter")
	if err != nil {
		return err
	}
	*f = Filter{f: p, keys: keys, data: data}
	return nil
}
