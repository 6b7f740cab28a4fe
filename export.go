package shale

import (
	"context"
	"fmt"

	"github.com/shale-db/shale/bloom"
)

// ExportFilter returns a standalone Bloom filter of every live key in
// [lower, upper) (a nil bound is unbounded), sized for false-positive rate p,
// and the number of keys it holds. It is how the owner of a list kept in the
// store (a denylist, say) ships that list to readers that only need to ask
// "is this key perhaps in it?": marshal the filter (bloom.Filter.MarshalBinary)
// and send the bytes; a reader checks the filter first and asks the store
// only when it says "maybe".
//
// The export reads one iterator, a consistent view of the store as it was
// when ExportFilter was called, in two passes: the first counts the keys, so
// that the filter is sized for exactly that many (bloom.New), and the second
// adds them. Writes made after the call began are not in the filter, and
// deleted keys are not either, since the iterator does not show them. Each
// key is read twice, so an export costs two scans of the range; the filter
// takes 9.9 bits a key at p = 0.01 (bloom.New says how it is sized).
//
// p must be in (0, 1). After Close it returns ErrClosed; a read error stops
// the export and is returned (ErrCorruption for damaged data).
func (db *DB) ExportFilter(lower, upper []byte, p float64) (f *bloom.Filter, keys int, err error) {
	return db.ExportFilterContext(context.Background(), lower, upper, p)
}

// ExportFilterContext is ExportFilter, stopped when ctx is done: it checks
// ctx between keys and then returns ctx's error (context.Canceled, say) and
// no filter.
func (db *DB) ExportFilterContext(ctx context.Context, lower, upper []byte, p float64) (f *bloom.Filter, keys int, err error) {
	if !(p > 0 && p < 1) {
		return nil, 0, fmt.Errorf("shale: ExportFilter: false-positive rate %v is not in (0, 1)", p)
	}
	it := db.NewIter(&IterOptions{LowerBound: lower, UpperBound: upper})
	defer func() {
		if cerr := it.Close(); err == nil && cerr != nil {
			f, keys, err = nil, 0, cerr
		}
	}()
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		keys++
	}
	if err := it.Error(); err != nil {
		return nil, 0, err
	}
	f = bloom.New(keys, p)
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		f.Add(it.Key())
	}
	if err := it.Error(); err != nil {
		return nil, 0, err
	}
	return f, keys, nil
}
