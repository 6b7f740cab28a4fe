package shale

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/sstable"
)

// LookupTrace is the path of one point lookup, step by step: which memtables
// and tables it consulted, which it skipped by key range or by filter
// without any I/O, which the row cache answered (a step of its own, right
// after the table's filter step), and which blocks it read. kvsh's
// `explain get` prints it.
type LookupTrace struct {
	Key    []byte
	Steps  []TraceStep
	Result string // "found in ...", "deleted in ...", or "absent"
	Value  []byte // the value found, if any
}

// TraceStep is one place a lookup looked.
type TraceStep struct {
	Source string // "memtable", "immutable memtable 1", "L0 000012.sst", "L0 000012 row cache", "L3"
	Level  int    // -1 for memtables
	// FileNum, Smallest and Largest describe the table, if Source is one.
	// LargestExclusive says that the table's range ends just before
	// Largest: a range tombstone's end bounds it.
	FileNum           uint64
	Smallest, Largest []byte
	LargestExclusive  bool
	Outcome           string // what the step decided, in words
	BlocksFromDisk    int
	BlocksFromCache   int
	FilterChecked     bool
	FilterSkipped     bool // the filter said "definitely not": no I/O
	FalsePositive     bool // the filter said "maybe" and the table did not hold the key
	RowCacheHit       bool // the table's row cache answered: no block read
	// FilterError says why the table has no filter although its writer was
	// given one: the filter's name and why it could not be built.
	FilterError string
	// RangeTombstone is the table's range tombstone fragment that covers
	// the key, as "[start,end)#seqnums", if the lookup sees one.
	RangeTombstone string
	// OutsideRange says the key lies outside the table's key range (or,
	// for a level step, every file's): skipped, no I/O.
	OutsideRange bool
}

// TraceGet looks key up like Get and returns the path the lookup took. A key
// that is absent is not an error: the trace says so.
func (db *DB) TraceGet(key []byte) (*LookupTrace, error) {
	return db.traceGet(key, readLatest)
}

// traceGet traces a lookup at seq (a snapshot's, or readLatest).
func (db *DB) traceGet(key []byte, seq base.SeqNum) (*LookupTrace, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.leave()
	t := &LookupTrace{Key: append([]byte{}, key...)}
	val, err := db.get(key, seq, t)
	if err != nil && err != ErrNotFound {
		return t, err
	}
	t.Value = val
	return t, nil
}

func (t *LookupTrace) memtable(i int, ok bool, kind base.Kind) {
	src := "memtable"
	if i > 0 {
		src = fmt.Sprintf("immutable memtable %d", i)
	}
	s := TraceStep{Source: src, Level: -1, Outcome: "miss"}
	if ok {
		s.Outcome = found(kind)
		t.Result = s.Outcome + " in " + src
	}
	t.Steps = append(t.Steps, s)
}

func found(kind base.Kind) string {
	switch kind {
	case base.KindDelete:
		return "deleted"
	case base.KindRangeDelete:
		return "deleted by a range tombstone"
	}
	return "found"
}

// levelMiss records a level >= 1 where no file's range holds the key.
// Empty levels are not steps.
func (t *LookupTrace) levelMiss(level, files int) {
	if files == 0 {
		return
	}
	outcome := fmt.Sprintf("no file's key range holds the key (%d files): skipped, no I/O", files)
	t.Steps = append(t.Steps, TraceStep{Source: fmt.Sprintf("L%d", level), Level: level, Outcome: outcome, OutsideRange: true})
}

func tableStep(level int, m *manifest.FileMeta) TraceStep {
	return TraceStep{
		Source:   fmt.Sprintf("L%d %06d.sst", level, m.FileNum),
		Level:    level,
		FileNum:  m.FileNum,
		Smallest: m.Smallest.UserKey,
		Largest:  m.Largest.UserKey,
		// A range tombstone's end as the largest key is exclusive.
		LargestExclusive: m.Largest.IsExclusiveSentinel(),
	}
}

func (t *LookupTrace) rangeSkip(level int, m *manifest.FileMeta) {
	s := tableStep(level, m)
	s.Outcome = "key outside the table's range: skipped, no I/O"
	s.OutsideRange = true
	t.Steps = append(t.Steps, s)
}

