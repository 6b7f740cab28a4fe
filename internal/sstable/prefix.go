package sstable

import "github.com/shale-db/shale/filter"

// prefixSalt sets prefix hashes apart from key hashes (see the format).
const prefixSalt = 0x9e3779b97f4a7c15

// PrefixHash is what a table's filter holds for a prefix: filter.Hash of
// it, XOR a constant, so that a prefix and a key of the same bytes are
// different entries.
func PrefixHash(prefix []byte) uint64 { return filter.Hash(prefix) ^ prefixSalt }

// MayContainPrefix reports whether the table may hold a key with prefix p,
// as its filter says, when the table's filter holds the prefixes of the
// extractor named extractor; checked reports whether it does (otherwise may
// is true). The caller must know that every key starting with p has p as
// its prefix under that extractor: then a "definitely not" is sound. The
// table's range tombstones are not in the filter and still apply.
func (r *Reader) MayContainPrefix(extractor string, p []byte) (checked, may bool) {
	if r.filter == nil || extractor == "" || r.props.PrefixExtractor != extractor {
		return false, true
	}
	r.stats.PrefixChecks.Add(1)
	if !r.filter.MayContain(PrefixHash(p)) {
		r.stats.PrefixSkips.Add(1)
		return true, false
	}
	return true, true
}
