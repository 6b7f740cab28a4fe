package shale

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/merging"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/internal/sstable"
)

// IterOptions bound an iterator to the user keys in [LowerBound, UpperBound)
// that start with Prefix. A nil bound is unbounded; a nil or empty Prefix
// limits nothing.
//
// With Prefix set, the iterator also skips every table whose filter says it
// holds no key with that prefix, before reading any block of it, when the
// table's filter holds prefixes of the store's Options.Prefix and that
// extractor maps the keys starting with Prefix to Prefix itself
// (Length(Prefix) == len(Prefix)); otherwise it reads the tables as a
// bounded iterator does. Either way it returns the same keys.
type IterOptions struct {
	LowerBound, UpperBound []byte
	Prefix                 []byte
}

// Iterator walks the newest visible version of each live key in order,
// within its bounds, as of the moment it was created (range deletions
// applied, see rangedel.NewFilterIter): later writes, flushes
// and compactions do not disturb it (the files it reads stay on disk until it
// is closed). Positioning methods return whether the iterator is on an entry.
//
// Key and Value return buffers the iterator owns and reuses: their contents
// are valid until the next positioning call, so copy them to keep them. The
// caller may write into them; that changes nothing for the iterator, which
// keeps its own copy of where it is. An Iterator is for one goroutine at a
// time; Close it when done. Closing the DB releases the iterators still
// open, which then return ErrClosed.
type Iterator struct {
	db *DB // nil for an iterator that failed at its creation, with err set
	// iter is the merged memtables and tables, and rs the read state that
	// holds them (see memTable): its reference keeps the memtables' memory
	// and the version's tables. They are touched only inside db.enter and
	// db.leave, so that DB.Close can release them.
	iter  base.InternalIterator
	rs    *readState
	seq   base.SeqNum
	plan  *scanPlan // the tables it reads, and what their range filters said
	lower []byte
	upper []byte
	// key is the current user key: where the iterator is, used to skip
	// and to find again the versions of that key. keyOut is the copy that
	// Key hands out, so that a caller writing into it cannot move the
	// iterator.
	key    []byte
	keyOut []byte
	value  []byte
	valid  bool
	err    error
	closed bool
	// reverse: the internal iterator is positioned before the current
	// entry's versions (after a backward step), not on them.
	reverse bool
}

// NewIter returns an iterator over the store's current state.
func (db *DB) NewIter(opts *IterOptions) *Iterator {
	return db.newIter(opts, readLatest, nil)
}

// newIter returns an iterator reading at seq (a snapshot's, or readLatest),
// recording what it does in trace when that is not nil.
func (db *DB) newIter(opts *IterOptions, seq base.SeqNum, trace *scanTracer) *Iterator {
	if err := db.enter(); err != nil {
		return &Iterator{err: err}
	}
	defer db.leave()
	rs, seq := db.loadReadState(seq) // the iterator's, until release
	v := rs.v
	plan := db.newScanPlan(opts, trace)
	iters := make([]base.InternalIterator, 0, 1+len(rs.imm)+len(v.Levels[0])+len(v.Levels))
	// newer is where the range tombstones of the sources already added,
	// which are newer than the next one, delete (see
	// rangedel.NewFilterIter). A table the plan does not read (it is nil)
	// adds its tombstones all the same: no filter may hide them.
	var newer rangedel.Spans
	add := func(it base.InternalIterator, own rangedel.Spans) {
		if it != nil {
			iters = append(iters, rangedel.NewFilterIter(it, newer, own, seq))
		}
		if len(own) > 0 {
			newer = rangedel.Union(newer, own.Visible(seq))
		}
	}
	for _, m := range rs.memtables {
		add(trace.memtable(m.NewIter()), m.RangeDels())
	}
	for _, f := range v.Levels[0] {
		add(plan.open(v, 0, f), v.tables[f.FileNum].reader.RangeDels())
	}
	for level := 1; level < len(v.Levels); level++ {
		if len(v.Levels[level]) > 0 {
			var own rangedel.Spans
			for _, f := range v.Levels[level] {
				// The files are sorted and disjoint, and so are their
				// tombstones, which lie within their bounds.
				own = append(own, v.tables[f.FileNum].reader.RangeDels()...)
			}
			add(&levelIter{v: v, plan: plan, files: v.Levels[level], level: level, index: -1}, own)
		}
	}
	it := &Iterator{db: db, iter: merging.NewIter(iters...), rs: rs, seq: seq, plan: plan, lower: plan.lower, upper: plan.upper}
	db.itersMu.Lock()
	if db.iters == nil {
		db.iters = map[*Iterator]struct{}{}
	}
	db.iters[it] = struct{}{}
	db.itersMu.Unlock()
	return it
}

