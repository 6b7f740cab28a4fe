package shale

import (
	"bytes"
	"slices"
	"time"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/rangedel"
)

// Delete-only compactions: a table whose whole key range a newer range
// tombstone deletes, for every read that can see any of the table's
// entries, holds nothing anyone can read. It leaves the version in an edit
// that only deletes it: it is neither read nor rewritten. This is what makes
// DeleteRange reclaim space at the cost of one write, whatever the size of
// the range.

// deleteOnlyFiles returns the tables of v that range tombstones of newer
// tables delete wholly, given the live snapshots (ascending). Tombstones
// still in memtables are not considered: the tables go once the tombstone is
// flushed.
//
// A table F at some level is deleted when the tombstones of the tables
// newer than it (the L0 tables before it, then every shallower level) cover
// F's key range without a gap, each with a seqnum t above every seqnum of F
// and no snapshot s with F.SmallestSeq <= s < t: a snapshot that old sees
// some of F and not the tombstone. F's own range tombstones go with it;
// they delete, within F's range, only what the newer tombstone deletes too
// (for every read that sees them, by the snapshot rule).
func deleteOnlyFiles(v *version, snapshots []base.SeqNum) []levelFile {
	var (
		out   []levelFile
		newer rangedel.Spans
	)
	covered := func(f *manifest.FileMeta) bool {
		return len(newer) > 0 && coversFile(newer, f, snapshots)
	}
	for _, f := range v.Levels[0] {
		if covered(f) {
			out = append(out, levelFile{0, f})
		}
		if s := v.tables[f.FileNum].reader.RangeDels(); len(s) > 0 {
			newer = rangedel.Merge(newer, s)
		}
	}
	for level := 1; level < len(v.Levels); level++ {
		var own []rangedel.Spans
		for _, f := range v.Levels[level] {
			if covered(f) {
				out = append(out, levelFile{level, f})
			}
			if s := v.tables[f.FileNum].reader.RangeDels(); len(s) > 0 {
				own = append(own, s)
			}
		}
		if len(own) > 0 {
			newer = rangedel.Merge(append(own, newer)...)
		}
	}
	return out
}

// coversFile reports whether the tombstones spans delete every key of f for
// every read that sees any of f (see deleteOnlyFiles).
func coversFile(spans rangedel.Spans, f *manifest.FileMeta, snapshots []base.SeqNum) bool {
	key := f.Smallest.UserKey
	i := spans.Find(key)
	if i < 0 {
		return false
	}
	for first := i; i < len(spans); i++ {
		sp := &spans[i]
		if i > first && !bytes.Equal(sp.Start, key) {
			return false // a gap before sp
		}
		if !deletesAll(sp.Seqs, f, snapshots) {
			return false
		}
		c := bytes.Compare(sp.End, f.Largest.UserKey)
		if c > 0 || c == 0 && f.Largest.IsExclusiveSentinel() {
			return true
		}
		key = sp.End
	}
	return false
}

// deletesAll reports whether one of a fragment's seqnums (newest first) is
// above every seqnum of f with no snapshot between f's oldest and it.
func deletesAll(seqs []base.SeqNum, f *manifest.FileMeta, snapshots []base.SeqNum) bool {
	// The oldest tombstone above f is the best candidate: fewer snapshots
	// lie below it.
	j := len(seqs) - 1
	for j >= 0 && seqs[j] <= f.LargestSeq {
		j--
	}
	if j < 0 {
		return false
	}
	i, _ := slices.BinarySearch(snapshots, f.SmallestSeq)
	return i == len(snapshots) || snapshots[i] >= seqs[j]
}

// runDeleteOnly removes files from the version, reading none of them.
func (db *DB) runDeleteOnly(files []levelFile) error {
	start := time.Now()
	edit := &manifest.VersionEdit{}
	var bytesFreed uint64
	for _, in := range files {
		edit.Deleted = append(edit.Deleted, manifest.DeletedFile{Level: in.level, FileNum: in.meta.FileNum})
		bytesFreed += in.meta.Size
	}
	if err := db.logAndApply(edit, nil); err != nil {
		return err
	}
	db.stats.deleteOnlyCompactions.Add(1)
	db.logf("delete-only compaction: dropped %d tables (%d bytes) that range tombstones delete", len(files), bytesFreed)
	db.compactionEnd(CompactionInfo{Kind: CompactionDeleteOnly, Reason: "range tombstones delete the tables wholly",
		Inputs: eventInputs(files), BytesIn: int64(bytesFreed), Duration: time.Since(start)})
	return nil
}
