package compaction

import (
	"fmt"
	"math"
	"sort"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manifest"
)

// Options set the shape the picker keeps the tree in. Zero fields take their
// defaults (see WithDefaults). The number of levels is not an option: it is
// manifest.NumLevels, the size of a Version.
type Options struct {
	// L0CompactionThreshold is the number of L0 files at which L0 is
	// compacted into the base level. Every L0 file is a place a read may
	// have to look, so this bounds read amplification. Default 6.
	L0CompactionThreshold int
	// LBaseMaxBytes is the target size of the base level, the level L0
	// compacts into (see Targets). Default 64 MiB.
	LBaseMaxBytes uint64
	// LevelMultiplier is the ratio of sizes between adjacent levels that
	// decides when the base level moves up (see Targets). Default 10.
	LevelMultiplier int
	// WastedReads, when not nil, returns how many point reads of a file
	// read one of its data blocks and found nothing there, since the file
	// was opened or last picked for a read compaction. A file above the
	// bottom level whose count reaches its ReadAllowance is compacted into
	// the level below when nothing else is due (see Pick). nil: no read
	// compactions.
	WastedReads func(*manifest.FileMeta) int64
}

// ReadAllowance is the number of wasted reads (see Options.WastedReads) a
// file may cost before the picker compacts it into the level below, given
// rewrite, the bytes of that compaction's inputs (the file, the files under
// it in the next level, and any that join it): one for every 32 KiB
// rewritten, and at least 100. LevelDB's seek compactions allow one seek per
// 16 KiB of the file alone, reasoning that a seek costs about what
// compacting 40 KiB does once its overlap below is rewritten too; counting
// that overlap instead of assuming it gives the same 128 for a 2 MiB file
// over 2 MiB of the next level, and makes a file whose merge would rewrite
// ten times its size wait for five times as many wasted reads. On a small
// store, whose levels are close in size, files are merged as soon as a
// fixed allowance would; on a large one, where each file overlaps several
// below, the first millions of lookups no longer rewrite the upper levels
// under the reads.
//
// With filters a wasted read is a filter's false positive, so a file must
// first have been consulted about 100 times as often (at 10 bits per key):
// about 13,000 lookups of keys in its range that a lower level answers or
// that are absent, for a merge that rewrites 4 MiB. Each such lookup stops
// consulting the file's filter once it has been merged into the level
// below, where the lookup goes anyway.
func ReadAllowance(rewrite uint64) int64 {
	return max(100, int64(rewrite/(32<<10)))
}

// WithDefaults returns o with every zero or negative field set to its
// default. Pick and Scores apply it themselves; the DB calls it to show the
// values in effect.
func (o Options) WithDefaults() Options {
	if o.L0CompactionThreshold <= 0 {
		o.L0CompactionThreshold = 6
	}
	if o.LBaseMaxBytes == 0 {
		o.LBaseMaxBytes = 64 << 20
	}
	if o.LevelMultiplier <= 0 {
		o.LevelMultiplier = 10
	}
	return o
}

// Shape is where the picker wants the tree's data: the base level, which
// L0 compacts into, and the target size of every level from the base level
// down. See Targets.
type Shape struct {
	// BaseLevel is the level L0 compacts into. The levels between L0 and
	// it are empty.
	BaseLevel int
	// Targets holds each level's target size in bytes: 0 for L0 (sized by
	// its number of files) and for the empty levels above the base level.
	Targets [manifest.NumLevels]uint64
}