// scanPlan decides which tables an iterator reads: those that meet its
// bounds and whose range filters (with both bounds set) say they may hold a
// key within them, and, for an iterator over one prefix, whose filters say
// they may hold a key with it.
type scanPlan struct {
	// lower and upper are the iterator's bounds, intersected with its
	// prefix's keys.
	lower, upper []byte
	prefix       []byte
	// extractor names the store's prefix extractor when the tables' prefix
	// filters may rule tables out for prefix (see PrefixExtractor); ""
	// otherwise.
	extractor string
	// ranged holds what each table's range filter said (see rangeFilter).
	ranged map[uint64]*rangeFilterMaybe
	trace  *scanTracer // nil unless the scan is traced
	// compaction makes the plan read every table whole, sequentially and
	// past the block cache (sstable.Reader.NewScanIter), reading ahead up
	// to readahead bytes: a compaction's input. Such a plan has no bounds,
	// prefix or trace.
	compaction bool
	readahead  int
}

func (db *DB) newScanPlan(opts *IterOptions, trace *scanTracer) *scanPlan {
	p := &scanPlan{trace: trace}
	if opts == nil {
		return p
	}
	p.prefix = bytes.Clone(opts.Prefix)
	p.lower, p.upper = prefixBounds(bytes.Clone(opts.LowerBound), bytes.Clone(opts.UpperBound), p.prefix)
	if db.opts.Prefix.filterable(p.prefix) {
		p.extractor = db.opts.Prefix.Name
	}
	return p
}

// open returns an iterator over table m of level, or nil when the scan
// does not read it: it lies wholly outside the bounds, its range filter
// says it holds no key within them (both bounds set), or its filter says
// it holds no key with the prefix. Only an open iterator reads blocks.
func (p *scanPlan) open(v *version, level int, m *manifest.FileMeta) base.InternalIterator {
	if p.compaction {
		return v.tables[m.FileNum].reader.NewScanIter(p.readahead)
	}
	if p.outside(m) {
		p.trace.file(level, m, ScanKeyRange, false, false)
		return nil
	}
	r := v.tables[m.FileNum].reader
	maybe, ranged := p.rangeFilter(r, m.FileNum)
	if ranged && maybe == nil {
		p.trace.file(level, m, ScanRangeFilter, false, true)
		return nil
	}
	checked, may := r.MayContainPrefix(p.extractor, p.prefix)
	if !may {
		p.trace.file(level, m, ScanPrefixFilter, checked, ranged)
		return nil
	}
	var it base.InternalIterator
	if p.trace == nil {
		it = r.NewIterBounds(p.lower, p.upper)
	} else {
		f := p.trace.file(level, m, ScanRead, checked, ranged)
		it = &countingIter{InternalIterator: r.TraceIter(p.lower, p.upper, &f.blocks), n: &f.step.Entries}
	}
	if maybe != nil {
		it = &rangeFilterCheckedIter{InternalIterator: it, maybe: maybe}
	}
	return it
}

// rangeFilter asks table fileNum's range filter, once per scan, whether
// it may hold a key in [lower, upper): ranged is false when it was not
// asked (a bound is missing, or the table has no range filter), and maybe
// is nil when it said "definitely not". A table the scan opens again (a
// level iterator turning around) is neither probed nor counted twice.
func (p *scanPlan) rangeFilter(r *sstable.Reader, fileNum uint64) (maybe *rangeFilterMaybe, ranged bool) {
	if p.lower == nil || p.upper == nil {
		return nil, false
	}
	if maybe, ok := p.ranged[fileNum]; ok {
		return maybe, true
	}
	checked, may := r.RangeMayContain(p.lower, p.upper)
	if !checked {
		return nil, false
	}
	if may {
		maybe = &rangeFilterMaybe{}
	}
	if p.ranged == nil {
		p.ranged = map[uint64]*rangeFilterMaybe{}
	}
	p.ranged[fileNum] = maybe
	return maybe, true
}

// rangeFilterMaybe follows, through a bounded read, a table whose range
// filter said "maybe": whether the read positioned the table's iterator,
// and whether that ever found an entry within the bounds. Positioned and
// never in the bounds is the filter's false positive, counted when the
// read ends (Iterator.release).
type rangeFilterMaybe struct{ positioned, hit bool }

