package shale

import (
	"bytes"
	"sort"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/merging"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/internal/sstable"
)

// IterOptions bound an iterator to the user keys in [LowerBound, UpperBound).
// A nil bound is unbounded.
type IterOptions struct{ LowerBound, UpperBound []byte }

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
	// iter and v are the merged memtables and tables and the version that
	// holds those tables open. They are touched only inside db.enter and
	// db.leave, so that DB.Close can release them.
	iter  base.InternalIterator
	v     *version
	seq   base.SeqNum
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
	// rangeMaybes are the tables whose range filter said "maybe" to the
	// iterator's bounds, for counting false positives at release.
	rangeMaybes []*rangeFilterMaybe
}

// NewIter returns an iterator over the store's current state.
func (db *DB) NewIter(opts *IterOptions) *Iterator {
	return db.newIter(opts, readLatest)
}

// newIter returns an iterator reading at seq (a snapshot's, or readLatest).
func (db *DB) newIter(opts *IterOptions, seq base.SeqNum) *Iterator {
	if err := db.enter(); err != nil {
		return &Iterator{err: err}
	}
	defer db.leave()
	rs, seq := db.loadReadState(seq)
	defer rs.unref()
	v := rs.v
	v.ref() // for the iterator, which outlives rs
	iters := make([]base.InternalIterator, 0, 1+len(rs.imm)+len(v.Levels[0])+len(v.Levels))
	// newer is where the range tombstones of the sources already added,
	// which are newer than the next one, delete (see
	// rangedel.NewFilterIter).
	var newer rangedel.Spans
	// add adds a source, with the tombstones it holds; it is nil for a
	// table that a bounded read skips, whose tombstones still apply.
	add := func(it base.InternalIterator, own rangedel.Spans) {
		if it != nil {
			iters = append(iters, rangedel.NewFilterIter(it, newer, own, seq))
		}
		if len(own) > 0 {
			newer = rangedel.Union(newer, own.Visible(seq))
		}
	}
	var lower, upper []byte
	if opts != nil {
		lower, upper = bytes.Clone(opts.LowerBound), bytes.Clone(opts.UpperBound)
	}
	for _, m := range rs.memtables {
		add(m.NewIter(), m.RangeDels())
	}
	// maybes follow the tables whose range filter said "maybe".
	var maybes []*rangeFilterMaybe
	for _, f := range v.Levels[0] {
		r := v.tables[f.FileNum].reader
		ref := &tableRef{fileNum: f.FileNum, smallest: f.Smallest.UserKey, largest: f.Largest.UserKey}
		var it base.InternalIterator
		if checkTableRange(r, ref, lower, upper) {
			it = ref.newIter(r, lower, upper)
		}
		if ref.maybe != nil {
			maybes = append(maybes, ref.maybe)
		}
		add(it, r.RangeDels())
	}
	for level := 1; level < len(v.Levels); level++ {
		if len(v.Levels[level]) > 0 {
			var own rangedel.Spans
			for _, f := range v.Levels[level] {
				// The files are sorted and disjoint, and so are their
				// tombstones, which lie within their bounds.
				own = append(own, v.tables[f.FileNum].reader.RangeDels()...)
			}
			li := newLevelIter(v, level, lower, upper)
			for _, ref := range li.files {
				if ref.maybe != nil {
					maybes = append(maybes, ref.maybe)
				}
			}
			add(li, own)
		}
	}
	it := &Iterator{db: db, iter: merging.NewIter(iters...), v: v, seq: seq, lower: lower, upper: upper, rangeMaybes: maybes}
	db.itersMu.Lock()
	if db.iters == nil {
		db.iters = map[*Iterator]struct{}{}
	}
	db.iters[it] = struct{}{}
	db.itersMu.Unlock()
	return it
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
		found := false
		var kind base.Kind
		for ok := true; ok && bytes.Equal(it.iter.Key().UserKey, it.key); ok = it.iter.Prev() {
			k := it.iter.Key()
			if k.Visible(it.seq) {
				found, kind = true, k.Kind()
				it.value = append(it.value[:0], it.iter.Value()...)
			}
		}
		if it.iter.Error() != nil {
			break
		}
		if found && kind == base.KindSet {
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

// Error returns the error that stopped the iterator, if any.
func (it *Iterator) Error() error { return it.err }

// Close releases the iterator's files and returns its error, if any.
// Closing twice returns ErrClosed, and so does closing after the DB was
// closed, which released the iterator already.
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

// release closes the internal iterator and drops the version, returning the
// internal iterator's error. It runs once: from Close, or from DB.Close for
// an iterator left open.
func (it *Iterator) release() error {
	for _, m := range it.rangeMaybes {
		if m.positioned && !m.hit {
			it.db.tableStats.RangeFilterFalsePositives.Add(1)
		}
	}
	err := it.iter.Close()
	it.v.unref()
	it.iter, it.v = nil, nil
	return err
}

// checkTableRange is a bounded read's check of one table, before any
// block of it is read: for an iterator with both bounds set, it reports
// whether the table may hold an entry in [lower, upper), by its key range
// and then by its range filter. When the filter said "maybe", ref.maybe
// follows the table for the false-positive count. The table's range
// tombstones apply whatever it says: they are kept apart from its entries
// (see newIter).
func checkTableRange(r *sstable.Reader, ref *tableRef, lower, upper []byte) bool {
	if lower == nil || upper == nil {
		return true
	}
	if bytes.Compare(ref.smallest, upper) >= 0 || bytes.Compare(ref.largest, lower) < 0 {
		return false
	}
	checked, may := r.RangeMayContain(lower, upper)
	if checked && may {
		ref.maybe = &rangeFilterMaybe{}
	}
	return may
}

// rangeFilterMaybe follows, through a bounded read, a table whose range
// filter said "maybe": whether the read positioned the table's iterator,
// and whether that ever found an entry within the bounds. Positioned and
// never in the bounds is the filter's false positive, counted when the
// read ends (Iterator.release).
type rangeFilterMaybe struct{ positioned, hit bool }

// levelIter iterates over the sorted, disjoint tables of one level >= 1 as
// one sequence, opening a table's iterator only when it gets there.
type levelIter struct {
	v            *version
	files        []*tableRef
	lower, upper []byte // the read's bounds
	index        int    // current file, or -1 / len(files) when off either end
	iter         base.InternalIterator
	err          error
}

type tableRef struct {
	fileNum  uint64
	smallest []byte
	largest  []byte
	maybe    *rangeFilterMaybe // nil unless the range filter said "maybe"
}

// newIter returns the table's iterator for a read of [lower, upper).
func (ref *tableRef) newIter(r *sstable.Reader, lower, upper []byte) base.InternalIterator {
	it := r.NewIter()
	if ref.maybe != nil {
		it = &rangeFilterCheckedIter{InternalIterator: it, lower: lower, upper: upper, maybe: ref.maybe}
	}
	return it
}

// newLevelIter returns the iterator of a level for a read of [lower,
// upper), leaving out the tables that checkTableRange rules out.
func newLevelIter(v *version, level int, lower, upper []byte) *levelIter {
	li := &levelIter{v: v, lower: lower, upper: upper, index: -1}
	for _, f := range v.Levels[level] {
		ref := &tableRef{fileNum: f.FileNum, smallest: f.Smallest.UserKey, largest: f.Largest.UserKey}
		if checkTableRange(v.tables[f.FileNum].reader, ref, lower, upper) {
			li.files = append(li.files, ref)
		}
	}
	return li
}

// rangeFilterCheckedIter is the iterator of a table whose range filter said
// "maybe" for [lower, upper): it records in maybe what the read found.
type rangeFilterCheckedIter struct {
	base.InternalIterator
	lower, upper []byte
	maybe        *rangeFilterMaybe
}

func (i *rangeFilterCheckedIter) note(ok bool) bool {
	i.maybe.positioned = true
	if ok && !i.maybe.hit {
		k := i.Key().UserKey
		i.maybe.hit = bytes.Compare(k, i.lower) >= 0 && bytes.Compare(k, i.upper) < 0
	}
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

// open switches to file i (closing the current one) and reports whether it
// is a file.
func (l *levelIter) open(i int) bool {
	if l.iter != nil {
		if err := l.iter.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.iter = nil
	}
	l.index = i
	if i < 0 || i >= len(l.files) || l.err != nil {
		return false
	}
	l.iter = l.files[i].newIter(l.v.tables[l.files[i].fileNum].reader, l.lower, l.upper)
	return true
}

// skipForward moves to the next file's first entry while the current one is
// exhausted.
func (l *levelIter) skipForward(ok bool) bool {
	for !ok {
		if l.iter != nil && l.iter.Error() != nil {
			return false
		}
		if !l.open(l.index + 1) {
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
		if !l.open(l.index - 1) {
			return false
		}
		ok = l.iter.Last()
	}
	return true
}

func (l *levelIter) First() bool {
	if !l.open(0) {
		return false
	}
	return l.skipForward(l.iter.First())
}

func (l *levelIter) Last() bool {
	if !l.open(len(l.files) - 1) {
		return false
	}
	return l.skipBackward(l.iter.Last())
}

func (l *levelIter) SeekGE(key []byte) bool {
	i := sort.Search(len(l.files), func(i int) bool { return bytes.Compare(l.files[i].largest, key) >= 0 })
	if !l.open(i) {
		return false
	}
	return l.skipForward(l.iter.SeekGE(key))
}

func (l *levelIter) SeekLT(key []byte) bool {
	i := sort.Search(len(l.files), func(i int) bool { return bytes.Compare(l.files[i].smallest, key) >= 0 }) - 1
	if !l.open(i) {
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
	l.open(-1)
	return l.err
}