// Targets computes the tree's shape from the size of its largest level
// below L0, which in a settled tree is the bottom level, as RocksDB's
// level_compaction_dynamic_level_bytes and Pebble do: the targets follow
// the data actually stored, rather than being fixed from L1 down.
//
// The bottom level's target is that size (at least LBaseMaxBytes). The
// base level starts at the first non-empty level below L0 (the bottom level
// for an empty store) and moves up one level at a time for as long as it
// would hold more than LBaseMaxBytes in a tree whose levels grow by
// LevelMultiplier towards a bottom level of that size. So a small store
// lives in L6 alone, then in L5 and L6, and the base level rises as data
// grows: with S bytes in the largest level, there are
// ceil(log_LevelMultiplier(S/LBaseMaxBytes)) levels below the base level.
//
// The base level's target is LBaseMaxBytes, and the targets between it and
// the bottom grow by one common factor (at least 1), so that each level is
// the same multiple of the one above it. The base level is never below the
// first non-empty level, so the levels above it are always empty. A store
// written with fixed targets (data from L1 down, the bottom levels empty)
// keeps its base level at L1, and its deeper levels, over their new
// targets, drain down towards the bottom.
func Targets(v *manifest.Version, opts Options) Shape {
	opts = opts.WithDefaults()
	bottom := manifest.NumLevels - 1
	first := 0
	var largest uint64
	for level := 1; level <= bottom; level++ {
		if size := v.LevelSize(level); size > 0 {
			if first == 0 {
				first = level
			}
			largest = max(largest, size)
		}
	}
	if first == 0 {
		first = bottom
	}
	mult := float64(opts.LevelMultiplier)
	lbase := float64(opts.LBaseMaxBytes)
	// expected is what the base level would hold in a tree growing by mult
	// towards a bottom level of largest bytes.
	s := Shape{BaseLevel: first}
	expected := float64(largest) / math.Pow(mult, float64(bottom-first))
	for s.BaseLevel > 1 && expected > lbase {
		s.BaseLevel--
		expected /= mult
	}
	bottomTarget := max(float64(largest), lbase)
	growth := 1.0
	if s.BaseLevel < bottom {
		growth = max(1, math.Pow(bottomTarget/lbase, 1/float64(bottom-s.BaseLevel)))
	}
	t := lbase
	for level := s.BaseLevel; level <= bottom; level++ {
		if level == bottom {
			t = bottomTarget
		}
		s.Targets[level] = uint64(min(math.Round(t), math.MaxUint64))
		t *= growth
	}
	return s
}

// A Compaction names the files to merge and the level the result goes to.
// The DB reads every input through merging.NewIter and NewIter, writes what
// comes out as new files of OutputLevel, and installs one version edit that
// deletes every input file and adds the outputs.
//
// The DB must not split one user key's versions across two output files:
// the files of a level >= 1 must stay disjoint in user keys, which lookups
// (manifest.Version.FileForKey) and the picker rely on.
type Compaction struct {
	// Level is where Inputs[0] live; OutputLevel is where Inputs[1] live and
	// where the output goes. Pick chooses Level+1, or the base level for L0.
	Level, OutputLevel int
	// Inputs[0] are files of Level (for L0, newest first); Inputs[1] are the
	// files of OutputLevel that overlap them, in key order.
	Inputs [2][]*manifest.FileMeta
	// Score is the score of Level when it was picked (>= 1, see
	// LevelScore.Score; below 1 for a compaction of deletions or for
	// reads, see Pick).
	Score float64
	// Reason says why, for logs and metrics: "L0 has 5 files (threshold 4)".
	Reason string
	// ForReads says that the compaction was picked because a file of
	// Inputs[0] used up its ReadAllowance, not for the tree's shape.
	ForReads bool
}

// String summarizes the compaction in one line, e.g.
// "L2 -> L3, 1+4 files (9 MiB): L2 is 1.3x its target 640 MiB".
func (c *Compaction) String() string {
	return fmt.Sprintf("L%d -> L%d, %d+%d files (%s): %s", c.Level, c.OutputLevel,
		len(c.Inputs[0]), len(c.Inputs[1]), base.FormatSize(c.InputBytes()), c.Reason)
}

// InputBytes is the size of the compaction's input files, both levels.
func (c *Compaction) InputBytes() uint64 {
	var size uint64
	for _, in := range c.Inputs {
		for _, f := range in {
			size += f.Size
		}
	}
	return size
}

// LevelScore describes how full one level is.
type LevelScore struct {
	Level int
	Files int
	Bytes uint64
	// Compensated is Bytes plus what the level's point deletions are
	// expected to free in the levels below (see compensatedSize); Bytes
	// for L0 and the bottom level.
	Compensated uint64
	// Target is the level's target size in bytes (see Targets); 0 for L0,
	// which is sized by its number of files instead, and for the empty
	// levels above the base level.
	Target uint64
	// Fullness is Files/L0CompactionThreshold for L0, Compensated/Target
	// for the levels from the base level down, and 0 above the base level.
	Fullness float64
	// Score is what Pick ranks levels by; a level with a score >= 1 wants
	// compacting. It is the level's fullness, divided by the fullness of
	// the level it compacts into (the base level, for L0) when that one is
	// over its target: a compaction into a level that is itself too full
	// makes it fuller and rewrites more of it, so the level below is
	// drained first and the level above waits, accumulating a larger batch
	// to merge. The bottom level is never compacted into a level below it:
	// its score is always 0.
	Score float64
}

