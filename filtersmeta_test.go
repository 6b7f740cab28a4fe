package shale

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/rangefilter"
)

var filtersMetaSeeds = flag.Int("filtersmeta.seeds", 1, "seeds of TestFiltersMetamorphic (1 to N)")

// remapKeys rewrites every key, bound, prefix and seek key of ops through
// table, a map of the bytes the generator uses (0x00 and a..h) that keeps
// their order and is injective, so that it keeps the order of keys, their
// prefixes and every result the model computes, while the keys come to
// hold bytes the generator never writes (see keyTables). ok is false when
// a byte has no image in table; out is then not to be run.
func remapKeys(ops []metaOp, table map[byte]byte) (out []metaOp, ok bool) {
	m := func(s string) string {
		b := []byte(s)
		for i, c := range b {
			r, found := table[c]
			if !found {
				ok = false
			}
			b[i] = r
		}
		return string(b)
	}
	mp := func(s *string) *string {
		if s == nil {
			return nil
		}
		r := m(*s)
		return &r
	}
	ok = true
	out = make([]metaOp, len(ops))
	for i, op := range ops {
		switch o := op.(type) {
		case writeOp:
			w := metaWrite{batch: o.w.batch}
			for _, mu := range o.w.muts {
				mu.key, mu.end = m(mu.key), m(mu.end)
				w.muts = append(w.muts, mu)
			}
			op = writeOp{w}
		case getOp:
			o.key = m(o.key)
			op = o
		case newIterOp:
			o.lower, o.upper, o.prefix = mp(o.lower), mp(o.upper), m(o.prefix)
			op = o
		case moveIterOp:
			o.key = m(o.key)
			op = o
		}
		out[i] = op
	}
	return out, ok
}

// keyTables are remapKeys' maps: one for every key set (0x00, 0x01-0x03,
// 0x80, 0xfc-0xff), and one for the key sets of 4 letters under which
// keys hold delimPrefix's delimiter 0xfe and the letters of seek keys and
// iterator prefixes reach 0xff, so that a prefix can be all 0xff bytes
// (it has no successor).
var keyTables = []map[byte]byte{
	{0: 0, 'a': 1, 'b': 2, 'c': 3, 'd': 0x80, 'e': 0xfc, 'f': 0xfd, 'g': 0xfe, 'h': 0xff},
	{0: 0, 'a': 1, 'b': 0x7f, 'c': 0xfd, 'd': 0xfe, 'e': 0xff},
}

// delimPrefix is a prefix extractor whose prefix runs to the first 0xfe
// byte, included: it keeps the extractor's promise (a key starting with a
// prefix p that ends at its first 0xfe has p as its prefix).
var delimPrefix = &PrefixExtractor{Name: "delim-fe", Length: func(k []byte) int {
	for i, c := range k {
		if c == 0xfe {
			return i + 1
		}
	}
	return 0
}}

// first8 maps a key to its first 8 bytes, big-endian, zero-padded: weakly
// order-preserving over all byte strings.
var first8 = &rangefilter.UserMap{Name: "first8", Map: func(k []byte) uint64 {
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}}