func (t *LookupTrace) table(level int, m *manifest.FileMeta, props *sstable.Properties, st *sstable.GetTrace, ok bool, kind base.Kind) {
	s := tableStep(level, m)
	s.FilterError = props.FilterError
	s.FilterChecked = st.FilterChecked
	s.FilterSkipped = st.FilterChecked && !st.FilterMayContain
	s.BlocksFromDisk = st.BlocksFromDisk
	s.BlocksFromCache = st.BlocksFromCache
	s.FalsePositive = st.FalsePositive && !st.RowCacheHit
	if st.RangeDel != nil {
		s.RangeTombstone = st.RangeDel.String()
	}
	filter := "no filter"
	switch {
	case st.FilterChecked:
		filter = "filter: maybe"
	case s.FilterError != "":
		filter = fmt.Sprintf("no filter (%s)", s.FilterError)
	}
	switch {
	case ok && kind == base.KindRangeDelete:
		s.Outcome = fmt.Sprintf("deleted by range tombstone %s (seqnum %d)", s.RangeTombstone, st.RangeDelSeq)
		if s.FilterSkipped {
			// The filter holds point keys only; the tombstones, in
			// memory, apply whatever it says.
			s.Outcome = "filter: definitely not, but " + s.Outcome + ", no I/O"
		}
		t.Result = found(kind) + " in " + s.Source
	case s.FilterSkipped:
		s.Outcome = "filter: definitely not; skipped, no I/O"
	case st.RowCacheHit:
		s.Outcome = filter
		t.Steps = append(t.Steps, s)
		t.rowCacheHit(level, m, st.FalsePositive, ok, kind)
		return
	case ok:
		s.Outcome = found(kind)
		t.Result = s.Outcome + " in " + s.Source
	default:
		s.Outcome = filter + "; not in the table"
		if s.FalsePositive {
			s.Outcome += " (a false positive)"
		}
	}
	if st.RowCacheChecked && !st.RowCacheHit {
		s.Outcome += "; row cache: miss"
	}
	t.Steps = append(t.Steps, s)
}

// rowCacheHit records the step in which a table's row cache answered.
func (t *LookupTrace) rowCacheHit(level int, m *manifest.FileMeta, falsePositive, ok bool, kind base.Kind) {
	s := TraceStep{
		Source:        fmt.Sprintf("L%d %06d row cache", level, m.FileNum),
		Level:         level,
		FileNum:       m.FileNum,
		RowCacheHit:   true,
		FalsePositive: falsePositive,
		Outcome:       "hit: not in the table",
	}
	if falsePositive {
		s.Outcome += " (a false positive)"
	}
	if ok {
		s.Outcome = "hit: " + found(kind)
		t.Result = found(kind) + " in " + s.Source
	}
	s.Outcome += "; no I/O"
	t.Steps = append(t.Steps, s)
}

// rangeEnd closes the printed key range of the step's table: "]", or ")"
// when its largest key is exclusive.
func (s TraceStep) rangeEnd() string {
	if s.LargestExclusive {
		return ")"
	}
	return "]"
}

// String renders the trace for people (kvsh's explain get prints it): one
// numbered line per place the lookup looked, with the table's key range and
// the blocks read, then the result and the totals.
func (t *LookupTrace) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "get %s\n", FormatKey(t.Key))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	var disk, cached, checked, skipped, falsePos int
	for i, s := range t.Steps {
		keyRange := ""
		if s.FileNum != 0 && !s.RowCacheHit { // a row cache step names its table above it
			keyRange = fmt.Sprintf("[%s .. %s%s", FormatKey(s.Smallest), FormatKey(s.Largest), s.rangeEnd())
		}
		outcome := s.Outcome
		if s.BlocksFromDisk+s.BlocksFromCache > 0 {
			outcome += fmt.Sprintf("; blocks: %d from disk, %d from cache", s.BlocksFromDisk, s.BlocksFromCache)
		}
		fmt.Fprintf(tw, "  %d.\t%s\t%s\t%s\n", i+1, s.Source, keyRange, outcome)
		disk += s.BlocksFromDisk
		cached += s.BlocksFromCache
		for _, c := range []struct {
			n  *int
			on bool
		}{{&checked, s.FilterChecked}, {&skipped, s.FilterSkipped}, {&falsePos, s.FalsePositive}} {
			if c.on {
				*c.n++
			}
		}
	}
	tw.Flush()
	result := t.Result
	if result == "" {
		result = "absent"
	}
	if t.Value != nil {
		result += ": " + FormatKey(t.Value)
	}
	fmt.Fprintf(&b, "=> %s\n=> %s from disk, %d from cache; filters: %d checked, %d skipped, %s\n",
		result, plural(disk, "block"), cached, checked, skipped, plural(falsePos, "false positive"))
	return b.String()
}

// plural is "1 block", "2 blocks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// FormatKey renders a key (or a value) for people, unambiguously: as it is
// when it is non-empty printable ASCII without a space, quote, backslash,
// '#' or ','; otherwise double-quoted, with \n, \r, \t, \", \\ and \xHH for
// every other byte that is not printable ASCII. kvsh reads this form back as
// the same bytes.
func FormatKey(key []byte) string { return base.FormatKey(key) }
