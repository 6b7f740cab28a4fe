package shale

import (
	"math"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/fuse"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/ribbon"
)

// TableFilter is one filter format with its parameters, written into an
// SSTable: BloomFilter(bits), FuseFilter() or RibbonFilter(bits); nil means
// no filter. Every table records its filter's name, so a store can mix
// formats and a reader decodes each table by what it says it holds.
//
// The interface is sealed on purpose: a store must be able to read back
// every filter it ever wrote, with any later version of shale, so only the
// formats shale itself knows how to decode can be written. A new format
// joins as a package of its own (as bloom, fuse and ribbon are), a
// constructor here, and an entry in knownFilters.
type TableFilter interface {
	// Name is the format's name as tables record it, e.g. "shale.bloom.v1".
	Name() string
	policy() filter.Policy
}

// tableFilter seals a filter format's policy as a TableFilter.
type tableFilter struct{ filter.Policy }

func (f tableFilter) policy() filter.Policy { return f.Policy }

// BloomFilter returns a cache-line-blocked Bloom filter at bitsPerKey
// (about 1% false positives at 10). Below 1 bit per key it returns nil: no
// filter.
func BloomFilter(bitsPerKey int) TableFilter {
	if bitsPerKey < 1 {
		return nil
	}
	return tableFilter{bloom.NewPolicy(bitsPerKey)}
}

// FuseFilter returns a binary fuse filter with 8-bit fingerprints: about
// 9 bits per key for a 0.4% false-positive rate, smaller than a Bloom filter
// of the same accuracy, at the cost of a slower build. It cannot be built
// incrementally, which a table never needs. A build can fail (after 64
// seeds, which no test has come near); that table is then written without a
// filter, and its properties and lookup traces say why.
func FuseFilter() TableFilter { return tableFilter{fuse.NewPolicy()} }

// RibbonFilter returns a Ribbon filter at bitsPerKey bits per key, any
// fraction up to 32 (it panics above): the false-positive rate of a
// blocked Bloom filter with 33-45% more bits (0.19% at 10 bits per key,
// where a Bloom filter has 0.95%), at the cost of a slower build and
// probe. While a table is written it needs about 30 bytes a key of scratch
// memory (the hashes, and the linear system it solves). A build can fail
// (after 32 seeds, which no test but one built to fail has come near);
// that table is then written without a filter. Below 1 bit per key it
// returns nil: no filter.
func RibbonFilter(bitsPerKey float64) TableFilter {
	if bitsPerKey < 1 {
		return nil
	}
	return tableFilter{ribbon.NewPolicy(bitsPerKey)}
}

// NumLevels is the number of levels of the tree, L0 to L6.
const NumLevels = 7

// The engine's own count of levels is manifest.NumLevels: this line does
// not compile unless the two agree.
var _ = [1]struct{}{}[NumLevels-manifest.NumLevels]

// knownFilters are the filter formats a table may carry. A table whose
// filter is not among them is read without filter skips.
var knownFilters = []filter.Policy{bloom.NewPolicy(10), fuse.NewPolicy(), ribbon.NewPolicy(10)}

// FilterPolicy chooses the filter of each new SSTable: the same one
// everywhere (UniformFilter), one per level (PerLevelFilters), or one sized
// by the shape of the tree (MonkeyBloom).
type FilterPolicy interface {
	// FilterFor returns the filter for a table about to be written, or nil
	// for none.
	FilterFor(t NewTable) TableFilter
}

// NewTable describes a table about to be written, for a FilterPolicy.
type NewTable struct {
	Level int // 0..6
	// LevelBytes and LevelFiles are the size and file count of each level
	// (index = level) as the write will leave them: a flush adds a file of
	// about the memtable's size to L0; a compaction moves its inputs' bytes
	// into its output level.
	LevelBytes [NumLevels]int64
	LevelFiles [NumLevels]int
}

type uniformFilter struct{ f TableFilter }

func (u uniformFilter) FilterFor(NewTable) TableFilter { return u.f }

// UniformFilter writes f (nil: no filter) into every table.
func UniformFilter(f TableFilter) FilterPolicy { return uniformFilter{f} }

type perLevel [NumLevels]TableFilter

func (p perLevel) FilterFor(t NewTable) TableFilter { return p[t.Level] }

// PerLevelFilters writes byLevel[level] into each new table at that level;
// a nil entry writes no filter there.
func PerLevelFilters(byLevel [NumLevels]TableFilter) FilterPolicy { return perLevel(byLevel) }

// MonkeyBloom spends about bitsPerKey bits per key on Bloom filters in
// total, but not evenly: following Monkey (Dayan, Athanassoulis, Idreos,
// SIGMOD 2017), the false-positive rate of each sorted run is made
// proportional to the run's size. An absent-key lookup pays one false
// positive per run at most, so the sum of the rates is what it costs; small
// runs are cheap to make very accurate and the largest run holds most keys,
// so moving bits from the largest run to the small ones lowers the sum for
// the same memory.
//
// The runs are the tree as the write will leave it (NewTable): each L0
// file, taken at L0's average file size, and each level below. A run of
// size s
// gets bitsPerKey + log(S/s)/ln(2)^2 - c bits per key, where S is the
// largest run and c is chosen so the average over all keys is bitsPerKey.
// With a level multiplier of 10 that is about 4.8 more bits per level up.
// Below 1 bit per key it writes no filter.
func MonkeyBloom(bitsPerKey int) FilterPolicy { return monkey(bitsPerKey) }

type monkey int

// maxMonkeyBits caps the bits of the smallest runs: beyond it a run's
// false-positive rate is already negligible.
const maxMonkeyBits = 24

func (m monkey) FilterFor(t NewTable) TableFilter {
	if m < 1 {
		return nil
	}
	// The sorted runs: every L0 file (all taken as L0's average size) and
	// every non-empty level below.
	run := func(level int) float64 {
		if level == 0 {
			return float64(t.LevelBytes[0]) / float64(max(t.LevelFiles[0], 1))
		}
		return float64(t.LevelBytes[level])
	}
	var total, largest float64
	for level := range t.LevelBytes {
		total += float64(t.LevelBytes[level])
		largest = max(largest, run(level))
	}
	own := run(t.Level)
	if own <= 0 {
		return BloomFilter(int(m))
	}
	// extra(s) = log(S/s)/ln2^2; c is its mean over all keys, so that the
	// average stays at m bits per key.
	extra := func(s float64) float64 { return math.Log(largest/s) / (math.Ln2 * math.Ln2) }
	var c float64
	for level := range t.LevelBytes {
		if s := run(level); s > 0 {
			c += float64(t.LevelBytes[level]) / total * extra(s)
		}
	}
	b := float64(m) + extra(own) - c
	return BloomFilter(int(math.Round(min(max(b, 1), maxMonkeyBits))))
}

// newTable describes a table about to be written at level: the shape of v
// after the write moves the inputs' bytes (or a new L0 file of that many
// bytes, when inputs is nil) into the level.
func newTable(v *manifest.Version, level int, inputs []levelFile, bytes int64) NewTable {
	t := NewTable{Level: level}
	for l := range v.Levels {
		t.LevelBytes[l] = int64(v.LevelSize(l))
		t.LevelFiles[l] = len(v.Levels[l])
	}
	for _, in := range inputs {
		t.LevelBytes[in.level] -= int64(in.meta.Size)
		t.LevelFiles[in.level]--
	}
	t.LevelBytes[level] += bytes
	if inputs == nil || level == 0 {
		t.LevelFiles[level]++
	}
	return t
}