// rangeFilterCheckedIter is the iterator of a table whose range filter said
// "maybe" for the scan's bounds: it records in maybe what the read found.
// The table's iterator is bounded by the same bounds, so any entry it
// yields is a hit.
type rangeFilterCheckedIter struct {
	base.InternalIterator
	maybe *rangeFilterMaybe
}

func (i *rangeFilterCheckedIter) note(ok bool) bool {
	i.maybe.positioned = true
	i.maybe.hit = i.maybe.hit || ok
	return ok
}

func (i *rangeFilterCheckedIter) First() bool { return i.note(i.InternalIterator.First()) }
func (i *rangeFilterCheckedIter) Last() bool  { return i.note(i.InternalIterator.Last()) }
func (i *rangeFilterCheckedIter) Next() bool  { return i.note(i.InternalIterator.Next()) }
func (i *rangeFilterCheckedIter) Prev() bool  { return i.note(i.InternalIterator.Prev()) }
func (i *rangeFilterCheckedIter) SeekGE(k []byte) bool {
	return i.note(i.InternalIterator.SeekGE(k))
}
func (i *rangeFilterCheckedIter) SeekLT(k []byte) bool {
	return i.note(i.InternalIterator.SeekLT(k))
}

// outside reports whether table m holds no key within the bounds.
func (p *scanPlan) outside(m *manifest.FileMeta) bool {
	return p.lower != nil && m.EndsBefore(p.lower) || p.below(m)
}

// below reports whether the upper bound lies at or before table m's first
// key.
func (p *scanPlan) below(m *manifest.FileMeta) bool {
	return p.upper != nil && base.CompareUserKeys(m.Smallest.UserKey, p.upper) >= 0
}

// enter begins a positioning call, which must end with it.db.leave() if
// enter returns true. It returns false, with the iterator invalid, once an
// error has stopped the iterator, or it or its DB is closed (ErrClosed).
func (it *Iterator) enter() bool {
	switch {
	case it.err != nil:
	case it.closed:
		it.err = ErrClosed
	default:
		it.err = it.db.enter()
	}
	if it.err != nil {
		it.valid = false
		return false
	}
	return true
}

// First moves to the first key at or after the lower bound.
func (it *Iterator) First() bool {
	if !it.enter() {
		return false
	}
	defer it.db.leave()
	if it.lower != nil {
		it.iter.SeekGE(it.lower)
	} else {
		it.iter.First()
	}
	return it.findNextEntry()
}

// Last moves to the last key before the upper bound.
func (it *Iterator) Last() bool {
	if !it.enter() {
		return false
	}
	defer it.db.leave()
	if it.upper != nil {
		it.iter.SeekLT(it.upper)
	} else {
		it.iter.Last()
	}
	return it.findPrevEntry()
}

// SeekGE moves to the first key >= key (and >= the lower bound).
func (it *Iterator) SeekGE(key []byte) bool {
	if !it.enter() {
		return false
	}
	defer it.db.leave()
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	it.iter.SeekGE(key)
	return it.findNextEntry()
}

// SeekLT moves to the last key < key (and < the upper bound).
func (it *Iterator) SeekLT(key []byte) bool {
	if !it.enter() {
		return false
	}
	defer it.db.leave()
	if it.upper != nil && bytes.Compare(key, it.upper) > 0 {
		key = it.upper
	}
	it.iter.SeekLT(key)
	return it.findPrevEntry()
}

// Next moves to the next key.
func (it *Iterator) Next() bool {
	if !it.valid || !it.enter() {
		return false
	}
	defer it.db.leave()
	if it.reverse {
		// The internal iterator is on an entry before the current key's
		// versions (findPrevEntry stepped back over them): step forward,
		// the merging iterator turning around, past them. Entries met on
		// the way below the current key are writes newer than the
		// iterator, which it does not see. Only when the internal
		// iterator ran off the start is there nothing to turn from, and it
		// seeks.
		ok := it.iter.Valid()
		if ok {
			ok = it.iter.Next()
		} else {
			ok = it.iter.SeekGE(it.key)
		}
		for ok && bytes.Compare(it.iter.Key().UserKey, it.key) <= 0 {
			ok = it.iter.Next()
		}
		return it.findNextEntry()
	}
	for ok := it.iter.Valid(); ok && bytes.Equal(it.iter.Key().UserKey, it.key); ok = it.iter.Next() {
	}
	return it.findNextEntry()
}