// Scores returns one LevelScore per level of v, L0 first, and the base
// level.
func Scores(v *manifest.Version, opts Options) ([]LevelScore, int) {
	opts = opts.WithDefaults()
	shape := Targets(v, opts)
	perDeletion := deletionBytes(v)
	scores := make([]LevelScore, manifest.NumLevels)
	for level := range scores {
		s := LevelScore{Level: level, Files: len(v.Levels[level]), Bytes: v.LevelSize(level), Target: shape.Targets[level]}
		s.Compensated = s.Bytes
		if level > 0 && level < manifest.NumLevels-1 {
			s.Compensated = 0
			for _, f := range v.Levels[level] {
				s.Compensated += compensatedSize(f, perDeletion)
			}
		}
		switch {
		case level == 0:
			s.Fullness = float64(s.Files) / float64(opts.L0CompactionThreshold)
		case s.Target > 0:
			s.Fullness = float64(s.Compensated) / float64(s.Target)
		}
		scores[level] = s
	}
	for level := range manifest.NumLevels - 1 {
		next := level + 1
		if level == 0 {
			next = shape.BaseLevel
		}
		scores[level].Score = scores[level].Fullness / max(1, scores[next].Fullness)
	}
	return scores, shape.BaseLevel
}

// Pick returns the compaction the tree needs most, or nil if no level has a
// score >= 1 (see LevelScore.Score), no deletions need carrying down and no
// file has used up its read allowance. The level with the highest score
// wins; ties go to the upper level. The choice depends on v and, for read
// compactions, the wasted-read counts alone. Pick assumes no other
// compaction is running: the DB runs one at a time.
//
// When some level is over its target, some level has a score >= 1: the
// deepest level over its target compacts into a level that is not.
//
// L0 into the base level: the oldest L0 file, with every L0 file that
// overlaps it, directly or through others (the transitive closure), and
// every base level file that overlaps them. Taking a closure, rather than
// any subset, keeps reads correct: no L0 file left behind shares a key with
// one that moves, so no L0 file can end up holding an older version than
// the level below. Starting from the oldest file empties L0 in the order it
// filled. When writes are spread over the key space, every L0 file overlaps
// every other and the closure is all of L0; when they are not (sequential
// keys), the closure avoids dragging in the base level files that lie
// between unrelated L0 files.
//
// Ln into Ln+1 (n >= 1): the file of Ln whose overlap with Ln+1 is the
// smallest relative to its own compensated size (RocksDB's
// kMinOverlappingRatio, which Pebble follows too), with every file of Ln+1
// that overlaps it. The bytes of Ln+1 that a compaction overlaps are
// rewritten for nothing but to make room, so this moves the most data down
// per byte rewritten: a file that
// overlaps nothing costs no rewriting at all (the DB moves it down as it
// is), and the ranges where Ln holds much data for little in Ln+1 go first.
// Files with the same ratio cost the same; the first in key order wins, so
// that the choice is reproducible. Then, if more Ln files fit inside the
// range those inputs cover without adding any Ln+1 file, they join: they
// are merged into files that are being rewritten anyway, so they move down
// at no extra cost in Ln+1 rewriting.
//
// Deletions count as the data they will free (see compensatedSize), in a
// level's fullness and in a file's ratio: without that a level holding
// mostly tombstones is small, never over its target, and the data its
// tombstones delete stays on disk in the levels below; with it the
// tombstones are carried down first, where they reclaim the most space per
// byte rewritten.
//
// When no level wants compacting, a file of a level above the bottom whose
// entries are at least half point deletions is carried down a level (the
// one with the most deletions first), as RocksDB's compact-on-deletion
// collector and Pebble's tombstone density compactions do: otherwise the
// tombstones left once their level is back under its target would keep the
// data they delete on disk for as long as no more writes come.
//
// Last, when neither the shape nor deletions call for a compaction, a file
// above the bottom level whose wasted reads (Options.WastedReads) have
// reached its ReadAllowance is compacted into the level below
// (Compaction.ForReads), LevelDB's seek compactions: the lookups of keys
// in its range that read one of its blocks for nothing, a filter's false
// positive, then have one table fewer to consult. The first such file
// goes, L0 first and each level in key order, with the inputs a
// compaction of it would take for size (for an L0 file, its overlap
// closure). Coming last, read compactions never hold up the compactions
// that keep the tree's shape; with no reads missing they never run.
func Pick(v *manifest.Version, opts Options) *Compaction {
	opts = opts.WithDefaults()
	scores, baseLevel := Scores(v, opts)
	best := -1
	var bestScore float64
	for _, s := range scores {
		if s.Score >= 1 && s.Score > bestScore {
			best, bestScore = s.Level, s.Score
		}
	}
	switch {
	case best < 0:
		if c := pickDeletions(v, scores); c != nil {
			return c
		}
		return pickReads(v, opts.WastedReads, scores, baseLevel)
	case best == 0:
		return &Compaction{
			Level: 0, OutputLevel: baseLevel, Inputs: pickL0(v, baseLevel), Score: bestScore,
			Reason: fmt.Sprintf("L0 has %d files (threshold %d)%s", len(v.Levels[0]), opts.L0CompactionThreshold, behind(scores[baseLevel])),
		}
	}
	return &Compaction{
		Level: best, OutputLevel: best + 1, Inputs: pickLevel(v, best, deletionBytes(v)), Score: bestScore,
		Reason: fmt.Sprintf("L%d is %.1fx its target %s%s%s", best, scores[best].Fullness, base.FormatSize(scores[best].Target), deletions(scores[best]), behind(scores[best+1])),
	}
}

