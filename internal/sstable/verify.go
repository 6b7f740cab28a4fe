package sstable

import (
	"errors"

	"github.com/shale-db/shale/internal/base"
)

// Verify reads every data block of the table from the file (not the cache),
// in the order of the index and with the sequential reads of a scan
// (NewScanIter), and checks what reads rely on: each block's
// checksum and encoding, that every key is an internal key of a known kind,
// that keys strictly increase across the whole table, that each block's keys
// are at most its index separator and above the previous block's, and that
// the entries agree with the properties (count, first and last key).
//
// A damaged block is skipped and the scan goes on with the next one, so
// problems lists every damaged block: each a *base.CorruptionError naming
// the file and the block's offset. keep, when not nil, is called with every
// entry that decodes and is of a known kind, in file order (even when the
// entries are out of order, which is itself reported); key and value are
// valid only during the call. err is an error reading the file, which ends
// the scan.
func (r *Reader) Verify(keep func(key base.InternalKey, value []byte)) (problems []error, err error) {
	var index, data blockIter
	scan := newScanReader(r, ScanReadaheadMax)
	if err := index.init(r.name, r.indexOffset, r.index); err != nil {
		return []error{err}, nil
	}
	var (
		prev, first base.InternalKey // prev's UserKey is a buffer we own
		prevSep     base.InternalKey
		haveSep     bool
		entries     uint64
		corrupt     = func(off uint64, format string, args ...any) {
			problems = append(problems, base.CorruptionErrorf(r.name, int64(off), format, args...))
		}
	)
	for ok := index.First(); ok; ok = index.Next() {
		sep, ok := index.internalKey()
		if !ok {
			break // index.err is reported below
		}
		h, n := decodeHandle(index.val)
		if n == 0 || n != len(index.val) {
			problems = append(problems, index.corrupt("bad block handle in index entry at block offset %d", index.offset))
			break
		}
		if haveSep && base.Compare(sep, prevSep) <= 0 {
			corrupt(uint64(r.indexOffset), "index separators out of order at block offset %d", index.offset)
		}
		prevSep, haveSep = sep.Clone(), true
		b, err := scan.block(h)
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				return problems, err
			}
			problems = append(problems, err)
			continue
		}
		if err := data.init(r.name, int64(h.offset), b); err != nil {
			problems = append(problems, err)
			continue
		}
		for ok := data.First(); ok; ok = data.Next() {
			k, ok := data.internalKey()
			if !ok {
				break
			}
			switch {
			case k.Kind() > base.KindMax:
				corrupt(h.offset, "key %s is of an unknown kind", k)
				continue
			case entries > 0 && base.Compare(k, prev) <= 0:
				corrupt(h.offset, "key %s does not follow %s", k, prev)
			case base.Compare(k, sep) > 0:
				corrupt(h.offset, "key %s is past the block's index separator %s", k, sep)
			}
			if entries == 0 {
				first = k.Clone()
			}
			entries++
			prev = base.InternalKey{UserKey: append(prev.UserKey[:0], k.UserKey...), Trailer: k.Trailer}
			if keep != nil {
				keep(k, data.val)
			}
		}
		if data.err != nil {
			problems = append(problems, data.err)
		}
	}
	if index.err != nil {
		problems = append(problems, index.err)
	}
	if len(problems) > 0 {
		return problems, nil // the comparisons below would only repeat them
	}
	p := r.props
	// The bounds the entries and tombstones give, computed as the writer
	// does.
	want := Properties{NumEntries: entries, Smallest: first, Largest: prev}
	want.addRangeDelBounds(r.rangeDels)
	switch {
	case entries != p.NumEntries:
		corrupt(uint64(r.indexOffset), "the data blocks hold %d entries, the properties say %d", entries, p.NumEntries)
	case !want.empty() && (base.Compare(want.Smallest, p.Smallest) != 0 || base.Compare(want.Largest, p.Largest) != 0):
		corrupt(uint64(r.indexOffset), "the keys and range tombstones run from %s to %s, the properties say %s to %s", want.Smallest, want.Largest, p.Smallest, p.Largest)
	}
	return problems, nil
}