// Prev moves to the previous key.
func (it *Iterator) Prev() bool {
	if !it.valid || !it.enter() {
		return false
	}
	defer it.db.leave()
	if !it.reverse {
		// The internal iterator is on the current key's version that
		// Next returned: step back, the merging iterator turning around,
		// over the current key's newer versions (and any entry above the
		// current key written since the iterator began), which the read
		// does not see.
		for ok := it.iter.Prev(); ok && bytes.Compare(it.iter.Key().UserKey, it.key) >= 0; ok = it.iter.Prev() {
		}
	}
	return it.findPrevEntry()
}

// findNextEntry moves forward from the internal iterator's position to the
// newest visible version of the next user key that is not deleted.
func (it *Iterator) findNextEntry() bool {
	it.reverse = false
	it.valid = false
	for it.iter.Valid() {
		k := it.iter.Key()
		if it.upper != nil && bytes.Compare(k.UserKey, it.upper) >= 0 {
			break
		}
		if !k.Visible(it.seq) {
			it.iter.Next()
			continue
		}
		// The newest visible version of k.UserKey.
		if k.Kind() == base.KindSet {
			it.key = append(it.key[:0], k.UserKey...)
			it.value = append(it.value[:0], it.iter.Value()...)
			return it.found()
		}
		// Deleted: skip every older version.
		it.key = append(it.key[:0], k.UserKey...)
		for ok := it.iter.Next(); ok && bytes.Equal(it.iter.Key().UserKey, it.key); ok = it.iter.Next() {
		}
	}
	return it.finish()
}

// findPrevEntry moves backward from the internal iterator's position (on
// the oldest version of some user key) to the previous user key whose newest
// visible version is not a deletion. Versions of one user key arrive oldest
// first; the last visible one seen is the newest. The internal iterator
// stops on an error as if the versions had run out, so an error is checked
// before a version is taken as the newest: the newer ones may be in the
// table whose read failed.
func (it *Iterator) findPrevEntry() bool {
	it.reverse = true
	it.valid = false
	for it.iter.Valid() {
		ukey := it.iter.Key().UserKey
		if it.lower != nil && bytes.Compare(ukey, it.lower) < 0 {
			break
		}
		it.key = append(it.key[:0], ukey...)
		// value is the newest visible version's value so far. It aliases
		// the memtable or table block that holds it, which, beyond what
		// InternalIterator promises, stay valid and unchanged after the
		// internal iterator moves (memtable.NewIter, sstable's NewIter),
		// as long as the read state holds them: only the newest is copied.
		var value []byte
		found := false
		var kind base.Kind
		for ok := true; ok && bytes.Equal(it.iter.Key().UserKey, it.key); ok = it.iter.Prev() {
			k := it.iter.Key()
			if k.Visible(it.seq) {
				found, kind = true, k.Kind()
				value = it.iter.Value()
			}
		}
		if it.iter.Error() != nil {
			break
		}
		if found && kind == base.KindSet {
			it.value = append(it.value[:0], value...)
			return it.found()
		}
	}
	return it.finish()
}

// found makes the entry in key and value current.
func (it *Iterator) found() bool {
	it.keyOut = append(it.keyOut[:0], it.key...)
	it.valid = true
	return true
}

func (it *Iterator) finish() bool {
	if err := it.iter.Error(); err != nil {
		it.err = err
	}
	return false
}

// Valid reports whether the iterator is on an entry.
func (it *Iterator) Valid() bool { return it.valid }

// Key returns the current key, valid until the next positioning call. The
// caller may write into it without disturbing the iterator.
func (it *Iterator) Key() []byte {
	if !it.valid {
		return nil
	}
	return it.keyOut
}

// Value returns the current value, valid until the next positioning call.
// The caller may write into it without disturbing the iterator.
func (it *Iterator) Value() []byte {
	if !it.valid {
		return nil
	}
	return it.value
}

// Error returns the error that stopped the iterator, if any. After Close
// (the iterator's, or its DB's) it returns an error that matches ErrClosed,
// and also the error that had stopped the iterator, if one had: an iterator
// used after Close says so rather than look like one that reached its end.
func (it *Iterator) Error() error {
	closed := it.closed || it.db != nil && it.db.closed.Load()
	switch {
	case !closed || errors.Is(it.err, ErrClosed):
		return it.err
	case it.err == nil:
		return ErrClosed
	}
	return fmt.Errorf("%w (it had stopped: %w)", ErrClosed, it.err)
}