// deletions notes, for a compaction's reason, what a level's deletions added
// to its size.
func deletions(s LevelScore) string {
	if s.Compensated <= s.Bytes {
		return ""
	}
	return fmt.Sprintf(", its deletions counted as the %s they will free", base.FormatSize(s.Compensated-s.Bytes))
}

// behind notes, for a compaction's reason, that the output level is over
// its target too, which lowered the input level's score.
func behind(out LevelScore) string {
	if out.Fullness <= 1 {
		return ""
	}
	return fmt.Sprintf("; L%d is %.1fx its target", out.Level, out.Fullness)
}

// pickL0 returns the overlap closure of the oldest L0 file and the files of
// the base level that it overlaps.
func pickL0(v *manifest.Version, baseLevel int) (inputs [2][]*manifest.FileMeta) {
	l0 := v.Levels[0]
	return pickL0From(v, baseLevel, l0[len(l0)-1])
}

// pickL0From returns the overlap closure of the L0 file seed and the files
// of the base level that it overlaps. Any closure is safe to move (see
// Pick).
func pickL0From(v *manifest.Version, baseLevel int, seed *manifest.FileMeta) (inputs [2][]*manifest.FileMeta) {
	in := []*manifest.FileMeta{seed}
	for {
		lo, hi := userKeyRange(in)
		grown := v.Overlapping(0, lo, hi)
		if len(grown) == len(in) {
			break
		}
		in = grown
	}
	lo, hi := userKeyRange(in)
	return [2][]*manifest.FileMeta{in, v.Overlapping(baseLevel, lo, hi)}
}

// pickDeletions returns a compaction of the file above the bottom level
// with the most point deletions among those that are at least half
// deletions, or nil if there is none (see Pick).
func pickDeletions(v *manifest.Version, scores []LevelScore) *Compaction {
	level, seed := -1, 0
	var most uint64
	for l := 1; l < manifest.NumLevels-1; l++ {
		for i, f := range v.Levels[l] {
			if f.Deletions > most && f.Deletions <= f.Entries && 2*f.Deletions >= f.Entries {
				level, seed, most = l, i, f.Deletions
			}
		}
	}
	if level < 0 {
		return nil
	}
	f := v.Levels[level][seed]
	return &Compaction{
		Level: level, OutputLevel: level + 1, Inputs: pickLevelFrom(v, level, seed), Score: scores[level].Score,
		Reason: fmt.Sprintf("%06d is %d%% deletions", f.FileNum, 100*f.Deletions/f.Entries),
	}
}

// pickReads returns a compaction of the first file above the bottom level,
// L0 first and each level in key order, whose wasted reads have reached
// its ReadAllowance, or nil if there is none or wasted is nil (see Pick).
func pickReads(v *manifest.Version, wasted func(*manifest.FileMeta) int64, scores []LevelScore, baseLevel int) *Compaction {
	if wasted == nil {
		return nil
	}
	for level := range manifest.NumLevels - 1 {
		for i, f := range v.Levels[level] {
			n := wasted(f)
			if n < ReadAllowance(f.Size) {
				continue // not due whatever the merge would rewrite
			}
			c, allowance := readCompaction(v, level, i, baseLevel)
			if n < allowance {
				continue
			}
			c.Score = scores[level].Score
			c.Reason = fmt.Sprintf("%06d had %d wasted reads (allowance %d)", f.FileNum, n, allowance)
			return c
		}
	}
	return nil
}

// readCompaction returns the compaction that would carry the file at index
// i of level into the level below for its reads (with the inputs a
// compaction of it for size would take: for an L0 file, its overlap
// closure), and that file's ReadAllowance, which those inputs' size sets.
func readCompaction(v *manifest.Version, level, i, baseLevel int) (*Compaction, int64) {
	c := &Compaction{Level: level, OutputLevel: level + 1, ForReads: true}
	if level == 0 {
		c.OutputLevel, c.Inputs = baseLevel, pickL0From(v, baseLevel, v.Levels[0][i])
	} else {
		c.Inputs = pickLevelFrom(v, level, i)
	}
	return c, ReadAllowance(c.InputBytes())
}

