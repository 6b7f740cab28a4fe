package shale

import (
	"bytes"
	"fmt"
	"strconv"
)

// PrefixExtractor maps each key to its prefix, for prefix filters: with
// Options.Prefix set, every new table's filter also holds the prefix of each
// of its keys, and an iterator limited to one prefix (IterOptions.Prefix)
// skips, before reading any block, every table whose filter says no key has
// it. RocksDB's prefix extractor and Pebble's Split play this part.
//
// The skip is sound only for a prefix p that every key starting with p maps
// to, so an iterator consults the filters only when Length(p) == len(p), and
// Length must keep that promise: if Length(p) == len(p), then Length(k) ==
// len(p) for every key k that starts with p. FixedPrefix keeps it.
type PrefixExtractor struct {
	// Name identifies Length. Every table records the name of the extractor
	// it was written with, and its prefixes are consulted only while the
	// store's extractor has that name, so the name must change whenever
	// Length does (a table's filter would otherwise lack the new
	// prefixes, and a scan would miss keys).
	Name string
	// Length returns the length of key's prefix, 0 to len(key); 0 means the
	// key has no prefix (and a result outside that range is taken as 0).
	Length func(key []byte) int
}

// FixedPrefix returns the extractor whose prefix is a key's first n bytes,
// named "fixed:N"; n < 1 gives nil, no extractor. A key shorter than n has
// no prefix: were it its own prefix, a scan of that short prefix would also
// cover the longer keys that start with it, whose prefixes are their first
// n bytes, and their tables could be skipped wrongly.
func FixedPrefix(n int) *PrefixExtractor {
	if n < 1 {
		return nil
	}
	return &PrefixExtractor{
		Name: "fixed:" + strconv.Itoa(n),
		Length: func(key []byte) int {
			if len(key) < n {
				return 0
			}
			return n
		},
	}
}

// validate rejects an extractor that tables could not record or use.
func (p *PrefixExtractor) validate() error {
	switch {
	case p == nil:
		return nil
	case p.Name == "":
		return fmt.Errorf("shale: Options.Prefix has no Name")
	case p.Length == nil:
		return fmt.Errorf("shale: Options.Prefix %q has no Length function", p.Name)
	}
	return nil
}

// filterable reports whether tables written with p may be skipped for a
// scan of the keys starting with prefix: whether p maps them all to prefix.
func (p *PrefixExtractor) filterable(prefix []byte) bool {
	return p != nil && len(prefix) > 0 && p.Length(prefix) == len(prefix)
}

// prefixBounds intersects [lower, upper) with the keys starting with prefix,
// [prefix, its successor); a nil prefix leaves the bounds as they are.
func prefixBounds(lower, upper, prefix []byte) ([]byte, []byte) {
	if len(prefix) == 0 {
		return lower, upper
	}
	if lower == nil || bytes.Compare(lower, prefix) < 0 {
		lower = prefix
	}
	if succ := prefixSuccessor(prefix); succ != nil && (upper == nil || bytes.Compare(succ, upper) < 0) {
		upper = succ
	}
	return lower, upper
}

// prefixSuccessor returns the smallest key above every key that starts with
// prefix, or nil when there is none (prefix is all 0xff bytes).
func prefixSuccessor(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			s := bytes.Clone(prefix[:i+1])
			s[i]++
			return s
		}
	}
	return nil
}
