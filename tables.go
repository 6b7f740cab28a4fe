package shale

import "bytes"

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

// Tables lists the live tables of the current version, indexed by level
// (always NumLevels entries): L0 newest first, every other level in key
// order. After Close it returns nil.
func (db *DB) Tables() [][]TableInfo {
	if err := db.enter(); err != nil {
		return nil
	}
	defer db.leave()
	rs, _ := db.loadReadState(readLatest)
	defer rs.unref()
	v := rs.v
	levels := make([][]TableInfo, NumLevels)
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
