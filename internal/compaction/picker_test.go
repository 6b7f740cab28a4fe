package compaction

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manifest"
)

// TestPicker runs testdata/picker. Commands:
//
//	define [l0-threshold=N] [lbase=SIZE] [multiplier=N]  files, one a line
//	pick [install]       Pick; install applies the result to the version
//
// A file's wasted=N in define gives it N wasted reads (Options.WastedReads,
// set when some file has any).
//
//	scores               the base level, and each level's target, fullness and score
//	base-level output=N keys=(a,b)  IsBaseLevelForKey for each key
func TestPicker(t *testing.T) {
	var (
		v    *manifest.Version
		opts Options
	)
	datadriven.RunTest(t, "testdata/picker", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			var wasted map[uint64]int64
			v, wasted = parseVersion(t, d.Input)
			opts = Options{}
			if len(wasted) > 0 {
				opts.WastedReads = func(f *manifest.FileMeta) int64 { return wasted[f.FileNum] }
			}
			d.MaybeScanArgs(t, "l0-threshold", &opts.L0CompactionThreshold)
			d.MaybeScanArgs(t, "multiplier", &opts.LevelMultiplier)
			var lbase string
			if d.MaybeScanArgs(t, "lbase", &lbase) {
				opts.LBaseMaxBytes = parseSize(t, lbase)
			}
			return formatVersion(v)

		case "pick":
			c := Pick(v, opts)
			out := formatCompaction(c)
			if c != nil && d.HasArg("install") {
				v = install(v, c, nextFileNum(v))
				out += "installed; now:\n" + formatVersion(v)
			}
			return out

		case "scores":
			return formatScores(v, opts)

		case "base-level":
			var level int
			d.ScanArgs(t, "output", &level)
			arg, _ := d.Arg("keys")
			var b strings.Builder
			for _, k := range arg.Vals {
				fmt.Fprintf(&b, "%s: %t\n", k, IsBaseLevelForKey(v, level, []byte(k)))
			}
			return b.String()
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}

func nextFileNum(v *manifest.Version) uint64 {
	var n uint64
	for _, files := range v.Levels {
		for _, f := range files {
			n = max(n, f.FileNum)
		}
	}
	return n + 1
}

// TestPickMinOverlap checks that a compaction of Ln (n >= 1) starts from the
// file with the least overlap in Ln+1 per byte of its own, wherever it lies
// in the key space, and that it keeps doing so as the picks are installed.
func TestPickMinOverlap(t *testing.T) {
	file := func(num uint64, lo, hi string, size uint64) *manifest.FileMeta {
		return &manifest.FileMeta{FileNum: num, Size: size,
			Smallest: base.MakeInternalKey([]byte(lo), 2, base.KindSet),
			Largest:  base.MakeInternalKey([]byte(hi), 2, base.KindSet)}
	}
	v := &manifest.Version{}
	// L5, at 24 MiB, is 3x its target. Per byte of their own, its files
	// overlap 8, 1, 0.5 and 4 bytes of L6: 000003 goes first, then 000002.
	// The first file, which a sweep of the level from its start would
	// take, overlaps the most.
	v.Levels[5] = []*manifest.FileMeta{
		file(1, "a", "b", 4<<20), file(2, "c", "d", 8<<20), file(3, "e", "f", 8<<20), file(4, "g", "h", 4<<20),
	}
	v.Levels[6] = []*manifest.FileMeta{
		file(10, "a", "b", 32<<20), file(11, "c", "d", 8<<20), file(12, "e", "f", 4<<20), file(13, "g", "h", 16<<20),
	}
	opts := Options{LBaseMaxBytes: 1 << 20}
	for i, want := range []uint64{3, 2} {
		c := Pick(v, opts)
		if c == nil || c.Level != 5 || len(c.Inputs[0]) != 1 || c.Inputs[0][0].FileNum != want {
			t.Fatalf("pick %d: got %v, want L5's %06d", i, c, want)
		}
		v = install(v, c, nextFileNum(v))
	}
}

// TestPickRandom picks and installs compactions on random trees until none
// is needed, checking every pick. Half the trees have files with wasted
// reads, about half of those over their allowance.
func TestPickRandom(t *testing.T) {
	for seed := range uint64(1000) {
		rng := rand.New(rand.NewPCG(seed, 0))
		v := randomVersion(rng)
		opts := Options{L0CompactionThreshold: 1 + rng.IntN(4), LBaseMaxBytes: 1 + uint64(rng.IntN(300)), LevelMultiplier: 1 + rng.IntN(10)}
		wasted := map[uint64]int64{}
		if rng.IntN(2) == 0 {
			for level, files := range v.Levels {
				for i, f := range files {
					if level == manifest.NumLevels-1 {
						wasted[f.FileNum] = rng.Int64N(1000) // never picked, whatever the count
					} else {
						wasted[f.FileNum] = rng.Int64N(2 * allowance(v, opts, level, i))
					}
				}
			}
			opts.WastedReads = func(f *manifest.FileMeta) int64 { return wasted[f.FileNum] }
		}
		steps := 0
		for c := Pick(v, opts); c != nil; c = Pick(v, opts) {
			checkCompaction(t, v, c)
			_, baseLevel := Scores(v, opts)
			if want := max(c.Level+1, baseLevel); c.OutputLevel != want {
				t.Fatalf("seed %d: Pick returned %s; want output level L%d", seed, c, want)
			}
			if c.ForReads {
				checkForReads(t, v, opts, c)
			} else {
				checkMinOverlap(t, v, c)
				if c.Score < 1 {
					t.Fatalf("seed %d: Pick returned %s, score %.2f", seed, c, c.Score)
				}
			}
			v = install(v, c, nextFileNum(v))
			checkVersion(t, v)
			if steps++; steps > 1000 {
				t.Fatalf("seed %d: still compacting after %d picks:\n%s", seed, steps, v)
			}
		}
		scores, baseLevel := Scores(v, opts)
		for _, s := range scores[:manifest.NumLevels-1] {
			if s.Fullness >= 1 {
				t.Fatalf("seed %d: Pick returned nil with L%d at %.2fx its target", seed, s.Level, s.Fullness)
			}
		}
		for level := 1; level < baseLevel; level++ {
			if len(v.Levels[level]) > 0 {
				t.Fatalf("seed %d: L%d, above the base level L%d, holds files\n%s", seed, level, baseLevel, v)
			}
		}
		for level, files := range v.Levels[:manifest.NumLevels-1] {
			for i, f := range files {
				if wasted[f.FileNum] >= allowance(v, opts, level, i) {
					t.Fatalf("seed %d: Pick returned nil with %s at %d wasted reads, over its allowance\n%s", seed, f, wasted[f.FileNum], v)
				}
			}
		}

	}
}

// randomVersion makes a tree over two-letter keys: overlapping L0 files with
// disjoint seqnum ranges, and disjoint, sorted files on every other level,
// some sharing nothing but being adjacent.
func randomVersion(rng *rand.Rand) *manifest.Version {
	key := func() []byte { return []byte{byte('a' + rng.IntN(26)), byte('a' + rng.IntN(26))} }
	v := &manifest.Version{}
	num, seq := uint64(1), base.SeqNum(1<<20)
	for range rng.IntN(8) {
		lo, hi := key(), key()
		if base.CompareUserKeys(lo, hi) > 0 {
			lo, hi = hi, lo
		}
		f := &manifest.FileMeta{FileNum: num, Size: uint64(1 + rng.IntN(100)),
			Smallest: base.MakeInternalKey(lo, seq, base.KindSet), Largest: base.MakeInternalKey(hi, seq-1, base.KindSet),
			SmallestSeq: seq - 9, LargestSeq: seq}
		v.Levels[0] = append(v.Levels[0], f) // newest first: seq decreases
		num, seq = num+1, seq-10
	}
	for level := 1; level < manifest.NumLevels; level++ {
		var bounds [][]byte
		for range 2 * rng.IntN(6) {
			bounds = append(bounds, key())
		}
		slices.SortFunc(bounds, base.CompareUserKeys)
		bounds = slices.CompactFunc(bounds, func(a, b []byte) bool { return string(a) == string(b) })
		for i := 0; i+1 < len(bounds); i += 2 {
			f := &manifest.FileMeta{FileNum: num, Size: uint64(1 + rng.IntN(200*level)),
				Smallest: base.MakeInternalKey(bounds[i], seq, base.KindSet), Largest: base.MakeInternalKey(bounds[i+1], seq, base.KindSet),
				SmallestSeq: seq, LargestSeq: seq}
			v.Levels[level] = append(v.Levels[level], f)
			num, seq = num+1, seq-1
		}
	}
	return v
}

// checkCompaction checks that running c on v keeps the tree sound: the
// inputs are files of their levels; the files of the input level left
// behind share no user key with the inputs (else a newer version would stay
// above an older one that moves, or L0 would read in the wrong order); every
// file of the output level that overlaps the inputs is an input (else the
// output would overlap it); and the levels between are empty.
func checkCompaction(t *testing.T, v *manifest.Version, c *Compaction) {
	t.Helper()
	if len(c.Inputs[0]) == 0 {
		t.Fatalf("compaction %s has no input in L%d", c, c.Level)
	}
	for i, level := range []int{c.Level, c.OutputLevel} {
		for _, f := range c.Inputs[i] {
			if !slices.Contains(v.Levels[level], f) {
				t.Fatalf("compaction %s: input %s is not in L%d", c, f, level)
			}
		}
	}
	lo, hi := userKeyRange(c.Inputs[0])
	for _, f := range v.Overlapping(c.Level, lo, hi) {
		if !slices.Contains(c.Inputs[0], f) {
			t.Fatalf("compaction %s leaves overlapping %s in L%d\n%s", c, f, c.Level, v)
		}
	}
	if c.OutputLevel != c.Level {
		for _, f := range v.Overlapping(c.OutputLevel, lo, hi) {
			if !slices.Contains(c.Inputs[1], f) {
				t.Fatalf("compaction %s leaves overlapping %s in L%d\n%s", c, f, c.OutputLevel, v)
			}
		}
	}
	for level := c.Level + 1; level < c.OutputLevel; level++ {
		if len(v.Levels[level]) > 0 {
			t.Fatalf("compaction %s skips non-empty L%d", c, level)
		}
	}
}

// checkForReads checks a read compaction: nothing else was due (no level
// wanted compacting, and none would without the wasted reads), and its
// inputs hold a file above the bottom level that used up its allowance,
// the first such file in the order Pick takes them.
func checkForReads(t *testing.T, v *manifest.Version, opts Options, c *Compaction) {
	t.Helper()
	if other := Pick(v, Options{L0CompactionThreshold: opts.L0CompactionThreshold, LBaseMaxBytes: opts.LBaseMaxBytes, LevelMultiplier: opts.LevelMultiplier}); other != nil {
		t.Fatalf("read compaction %s picked while %s was due\n%s", c, other, v)
	}
	var first *manifest.FileMeta
	for level, files := range v.Levels[:manifest.NumLevels-1] {
		for i, f := range files {
			if first == nil && opts.WastedReads(f) >= allowance(v, opts, level, i) {
				first = f
			}
		}
	}
	if first == nil || !slices.Contains(c.Inputs[0], first) {
		t.Fatalf("read compaction %s: inputs lack the first file over its allowance, %v\n%s", c, first, v)
	}
	var rewrite uint64
	for _, in := range c.Inputs {
		for _, f := range in {
			rewrite += f.Size
		}
	}
	if n := opts.WastedReads(first); n < ReadAllowance(rewrite) {
		t.Fatalf("read compaction %s rewrites %d bytes for %s's %d wasted reads, under the allowance %d", c, rewrite, first, n, ReadAllowance(rewrite))
	}
}

// allowance returns the ReadAllowance of the file at index i of level in v:
// that of the compaction that would carry it down for its reads.
func allowance(v *manifest.Version, opts Options, level, i int) int64 {
	_, baseLevel := Scores(v, opts)
	_, a := readCompaction(v, level, i, baseLevel)
	return a
}

// checkMinOverlap checks that a compaction of a level >= 1 holds a file of
// that level whose overlap with the next level, per byte of its own, is the
// smallest of the level's: the file Pick starts from. The files that join it
// overlap no less, or that one would have been picked.
func checkMinOverlap(t *testing.T, v *manifest.Version, c *Compaction) {
	t.Helper()
	if c.Level == 0 {
		return
	}
	ratio := func(f *manifest.FileMeta) float64 {
		var overlap uint64
		for _, g := range v.Overlapping(c.OutputLevel, f.Smallest.UserKey, f.Largest.UserKey) {
			overlap += g.Size
		}
		return float64(overlap) / float64(max(f.Size, 1))
	}
	least := func(files []*manifest.FileMeta) float64 {
		m := math.Inf(1)
		for _, f := range files {
			m = min(m, ratio(f))
		}
		return m
	}
	if got, want := least(c.Inputs[0]), least(v.Levels[c.Level]); got != want {
		t.Fatalf("compaction %s: its inputs overlap L%d at best %.3f bytes per byte, L%d has a file at %.3f\n%s",
			c, c.OutputLevel, got, c.Level, want, v)
	}
}

// checkVersion checks that every level below L0 is sorted and disjoint.
func checkVersion(t *testing.T, v *manifest.Version) {
	t.Helper()
	for level := 1; level < manifest.NumLevels; level++ {
		files := v.Levels[level]
		for i := 1; i < len(files); i++ {
			if base.CompareUserKeys(files[i-1].Largest.UserKey, files[i].Smallest.UserKey) >= 0 {
				t.Fatalf("L%d: %s and %s overlap\n%s", level, files[i-1], files[i], v)
			}
		}
	}
}

func TestWithDefaults(t *testing.T) {
	// The sizes alone: WastedReads, a func, has no default and cannot be
	// compared.
	type sizes struct{ l0, lbase, mult any }
	of := func(o Options) sizes { return sizes{o.L0CompactionThreshold, o.LBaseMaxBytes, o.LevelMultiplier} }
	got := Options{L0CompactionThreshold: -1}.WithDefaults()
	want := Options{L0CompactionThreshold: 6, LBaseMaxBytes: 64 << 20, LevelMultiplier: 10}
	if of(got) != of(want) || got.WastedReads != nil {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	wasted := func(*manifest.FileMeta) int64 { return 7 }
	set := Options{L0CompactionThreshold: 2, LBaseMaxBytes: 1, LevelMultiplier: 3, WastedReads: wasted}
	if d := set.WithDefaults(); of(d) != of(set) || d.WastedReads == nil || d.WastedReads(nil) != 7 {
		t.Fatalf("WithDefaults changed %+v to %+v", set, d)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB",
		640 << 20: "640 MiB", 3 << 40: "3 TiB", 1<<64 - 1: "16 EiB",
	} {
		if got := base.FormatSize(n); got != want {
			t.Errorf("base.FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// formatScores prints the base level and, per level, what Scores says.
func formatScores(v *manifest.Version, opts Options) string {
	scores, baseLevel := Scores(v, opts)
	var b strings.Builder
	fmt.Fprintf(&b, "base level: L%d\n", baseLevel)
	// The compensated sizes get a column when deletions change one.
	compensated := false
	for _, s := range scores {
		compensated = compensated || s.Compensated != s.Bytes
	}
	fmt.Fprintf(&b, "%-3s %5s %9s", "", "files", "bytes")
	if compensated {
		fmt.Fprintf(&b, " %11s", "compensated")
	}
	fmt.Fprintf(&b, " %9s %8s %6s\n", "target", "fullness", "score")
	for _, s := range scores {
		target := "-"
		if s.Target > 0 {
			target = base.FormatSize(s.Target)
		}
		fmt.Fprintf(&b, "L%-2d %5d %9s", s.Level, s.Files, base.FormatSize(s.Bytes))
		if compensated {
			fmt.Fprintf(&b, " %11s", base.FormatSize(s.Compensated))
		}
		fmt.Fprintf(&b, " %9s %8.2f %6.2f\n", target, s.Fullness, s.Score)
	}
	return b.String()
}
