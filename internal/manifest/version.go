// Package manifest describes the shape of the tree: which SSTables are live
// at each level (a Version), and the edits that move from one version to the
// next, which the DB logs in its MANIFEST file.
package manifest

import (
	"fmt"
	"sort"
	"strings"

	"github.com/shale-db/shale/internal/base"
)

// NumLevels is the number of levels in the tree, L0 through L6.
const NumLevels = 7

// FileMeta describes one live SSTable.
type FileMeta struct {
	FileNum uint64 // the table is NNNNNN.sst
	Size    uint64 // bytes on disk
	// Smallest and Largest bound the table's internal keys, its range
	// tombstones included. A largest key that is a base.RangeDelSentinel
	// is exclusive: the table holds nothing at its user key (see
	// EndsBefore).
	Smallest base.InternalKey
	Largest  base.InternalKey
	// SmallestSeq and LargestSeq bound the sequence numbers in the table.
	// L0 files are ordered newest first by LargestSeq.
	SmallestSeq, LargestSeq base.SeqNum
	// Entries counts the table's point entries and Deletions those of
	// them that are point deletions, from the table's properties. They are
	// not in the MANIFEST: the DB sets them when it opens the table, before
	// the file joins a version that anyone else sees; zero means unknown.
	// The compaction picker weighs a level's deletions by them.
	Entries, Deletions uint64
}

// String formats the file as "000012:[a#3,SET-f#9,DEL]".
func (f *FileMeta) String() string {
	return fmt.Sprintf("%06d:[%s-%s]", f.FileNum, f.Smallest, f.Largest)
}

// EndsBefore reports whether every user key of the file sorts before ukey:
// its largest key is below ukey, or is ukey as an exclusive sentinel.
func (f *FileMeta) EndsBefore(ukey []byte) bool {
	c := base.CompareUserKeys(f.Largest.UserKey, ukey)
	return c < 0 || c == 0 && f.Largest.IsExclusiveSentinel()
}

// Overlaps reports whether the file's user-key range meets [lo, hi]
// (inclusive; nil means unbounded on that side).
func (f *FileMeta) Overlaps(lo, hi []byte) bool {
	if lo != nil && f.EndsBefore(lo) {
		return false
	}
	if hi != nil && base.CompareUserKeys(f.Smallest.UserKey, hi) > 0 {
		return false
	}
	return true
}

// ContainsKey reports whether ukey falls inside the file's user-key range.
func (f *FileMeta) ContainsKey(ukey []byte) bool { return f.Overlaps(ukey, ukey) }

// Version is an immutable picture of the live tables. L0 files may overlap
// and are kept newest first; the files of every other level are disjoint and
// sorted by smallest key.
type Version struct {
	Levels [NumLevels][]*FileMeta
}

// Overlapping returns the files of level whose user-key ranges meet
// [lo, hi] (inclusive; nil means unbounded).
func (v *Version) Overlapping(level int, lo, hi []byte) []*FileMeta {
	var out []*FileMeta
	for _, f := range v.Levels[level] {
		if f.Overlaps(lo, hi) {
			out = append(out, f)
		}
	}
	return out
}

// FileForKey returns the one file of a level >= 1 whose range holds ukey, or
// nil, by binary search over the level's sorted, disjoint files.
func (v *Version) FileForKey(level int, ukey []byte) *FileMeta {
	files := v.Levels[level]
	i := sort.Search(len(files), func(i int) bool { return !files[i].EndsBefore(ukey) })
	if i < len(files) && base.CompareUserKeys(files[i].Smallest.UserKey, ukey) <= 0 {
		return files[i]
	}
	return nil
}

// LevelSize is the total size in bytes of a level's files.
func (v *Version) LevelSize(level int) uint64 {
	var n uint64
	for _, f := range v.Levels[level] {
		n += f.Size
	}
	return n
}

// String lists the files level by level.
func (v *Version) String() string {
	var b strings.Builder
	for level, files := range v.Levels {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d:\n", level)
		for _, f := range files {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	return b.String()
}
