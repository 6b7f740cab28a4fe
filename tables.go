package shale

import (
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"
)

// TableInfo describes one live table: where it sits in the tree, what it
// holds, and what its filter has done since the table was opened (at Open,
// or when a flush or compaction wrote it).
type TableInfo struct {
	FileNum uint64 // the table is NNNNNN.sst
	Level   int
	// Smallest and Largest are the table's smallest and largest user keys,
	// range tombstones included. LargestExclusive says that the range ends
	// just before Largest: a range tombstone's end bounds it.
	Smallest, Largest []byte
	LargestExclusive  bool
	Size              uint64 // bytes on disk
	Entries           uint64 // point entries, deletions included
	RangeDels         uint64 // range tombstones
	// Filter is the name of the table's filter policy ("" for none) and
	// FilterBitsPerKey its measured size per distinct user key. FilterError
	// says why a table has no filter although its writer was given one.
	Filter           string
	FilterBitsPerKey float64
	FilterError      string
	// Compression is how the table's writer compressed its blocks:
	// "snappy", "none" or "zstd" (Compression.String).
	Compression string
	// FilterChecks, FilterSkips and FilterFalsePositives count, for this
	// table alone, what Metrics' fields of the same names count for the
	// store.
	FilterChecks, FilterSkips, FilterFalsePositives int64
}

// TableLevels is the live tables of a store, indexed by level, as Tables
// returns them. Its String method prints them as a table a person reads.
type TableLevels [][]TableInfo

// Tables lists the live tables of the current version, indexed by level
// (always NumLevels entries): L0 newest first, every other level in key
// order. After Close it returns nil.
func (db *DB) Tables() TableLevels {
	if err := db.enter(); err != nil {
		return nil
	}
	defer db.leave()
	rs, _ := db.loadReadState(readLatest)
	defer rs.unref()
	v := rs.v
	levels := make(TableLevels, NumLevels)
	for level, files := range v.Levels {
		for _, f := range files {
			r := v.tables[f.FileNum].reader
			props := r.Properties()
			info := TableInfo{
				FileNum:          f.FileNum,
				Level:            level,
				Smallest:         bytes.Clone(f.Smallest.UserKey),
				Largest:          bytes.Clone(f.Largest.UserKey),
				LargestExclusive: f.Largest.IsExclusiveSentinel(),
				Size:             f.Size,
				Entries:          props.NumEntries,
				RangeDels:        props.NumRangeDels,
				Filter:           props.FilterPolicy,
				FilterBitsPerKey: props.FilterBitsPerKey(),
				FilterError:      props.FilterError,
				Compression:      props.Compression,
			}
			info.FilterChecks, info.FilterSkips, info.FilterFalsePositives = r.FilterCounts()
			levels[level] = append(levels[level], info)
		}
	}
	return levels
}

// maxShownKey is how many characters of a key TableLevels.String shows; a
// longer key is cut, and ends in "...".
const maxShownKey = 24

// String prints one line per table, level by level (empty levels left
// out): its level, file, key range, size, entries and range tombstones,
// filter and bits per key, and its filter's checks, skips and false
// positives since it was opened; then a total line, and a line for each
// table whose filter could not be built. Keys are in FormatKey's form, cut
// at 24 characters; a range that ends before its largest key (a range
// tombstone's end) is shown as [smallest .. largest).
func (l TableLevels) String() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "level\ttable\tkeys\tsize\tentries\trange dels\tfilter\tchecks\tskips\tfalse pos")
	var tables int
	var size, entries, rangeDels uint64
	var notes []string
	for _, level := range l {
		for _, t := range level {
			end := "]"
			if t.LargestExclusive {
				end = ")"
			}
			filter := "none"
			if t.Filter != "" {
				filter = fmt.Sprintf("%s %.1f bits/key", t.Filter, t.FilterBitsPerKey)
			}
			if t.FilterError != "" {
				notes = append(notes, fmt.Sprintf("%06d.sst has no filter: %s", t.FileNum, t.FilterError))
			}
			fmt.Fprintf(tw, "L%d\t%06d.sst\t[%s .. %s%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\n",
				t.Level, t.FileNum, shownKey(t.Smallest), shownKey(t.Largest), end,
				humanBytes(int64(t.Size)), t.Entries, t.RangeDels, filter,
				t.FilterChecks, t.FilterSkips, t.FilterFalsePositives)
			tables++
			size += t.Size
			entries += t.Entries
			rangeDels += t.RangeDels
		}
	}
	if tables == 0 {
		return "no tables\n"
	}
	fmt.Fprintf(tw, "total\t%s\t\t%s\t%d\t%d\n", plural(tables, "table"), humanBytes(int64(size)), entries, rangeDels)
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(&b, n)
	}
	return b.String()
}

// shownKey is FormatKey's form of key, cut to maxShownKey characters.
func shownKey(key []byte) string {
	s := FormatKey(key)
	if len(s) > maxShownKey {
		s = s[:maxShownKey-3] + "..."
	}
	return s
}
