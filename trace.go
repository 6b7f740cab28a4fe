package shale

import (
	"bytes"
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

// memtable records the lookup in memtable i (0 the mutable one); filtered
// says its key filter ruled the key out, so no search was made.
func (t *LookupTrace) memtable(i int, ok bool, kind base.Kind, filtered bool) {
	src := "memtable"
	if i > 0 {
		src = fmt.Sprintf("immutable memtable %d", i)
	}
	s := TraceStep{Source: src, Level: -1, Outcome: "miss"}
	if filtered {
		s.Outcome = "miss: its key filter says never written here"
	}
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
		Source:  fmt.Sprintf("L%d %06d.sst", level, m.FileNum),
		Level:   level,
		FileNum: m.FileNum,
		// Copies: the caller owns what a trace returns, and the table's
		// bounds are the version's, which reads rely on.
		Smallest: bytes.Clone(m.Smallest.UserKey),
		Largest:  bytes.Clone(m.Largest.UserKey),
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
	if stem, ok := strings.CutSuffix(noun, "ry"); ok {
		return fmt.Sprintf("%d %sries", n, stem) // entry, entries
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// FormatKey renders a key (or a value) for people, unambiguously: as it is
// when it is non-empty printable ASCII without a space, quote, backslash,
// '#' or ','; otherwise double-quoted, with \n, \r, \t, \", \\ and \xHH for
// every other byte that is not printable ASCII. kvsh reads this form back as
// the same bytes.
func FormatKey(key []byte) string { return base.FormatKey(key) }

// ScanTrace is the path of one forward scan (TraceScan): every memtable and
// table the bounded iterator considered, in the order of the tree, and for
// each whether it was read or ruled out, and why. kvsh's `explain scan`
// prints it.
type ScanTrace struct {
	// LowerBound, UpperBound and Prefix are the scan's options;
	// LowerBound and UpperBound are intersected with Prefix's keys.
	LowerBound, UpperBound, Prefix []byte
	// Extractor names the store's prefix extractor ("" for none), and
	// PrefixFilters says whether the scan consulted the tables' prefix
	// filters: Prefix is set, and the extractor maps the keys that start
	// with it to Prefix itself.
	Extractor     string
	PrefixFilters bool
	Steps         []ScanStep
	Keys          int // keys the scan returned
}

// ScanStep is one memtable or table a scan considered, or the tables of a
// level that lie outside its bounds.
type ScanStep struct {
	Source string // "memtable", "immutable memtable 1", "L0 000012.sst", "L3" (Files > 0)
	Level  int    // -1 for memtables
	// FileNum, Smallest, Largest and LargestExclusive describe the table, as
	// in TraceStep; Files counts the tables of a level step.
	FileNum           uint64
	Smallest, Largest []byte
	LargestExclusive  bool
	Files             int
	Reason            ScanReason
	// PrefixChecked is whether the table's prefix filter was consulted
	// (its answer is Reason: ScanPrefixFilter for "definitely not"), and
	// RangeChecked whether its range filter was (ScanRangeFilter).
	PrefixChecked bool
	RangeChecked  bool
	// Entries counts the internal entries (every version, deletions
	// included) the source yielded to the scan; BlocksFromDisk and
	// BlocksFromCache count the data blocks it read.
	Entries                         int
	BlocksFromDisk, BlocksFromCache int
}

// Outcome says in words what the scan did with the step's source and what
// that cost, as ScanTrace.String prints it: "range filter: definitely not;
// skipped, no I/O", or "prefix filter: maybe; read: 3 entries; blocks: 1
// from disk, 0 from cache".
func (s ScanStep) Outcome() string {
	outcome := s.Reason.String()
	if s.Reason == ScanRead && s.PrefixChecked {
		outcome = "prefix filter: maybe; " + outcome
	}
	if s.RangeChecked && s.Reason != ScanRangeFilter {
		outcome = "range filter: maybe; " + outcome
	}
	if s.Reason != ScanRead {
		return outcome + "; skipped, no I/O"
	}
	if s.Entries == 1 {
		outcome += ": 1 entry"
	} else {
		outcome += fmt.Sprintf(": %d entries", s.Entries)
	}
	if s.FileNum != 0 {
		outcome += fmt.Sprintf("; blocks: %d from disk, %d from cache", s.BlocksFromDisk, s.BlocksFromCache)
	}
	return outcome
}

// ScanReason is what a scan decided about a memtable or table.
type ScanReason int

const (
	// ScanRead: the scan read the source.
	ScanRead ScanReason = iota
	// ScanKeyRange: the table's key range lies outside the scan's bounds;
	// no I/O.
	ScanKeyRange
	// ScanPrefixFilter: the table's filter says it holds no key with the
	// scan's prefix; no I/O, but its range tombstones still apply.
	ScanPrefixFilter
	// ScanRangeFilter: the table's range filter says it holds no key
	// within the scan's bounds; no I/O, but its range tombstones still
	// apply.
	ScanRangeFilter
)

// String says the reason in words.
func (r ScanReason) String() string {
	switch r {
	case ScanRead:
		return "read"
	case ScanKeyRange:
		return "key range: outside the scan"
	case ScanPrefixFilter:
		return "prefix filter: definitely not"
	case ScanRangeFilter:
		return "range filter: definitely not"
	}
	return fmt.Sprintf("ScanReason(%d)", int(r))
}

// TraceScan scans the keys opts selects, forward, like an iterator from
// NewIter(opts) does, and returns the path it took. nil opts: the whole key
// space.
func (db *DB) TraceScan(opts *IterOptions) (*ScanTrace, error) {
	return db.traceScan(opts, readLatest)
}

// traceScan traces a scan at seq (a snapshot's, or readLatest).
func (db *DB) traceScan(opts *IterOptions, seq base.SeqNum) (*ScanTrace, error) {
	tr := &scanTracer{files: map[uint64]*scanFile{}}
	it := db.newIter(opts, seq, tr)
	if it.err != nil {
		return nil, it.err
	}
	t := &ScanTrace{LowerBound: it.lower, UpperBound: it.upper}
	if db.opts.Prefix != nil {
		t.Extractor = db.opts.Prefix.Name
	}
	if opts != nil {
		t.Prefix = bytes.Clone(opts.Prefix)
		t.PrefixFilters = db.opts.Prefix.filterable(opts.Prefix)
	}
	for ok := it.First(); ok; ok = it.Next() {
		t.Keys++
	}
	if err := it.Error(); err != nil {
		it.Close()
		return nil, err
	}
	// The iterator's version lists the tables it considered.
	if !it.enter() {
		err := it.err
		it.Close()
		return nil, err
	}
	tr.steps(t, it.rs.v)
	it.db.leave()
	return t, it.Close()
}

// scanTracer records, while a traced iterator runs, what it did with each
// memtable and table.
type scanTracer struct {
	memtables []*ScanStep
	files     map[uint64]*scanFile
}

// scanFile is what a traced scan did with one table.
type scanFile struct {
	step   ScanStep
	blocks sstable.GetTrace // the blocks read, counted by the table's iterator
}

// memtable returns it, counting its entries when t records a scan.
func (t *scanTracer) memtable(it base.InternalIterator) base.InternalIterator {
	if t == nil {
		return it
	}
	src := "memtable"
	if n := len(t.memtables); n > 0 {
		src = fmt.Sprintf("immutable memtable %d", n)
	}
	s := &ScanStep{Source: src, Level: -1, Reason: ScanRead}
	t.memtables = append(t.memtables, s)
	return &countingIter{InternalIterator: it, n: &s.Entries}
}

// file records that the scan considered table m of level, and decided
// reason, and returns its record. A table considered again (a scan that
// turns around reopens it) keeps one record.
func (t *scanTracer) file(level int, m *manifest.FileMeta, reason ScanReason, prefixChecked, rangeChecked bool) *scanFile {
	if t == nil {
		return nil
	}
	f := t.files[m.FileNum]
	if f == nil {
		st := tableStep(level, m)
		f = &scanFile{step: ScanStep{Source: st.Source, Level: level, FileNum: m.FileNum,
			Smallest: st.Smallest, Largest: st.Largest, LargestExclusive: st.LargestExclusive}}
		t.files[m.FileNum] = f
	}
	f.step.Reason = reason
	f.step.PrefixChecked = f.step.PrefixChecked || prefixChecked
	f.step.RangeChecked = f.step.RangeChecked || rangeChecked
	return f
}

// steps lists in t what the scan did, in the order of the tree v: the
// memtables, L0's tables newest first, then each level's tables in key
// order, its tables outside the bounds folded into one step.
func (t *scanTracer) steps(st *ScanTrace, v *version) {
	for _, s := range t.memtables {
		st.Steps = append(st.Steps, *s)
	}
	for level, files := range v.Levels {
		outside := 0
		for _, m := range files {
			f := t.files[m.FileNum]
			if level > 0 && (f == nil || f.step.Reason == ScanKeyRange) {
				outside++
				continue
			}
			f.step.BlocksFromDisk, f.step.BlocksFromCache = f.blocks.BlocksFromDisk, f.blocks.BlocksFromCache
			st.Steps = append(st.Steps, f.step)
		}
		if outside > 0 {
			st.Steps = append(st.Steps, ScanStep{Source: fmt.Sprintf("L%d", level), Level: level, Files: outside, Reason: ScanKeyRange})
		}
	}
}

// countingIter counts the entries its iterator is positioned on.
type countingIter struct {
	base.InternalIterator
	n *int
}

func (c *countingIter) count(ok bool) bool {
	if ok {
		*c.n++
	}
	return ok
}

func (c *countingIter) First() bool            { return c.count(c.InternalIterator.First()) }
func (c *countingIter) Last() bool             { return c.count(c.InternalIterator.Last()) }
func (c *countingIter) SeekGE(key []byte) bool { return c.count(c.InternalIterator.SeekGE(key)) }
func (c *countingIter) SeekLT(key []byte) bool { return c.count(c.InternalIterator.SeekLT(key)) }
func (c *countingIter) Next() bool             { return c.count(c.InternalIterator.Next()) }
func (c *countingIter) Prev() bool             { return c.count(c.InternalIterator.Prev()) }

// String renders the trace for people (kvsh's explain scan prints it): one
// numbered line per memtable, table or level the scan considered, with the
// table's key range, what the scan decided and what reading it cost, then
// the totals.
func (t *ScanTrace) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scan [%s, %s)", boundString(t.LowerBound), boundString(t.UpperBound))
	if len(t.Prefix) > 0 {
		filters := "prefix filters consulted"
		switch {
		case t.Extractor == "":
			filters = "no prefix extractor: prefix filters not consulted"
		case !t.PrefixFilters:
			filters = fmt.Sprintf("not a prefix of %s: prefix filters not consulted", t.Extractor)
		}
		fmt.Fprintf(&b, " prefix=%s (%s)", FormatKey(t.Prefix), filters)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	var disk, cached, checked, skipped, rangeChecked, rangeSkipped int
	for i, s := range t.Steps {
		keyRange := ""
		switch {
		case s.Files > 0:
			keyRange = plural(s.Files, "file")
		case s.FileNum != 0:
			keyRange = fmt.Sprintf("[%s .. %s%s", FormatKey(s.Smallest), FormatKey(s.Largest), TraceStep{LargestExclusive: s.LargestExclusive}.rangeEnd())
		}
		fmt.Fprintf(tw, "  %d.\t%s\t%s\t%s\n", i+1, s.Source, keyRange, s.Outcome())
		disk += s.BlocksFromDisk
		cached += s.BlocksFromCache
		if s.PrefixChecked {
			checked++
		}
		if s.Reason == ScanPrefixFilter {
			skipped++
		}
		if s.RangeChecked {
			rangeChecked++
		}
		if s.Reason == ScanRangeFilter {
			rangeSkipped++
		}
	}
	tw.Flush()
	fmt.Fprintf(&b, "=> %s; %s from disk, %d from cache; prefix filters: %d checked, %d skipped",
		plural(t.Keys, "key"), plural(disk, "block"), cached, checked, skipped)
	if rangeChecked > 0 {
		fmt.Fprintf(&b, "; range filters: %d checked, %d skipped", rangeChecked, rangeSkipped)
	}
	b.WriteString("\n")
	return b.String()
}

// boundString renders a scan bound: the key, or "unbounded" for none.
func boundString(k []byte) string {
	if k == nil {
		return "unbounded"
	}
	return FormatKey(k)
}
