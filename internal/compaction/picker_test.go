package compaction

import (
	"fmt"
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
//	define [l0-threshold=N] [lbase=SIZE] [multiplier=N]  files, one a line; resets the cursor
//	pick [install]       Pick; install applies the result to the version
//	scores               the base level, and each level's target, fullness and score
//	base-level output=N keys=(a,b)  IsBaseLevelForKey for each key
func TestPicker(t *testing.T) {
	var (
		v      *manifest.Version
		opts   Options
		cursor Cursor
	)
	datadriven.RunTest(t, "testdata/picker", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			v, opts, cursor = parseVersion(t, d.Input), Options{}, Cursor{}
			d.MaybeScanArgs(t, "l0-threshold", &opts.L0CompactionThreshold)
			d.MaybeScanArgs(t, "multiplier", &opts.LevelMultiplier)
			var lbase string
			if d.MaybeScanArgs(t, "lbase", &lbase) {
				opts.LBaseMaxBytes = parseSize(t, lbase)
			}
			return formatVersion(v)

		case "pick":
			c := Pick(v, opts, &cursor)
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

// TestPickRotates checks that successive compactions of a level sweep its
// key space in order and wrap around, with the version left unchanged (as
// when compactions keep failing, or while a level stays over its target).
func TestPickRotates(t *testing.T) {
	v := &manifest.Version{}
	// The file "e" holds a single user key: it must not be picked twice.
	keys := [][2]string{{"a", "az"}, {"c", "cz"}, {"e", "e"}, {"g", "gz"}, {"i", "iz"}}
	for i, k := range keys {
		v.Levels[3] = append(v.Levels[3], &manifest.FileMeta{
			FileNum: uint64(i + 1), Size: 2 << 30,
			Smallest: base.MakeInternalKey([]byte(k[0]), 1, base.KindSet),
			Largest:  base.MakeInternalKey([]byte(k[1]), 1, base.KindSet),
		})
	}
	var cursor Cursor
	for i := range 2*len(keys) + 1 {
		c := Pick(v, Options{}, &cursor)
		if c == nil || c.Level != 3 || len(c.Inputs[0]) != 1 {
			t.Fatalf("pick %d: %v", i, c)
		}
		if got, want := c.Inputs[0][0].FileNum, uint64(i%len(keys)+1); got != want {
			t.Fatalf("pick %d took file %d, want %d", i, got, want)
		}
	}
}

// TestPickRandom picks and installs compactions on random trees until none
// is needed, checking every pick.
func TestPickRandom(t *testing.T) {
	for seed := range uint64(1000) {
		rng := rand.New(rand.NewPCG(seed, 0))
		v := randomVersion(rng)
		opts := Options{L0CompactionThreshold: 1 + rng.IntN(4), LBaseMaxBytes: 1 + uint64(rng.IntN(300)), LevelMultiplier: 1 + rng.IntN(10)}
		var cursor Cursor
		steps := 0
		for c := Pick(v, opts, &cursor); c != nil; c = Pick(v, opts, &cursor) {
			checkCompaction(t, v, c)
			_, baseLevel := Scores(v, opts)
			if want := max(c.Level+1, baseLevel); c.OutputLevel != want || c.Score < 1 {
				t.Fatalf("seed %d: Pick returned %s, score %.2f; want output level L%d", seed, c, c.Score, want)
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
	got := Options{L0CompactionThreshold: -1}.WithDefaults()
	want := Options{L0CompactionThreshold: 6, LBaseMaxBytes: 64 << 20, LevelMultiplier: 10}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	set := Options{L0CompactionThreshold: 2, LBaseMaxBytes: 1, LevelMultiplier: 3}
	if set.WithDefaults() != set {
		t.Fatalf("WithDefaults changed %+v to %+v", set, set.WithDefaults())
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
	fmt.Fprintf(&b, "%-3s %5s %9s %9s %8s %6s\n", "", "files", "bytes", "target", "fullness", "score")
	for _, s := range scores {
		target := "-"
		if s.Target > 0 {
			target = base.FormatSize(s.Target)
		}
		fmt.Fprintf(&b, "L%-2d %5d %9s %9s %8.2f %6.2f\n", s.Level, s.Files, base.FormatSize(s.Bytes), target, s.Fullness, s.Score)
	}
	return b.String()
}
