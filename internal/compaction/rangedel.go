package compaction

import (
	"bytes"
	"slices"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/rangedel"
)

// CompactTombstones returns the range tombstones a compaction writes, from
// the fragmented tombstones of its inputs. The rule is Iter's for point
// tombstones, per fragment: of a fragment's seqnums only the newest in each
// snapshot stripe can matter (an older one in the same stripe deletes
// nothing the newer one does not, for every read that sees it), and one in
// stripe 0 goes too when elide(start, end) says that no level below the
// output holds a key of the fragment: the versions it covers in this
// compaction are dropped (Iter drops them), so it would hide nothing. elide
// nil means never.
//
// The result is fragmented; it shares key bytes with spans. The caller
// truncates it at the bounds of each output table (rangedel.Spans.Clip).
func CompactTombstones(spans rangedel.Spans, snapshots []base.SeqNum, elide func(start, end []byte) bool) rangedel.Spans {
	var out []rangedel.Tombstone
	for _, sp := range spans {
		prevStripe := -1
		for _, t := range sp.Seqs { // newest first
			stripe, _ := slices.BinarySearch(snapshots, t)
			if stripe == prevStripe {
				continue
			}
			prevStripe = stripe
			if stripe == 0 && elide != nil && elide(sp.Start, sp.End) {
				continue
			}
			out = append(out, rangedel.Tombstone{Start: sp.Start, End: sp.End, Seq: t})
		}
	}
	return rangedel.Fragment(out)
}

// IsBaseLevelForRange reports whether no level below outputLevel has a file
// that meets the user keys [start, end): the range analogue of
// IsBaseLevelForKey.
func IsBaseLevelForRange(v *manifest.Version, outputLevel int, start, end []byte) bool {
	for level := outputLevel + 1; level < manifest.NumLevels; level++ {
		for _, f := range v.Levels[level] {
			if !f.EndsBefore(start) && bytes.Compare(f.Smallest.UserKey, end) < 0 {
				return false
			}
		}
	}
	return true
}

// coveredInStripe reports whether a range tombstone of spans deletes the
// point entry k for every read that sees k: a tombstone newer than k in
// k's own snapshot stripe. (The oldest tombstone newer than k is the one to
// test: if any such tombstone shares k's stripe, so does it.)
func coveredInStripe(spans rangedel.Spans, snapshots []base.SeqNum, k base.InternalKey, stripe int) bool {
	i := spans.Find(k.UserKey)
	if i < 0 {
		return false
	}
	seqs := spans[i].Seqs
	j := len(seqs) - 1
	for j >= 0 && seqs[j] <= k.SeqNum() {
		j--
	}
	if j < 0 {
		return false
	}
	tstripe, _ := slices.BinarySearch(snapshots, seqs[j])
	return tstripe == stripe
}