// pickLevel picks the inputs of a compaction of level (>= 1) into the next
// starting from the file with the smallest overlap ratio (see Pick).
// perDeletion is deletionBytes(v).
func pickLevel(v *manifest.Version, level int, perDeletion float64) (inputs [2][]*manifest.FileMeta) {
	seed, best := 0, math.Inf(1)
	for i, f := range v.Levels[level] {
		overlap := overlapBytes(v.Levels[level+1], f.Smallest.UserKey, f.Largest.UserKey)
		if ratio := float64(overlap) / float64(max(compensatedSize(f, perDeletion), 1)); ratio < best {
			seed, best = i, ratio
		}
	}
	return pickLevelFrom(v, level, seed)
}

// pickLevelFrom returns the inputs of a compaction of level (>= 1) into the
// next that starts from the file at index seed of the level: that file,
// the files of the next level under it, and the files of level that fit in
// their range for free.
func pickLevelFrom(v *manifest.Version, level, seed int) (inputs [2][]*manifest.FileMeta) {
	files := v.Levels[level]
	in := []*manifest.FileMeta{files[seed]}
	out := v.Overlapping(level+1, in[0].Smallest.UserKey, in[0].Largest.UserKey)
	if len(out) > 0 {
		wlo, whi := userKeyRange(in, out)
		if wider := v.Overlapping(level, wlo, whi); len(wider) > len(in) {
			wlo, whi = userKeyRange(wider)
			if len(v.Overlapping(level+1, wlo, whi)) == len(out) {
				in = wider
			}
		}
	}
	return [2][]*manifest.FileMeta{in, out}
}

// deletionBytes estimates the bytes on disk that one point deletion frees
// once a compaction brings it down to the entry it deletes: the average size
// of a live (not deleting) entry of v's tables, each table's bytes shared
// equally among its entries. 0 when no table's counts are known (see
// manifest.FileMeta.Entries).
func deletionBytes(v *manifest.Version) float64 {
	var bytes float64
	var live uint64
	for _, files := range v.Levels {
		for _, f := range files {
			if f.Entries == 0 || f.Deletions >= f.Entries {
				continue
			}
			n := f.Entries - f.Deletions
			bytes += float64(f.Size) * float64(n) / float64(f.Entries)
			live += n
		}
	}
	if live == 0 {
		return 0
	}
	return bytes / float64(live)
}

// compensatedSize is f's size plus what its point deletions are expected to
// free below it, perDeletion bytes each: how much a compaction that carries
// f down moves or reclaims. RocksDB and Pebble weigh deletions this way
// (their compensated sizes). Range deletions are not counted: a table they
// cover whole is dropped by a delete-only compaction instead.
func compensatedSize(f *manifest.FileMeta, perDeletion float64) uint64 {
	return f.Size + uint64(float64(f.Deletions)*perDeletion)
}

// overlapBytes returns the total size of the files of a level >= 1 (sorted
// and disjoint) that overlap [lo, hi], the files manifest.Version.Overlapping
// would return.
func overlapBytes(files []*manifest.FileMeta, lo, hi []byte) uint64 {
	var n uint64
	i := sort.Search(len(files), func(i int) bool { return !files[i].EndsBefore(lo) })
	for ; i < len(files) && files[i].Overlaps(lo, hi); i++ {
		n += files[i].Size
	}
	return n
}

// userKeyRange returns the smallest and largest user keys of the files.
// There must be at least one file.
func userKeyRange(sets ...[]*manifest.FileMeta) (lo, hi []byte) {
	first := true
	for _, files := range sets {
		for _, f := range files {
			if first || base.CompareUserKeys(f.Smallest.UserKey, lo) < 0 {
				lo = f.Smallest.UserKey
			}
			if first || base.CompareUserKeys(f.Largest.UserKey, hi) > 0 {
				hi = f.Largest.UserKey
			}
			first = false
		}
	}
	return lo, hi
}

// IsBaseLevelForKey reports whether no level below outputLevel has a file
// whose range holds ukey. Then nothing older than a compaction's output can
// exist for ukey, and a tombstone for it hides nothing once the versions it
// covers in the compaction are dropped: the tombstone can go too.
func IsBaseLevelForKey(v *manifest.Version, outputLevel int, ukey []byte) bool {
	for level := outputLevel + 1; level < manifest.NumLevels; level++ {
		if v.FileForKey(level, ukey) != nil {
			return false
		}
	}
	return true
}
