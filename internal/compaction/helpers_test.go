package compaction

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/itertest"
	"github.com/shale-db/shale/internal/manifest"
)

// parseKey parses "ukey#seq,KIND" (see itertest).
func parseKey(t testing.TB, s string) base.InternalKey {
	t.Helper()
	k, err := itertest.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// parseEntries parses entries separated by spaces or newlines.
func parseEntries(t testing.TB, s string) (keys []base.InternalKey, values [][]byte) {
	t.Helper()
	keys, values, err := itertest.ParseEntries(s)
	if err != nil {
		t.Fatal(err)
	}
	return keys, values
}

// parseSize parses "123", "4KiB", "1.5MiB" or "2GiB".
func parseSize(t testing.TB, s string) uint64 {
	t.Helper()
	mult := 1.0
	for i, unit := range []string{"KiB", "MiB", "GiB"} {
		if num, ok := strings.CutSuffix(s, unit); ok {
			s, mult = num, float64(uint64(1)<<(10*(i+1)))
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("bad size %q", s)
	}
	return uint64(f * mult)
}

// parseVersion reads one file per line:
//
//	L0: 000005:a#10,SET-c#12,SET size=1MiB [entries=N dels=M wasted=W]
//
// entries and dels set the file's entry counts (manifest.FileMeta.Entries,
// Deletions), unknown (zero) when absent; wasted gives the file W wasted
// reads (Options.WastedReads), returned by file number.
// It keeps L0 newest first (by largest seqnum) and sorts the other levels by
// smallest key, as a Version requires.
func parseVersion(t testing.TB, input string) (*manifest.Version, map[uint64]int64) {
	t.Helper()
	v := &manifest.Version{}
	wasted := map[uint64]int64{}
	for _, line := range strings.Split(input, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var level int
		var num uint64
		var keys, size string
		fields := strings.Fields(line)
		if len(fields) < 3 {
			t.Fatalf("bad file line %q", line)
		}
		if _, err := fmt.Sscanf(strings.Join(fields[:3], " "), "L%d: %d:%s size=%s", &level, &num, &keys, &size); err != nil {
			t.Fatalf("bad file line %q: %v", line, err)
		}
		var entries, dels uint64
		for _, arg := range fields[3:] {
			name, val, _ := strings.Cut(arg, "=")
			n, err := strconv.ParseUint(val, 10, 64)
			switch {
			case err != nil:
				t.Fatalf("bad %s in %q: %v", name, line, err)
			case name == "entries":
				entries = n
			case name == "dels":
				dels = n
			case name == "wasted":
				wasted[num] = int64(n)
			default:
				t.Fatalf("unknown argument %q in %q", arg, line)
			}
		}
		lo, hi, ok := strings.Cut(keys, "-")
		if !ok {
			t.Fatalf("bad key range in %q", line)
		}
		f := &manifest.FileMeta{FileNum: num, Size: parseSize(t, size), Smallest: parseKey(t, lo), Largest: parseKey(t, hi), Entries: entries, Deletions: dels}
		f.SmallestSeq = min(f.Smallest.SeqNum(), f.Largest.SeqNum())
		f.LargestSeq = max(f.Smallest.SeqNum(), f.Largest.SeqNum())
		v.Levels[level] = append(v.Levels[level], f)
	}
	sortLevels(v)
	return v, wasted
}

func sortLevels(v *manifest.Version) {
	slices.SortStableFunc(v.Levels[0], func(a, b *manifest.FileMeta) int {
		return cmp.Compare(b.LargestSeq, a.LargestSeq)
	})
	for _, files := range v.Levels[1:] {
		slices.SortFunc(files, func(a, b *manifest.FileMeta) int {
			return base.Compare(a.Smallest, b.Smallest)
		})
	}
}

// formatVersion lists the files level by level, with their sizes.
func formatVersion(v *manifest.Version) string {
	var b strings.Builder
	for level, files := range v.Levels {
		for _, f := range files {
			fmt.Fprintf(&b, "L%d: %s %s\n", level, f, base.FormatSize(f.Size))
		}
	}
	if b.Len() == 0 {
		return "empty\n"
	}
	return b.String()
}

// formatCompaction prints c's summary and its inputs, one file a line.
func formatCompaction(c *Compaction) string {
	if c == nil {
		return "nothing to compact\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", c)
	for i, level := range []int{c.Level, c.OutputLevel} {
		for _, f := range c.Inputs[i] {
			fmt.Fprintf(&b, "  L%d: %s\n", level, f)
		}
	}
	return b.String()
}

// install applies c to v as the DB would if the compaction wrote a single
// output file spanning its inputs, numbered fileNum, and returns the new
// version.
func install(v *manifest.Version, c *Compaction, fileNum uint64) *manifest.Version {
	var all []*manifest.FileMeta
	for _, in := range c.Inputs {
		all = append(all, in...)
	}
	out := &manifest.FileMeta{FileNum: fileNum, Smallest: all[0].Smallest, Largest: all[0].Largest,
		SmallestSeq: all[0].SmallestSeq, LargestSeq: all[0].LargestSeq}
	for _, f := range all {
		out.Size += f.Size
		if base.Compare(f.Smallest, out.Smallest) < 0 {
			out.Smallest = f.Smallest
		}
		if base.Compare(f.Largest, out.Largest) > 0 {
			out.Largest = f.Largest
		}
		out.SmallestSeq = min(out.SmallestSeq, f.SmallestSeq)
		out.LargestSeq = max(out.LargestSeq, f.LargestSeq)
	}
	next := &manifest.Version{}
	for level, files := range v.Levels {
		for _, f := range files {
			if !slices.Contains(all, f) {
				next.Levels[level] = append(next.Levels[level], f)
			}
		}
	}
	next.Levels[c.OutputLevel] = append(next.Levels[c.OutputLevel], out)
	sortLevels(next)
	return next
}