// filtersMetaConfigs are TestFiltersMetamorphic's option sets: prefix
// extractors (a delimiter one among them) over each filter format, range
// filters with the dense map and with a UserMap, the row cache, filters per
// level and at their extreme sizes, and options that change at each
// reopen (a table's filter, prefixes and range filter are then of another
// option set than the store's).
func filtersMetaConfigs() []metaConfig {
	return []metaConfig{
		{"prefix-1-bloom", smallOptions(Options{Prefix: FixedPrefix(1)}), nil},
		{"prefix-3-ribbon", smallOptions(Options{Prefix: FixedPrefix(3), FilterPolicy: UniformFilter(RibbonFilter(7.5))}), nil},
		{"delim-prefix", smallOptions(Options{Prefix: delimPrefix, FilterPolicy: UniformFilter(FuseFilter())}), nil},
		{"range-6", smallOptions(Options{RangeFilter: &rangefilter.Options{BitsPerKey: 6}}), nil},
		{"range-usermap", smallOptions(Options{RangeFilter: &rangefilter.Options{BitsPerKey: 8, Map: first8}}), nil},
		{"row-cache", smallOptions(Options{RowCacheSize: 4 << 10}), nil},
		{"per-level", smallOptions(Options{FilterPolicy: PerLevelFilters([NumLevels]TableFilter{BloomFilter(1), nil, RibbonFilter(3), FuseFilter(), BloomFilter(20), nil, RibbonFilter(12)})}), nil},
		{"extreme-bits", smallOptions(Options{BloomBitsPerKey: 64, Prefix: FixedPrefix(1)}), []Options{
			smallOptions(Options{FilterPolicy: UniformFilter(RibbonFilter(32)), Prefix: FixedPrefix(1)}),
			smallOptions(Options{FilterPolicy: UniformFilter(RibbonFilter(1)), Prefix: FixedPrefix(1), RangeFilter: &rangefilter.Options{BitsPerKey: 40}}),
			smallOptions(Options{FilterPolicy: MonkeyBloom(64), RangeFilter: &rangefilter.Options{BitsPerKey: 6, Map: &rangefilter.UserMap{Name: "other", Map: first8.Map}}}),
		}},
		{"changing-filters", smallOptions(Options{Prefix: FixedPrefix(2), RangeFilter: &rangefilter.Options{Map: first8}, RowCacheSize: 8 << 10}), []Options{
			smallOptions(Options{Prefix: delimPrefix, FilterPolicy: UniformFilter(RibbonFilter(2)), RangeFilter: &rangefilter.Options{BitsPerKey: 6}}),
			smallOptions(Options{Prefix: FixedPrefix(1), FilterPolicy: MonkeyBloom(2), RowCacheSize: 1 << 10}),
			smallOptions(Options{BloomBitsPerKey: NoFilter, Prefix: FixedPrefix(2), RangeFilter: &rangefilter.Options{BitsPerKey: 40, Map: first8}}),
			{Prefix: FixedPrefix(3), MemTableSize: 1 << 10, BlockSize: 64, DisableAutomaticCompactions: true},
		}},
	}
}

// TestFiltersMetamorphic runs two metamorphic sequences a seed, one of
// generateMetaOps and one of generateTombstoneOps, their keys remapped to
// hold 0x00, 0x01, 0x80 and 0xfc-0xff bytes (prefixes of 0xff bytes only
// among them, which have no successor), under filter, prefix-extractor,
// range-filter and row-cache options that TestMetamorphic does not draw,
// some changing across reopens and crashes, against the model.
func TestFiltersMetamorphic(t *testing.T) {
	for seed := uint64(1); seed <= uint64(*filtersMetaSeeds); seed++ {
		for _, gen := range []func(uint64, int) []metaOp{generateMetaOps, generateTombstoneOps} {
			generated := gen(seed, *metaOps)
			ops, ok := remapKeys(generated, keyTables[1])
			if !ok {
				ops, _ = remapKeys(generated, keyTables[0])
			}
			want := runMetaOps(ops, newModelTarget())
			for _, c := range filtersMetaConfigs() {
				got := runConfig(c, ops, &metaStats{})
				if i := firstDiff(got, want); i >= 0 {
					msg := fmt.Sprintf("seed %d, %s: first difference at operation %d: %s\n got:  %s\n want: %s",
						seed, c.name, i, opText(ops, i), lineAt(got, i), lineAt(want, i))
					if *metaReduceFlag {
						msg += "\nreduced:\n" + reduceFailure(c, ops)
					}
					t.Error(msg)
				}
			}
		}
	}
}

// generateTombstoneOps is generateMetaOps with other weights: range
// deletions, snapshots, flushes and compactions far more often, so that
// tombstones meet snapshots in every kind of compaction.
func generateTombstoneOps(seed uint64, n int) []metaOp {
	g := &metaGenerator{rng: rand.New(rand.NewPCG(seed, 0x746f6d62))}
	g.keys = g.keySet()
	return g.generate([]metaKind{
		{100, g.put},
		{20, g.delete},
		{40, g.deleteRange},
		{30, g.batch},
		{60, func() { g.add(getOp{snap: -1, key: g.key()}) }},
		{20, g.newSnapshot},
		{60, g.snapshotGet},
		{8, g.closeSnapshot},
		{30, g.newIter},
		{150, g.moveIter},
		{25, g.closeIter},
		{25, func() { g.add(flushOp{}) }},
		{10, func() { g.add(compactOp{}) }},
		{3, func() { g.closeAll(); g.add(reopenOp{}) }},
		{2, func() { g.closeAll(); g.add(crashOp{}) }},
	}, n)
}