// Close releases the iterator's files and returns its error, if any.
// Closing twice returns ErrClosed. Closing after the DB was closed, which
// released the iterator already, returns the error that had stopped the
// iterator, or ErrClosed if none had.
func (it *Iterator) Close() error {
	if it.closed {
		return ErrClosed
	}
	it.closed = true
	it.valid = false
	if it.db == nil {
		return it.err
	}
	if err := it.db.enter(); err != nil {
		if it.err == nil {
			it.err = err
		}
		return it.err
	}
	defer it.db.leave()
	if err := it.release(); err != nil && it.err == nil {
		it.err = err
	}
	it.db.itersMu.Lock()
	delete(it.db.iters, it)
	it.db.itersMu.Unlock()
	return it.err
}

// release closes the internal iterator and drops the read state (the
// iterator's last use of its memtables), returning the internal iterator's
// error. It runs once: from Close, or from DB.Close for an iterator left
// open.
func (it *Iterator) release() error {
	for _, m := range it.plan.ranged {
		if m != nil && m.positioned && !m.hit {
			it.db.tableStats.RangeFilterFalsePositives.Add(1)
		}
	}
	err := it.iter.Close()
	it.rs.unref()
	it.iter, it.rs = nil, nil
	return err
}

// levelIter iterates over the sorted, disjoint tables of one level >= 1 as
// one sequence, opening a table's iterator only when it gets there, and
// only for the tables its scanPlan reads: it passes over the tables the
// plan rules out, and the level ends where a table lies past the bounds.
type levelIter struct {
	v     *version
	plan  *scanPlan
	level int
	files []*manifest.FileMeta
	index int // current file, or -1 / len(files) when off either end
	iter  base.InternalIterator
	err   error
}

// open switches to file i (closing the current one) or, when the plan does
// not read it, to the nearest one in the direction of travel (forward or
// back) that it reads, and reports whether there is one before the level
// or its bounds end.
func (l *levelIter) open(i int, forward bool) bool {
	if l.iter != nil {
		if err := l.iter.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.iter = nil
	}
	step := 1
	if !forward {
		step = -1
	}
	for l.index = i; l.index >= 0 && l.index < len(l.files) && l.err == nil; l.index += step {
		f := l.files[l.index]
		// The bounds end the level beyond the table that lies past them
		// in the direction of travel.
		if forward && l.plan.below(f) || !forward && l.plan.lower != nil && f.EndsBefore(l.plan.lower) {
			return false
		}
		if l.iter = l.plan.open(l.v, l.level, f); l.iter != nil {
			return true
		}
	}
	return false
}

// skipForward moves to the next file's first entry while the current one is
// exhausted.
func (l *levelIter) skipForward(ok bool) bool {
	for !ok {
		if l.iter != nil && l.iter.Error() != nil {
			return false
		}
		if !l.open(l.index+1, true) {
			return false
		}
		ok = l.iter.First()
	}
	return true
}

func (l *levelIter) skipBackward(ok bool) bool {
	for !ok {
		if l.iter != nil && l.iter.Error() != nil {
			return false
		}
		if !l.open(l.index-1, false) {
			return false
		}
		ok = l.iter.Last()
	}
	return true
}

func (l *levelIter) First() bool {
	if !l.open(0, true) {
		return false
	}
	return l.skipForward(l.iter.First())
}

func (l *levelIter) Last() bool {
	if !l.open(len(l.files)-1, false) {
		return false
	}
	return l.skipBackward(l.iter.Last())
}

func (l *levelIter) SeekGE(key []byte) bool {
	i := sort.Search(len(l.files), func(i int) bool { return bytes.Compare(l.files[i].Largest.UserKey, key) >= 0 })
	if !l.open(i, true) {
		return false
	}
	return l.skipForward(l.iter.SeekGE(key))
}

func (l *levelIter) SeekLT(key []byte) bool {
	i := sort.Search(len(l.files), func(i int) bool { return bytes.Compare(l.files[i].Smallest.UserKey, key) >= 0 }) - 1
	if !l.open(i, false) {
		return false
	}
	return l.skipBackward(l.iter.SeekLT(key))
}

func (l *levelIter) Next() bool {
	if l.iter == nil {
		return false
	}
	return l.skipForward(l.iter.Next())
}

func (l *levelIter) Prev() bool {
	if l.iter == nil {
		return false
	}
	return l.skipBackward(l.iter.Prev())
}

func (l *levelIter) Valid() bool { return l.iter != nil && l.iter.Valid() }

func (l *levelIter) Key() base.InternalKey { return l.iter.Key() }

func (l *levelIter) Value() []byte { return l.iter.Value() }

func (l *levelIter) Error() error {
	if l.err != nil {
		return l.err
	}
	if l.iter != nil {
		return l.iter.Error()
	}
	return nil
}

func (l *levelIter) Close() error {
	l.open(-1, false)
	return l.err
}
