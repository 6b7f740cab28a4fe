package shale

// The tree in memory: versions (the live tables of each level) and their
// open tables, reference counted, and the retirement of tables no version
// holds.

import (
	"sync"
	"sync/atomic"

	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/sstable"
)

// table is an open SSTable. Its reader (with its filter and index in
// memory) lives as long as some version includes the table; when the last
// such version is released the table is retired: the DB's background work
// closes the reader and, if the table has left the current version,
// deletes the file (see retireTable).
//
// The reader's filter and index are outside the Go heap, and closing it
// frees them: a later read of them faults and kills the process. So the
// rule, for every path that uses t.reader (Get, iterators, compaction
// inputs, Tables, Metrics, traces): use it only while holding a reference
// to a version that includes t (a readState, which an Iterator keeps until
// it closes, or a compaction's), and keep nothing that aliases the reader
// past that reference (nothing it returns does: see sstable.Reader). A table no
// version ever took (a failed flush or compaction output, Check's and
// Repair's own) is its opener's to close, once, after its last use.
type table struct {
	meta     *manifest.FileMeta
	reader   *sstable.Reader
	refs     atomic.Int32 // versions that include the table
	obsolete atomic.Bool  // no longer in the current version
	// wastedReads counts the Gets that read one of the table's data blocks
	// and found nothing (sstable.ReaderOptions.OnWastedRead) since it was
	// opened or last picked for a read compaction: the picker's
	// compaction.Options.WastedReads.
	wastedReads atomic.Int64
	db          *DB
}

func (t *table) unref() {
	if t.refs.Add(-1) == 0 {
		t.db.retireTable(t)
	}
}

// release closes the table's reader (freeing its filter and index) and
// evicts its blocks. It runs once, when no version includes the table any
// more, so nothing can be reading it.
func (t *table) release() {
	db := t.db
	db.filterCounts.release(t)
	if err := t.reader.Close(); err != nil {
		db.logf("closing table %06d: %v", t.meta.FileNum, err)
	}
	db.cache.EvictFile(t.meta.FileNum)
	db.rowCache.EvictFile(t.meta.FileNum)
}

// removeFile deletes the file of a released table if the table is
// obsolete (no longer in the current version).
func (t *table) removeFile() {
	if !t.obsolete.Load() {
		return
	}
	db := t.db
	if err := db.removeFile(fileTypeTable, t.meta.FileNum, TableObsolete); err != nil {
		db.logf("deleting obsolete table %06d: %v", t.meta.FileNum, err)
	}
}

// retireTable hands over a table no version holds any more. Whoever drops
// the last reference (a user's Get or Iterator.Close, say) does no file
// work: the deleter goroutine closes and deletes the table, so files are
// deleted only while the DB holds the LOCK. Once the DB has stopped
// retiring (Close, or a failed Open), the table is closed at once and an
// obsolete file is left for the next Open to delete.
func (db *DB) retireTable(t *table) {
	db.retireMu.Lock()
	if db.retireStopped {
		db.retireMu.Unlock()
		t.release()
		return
	}
	db.retired = append(db.retired, t)
	db.retireMu.Unlock()
	db.wakeDeleter()
}

// wakeDeleter tells the deleter goroutine that there is work retired.
func (db *DB) wakeDeleter() {
	select {
	case db.retireCh <- struct{}{}:
	default:
	}
}

// deleteLoop releases retired tables and memtables until the DB closes.
func (db *DB) deleteLoop() {
	defer db.bgWG.Done()
	for {
		select {
		case <-db.closing:
			return
		case <-db.retireCh:
			db.releaseRetired(false)
		}
	}
}

// releaseRetired frees the memtables retired so far and closes and
// deletes the tables. The memory goes first, all of it, and the files
// after: deleting a file can wait for the device (the kernel may first
// finish writing its pages back), and memory queued behind it would
// count in the process's resident set all that time. With stop set, later
// retirements are released at once instead of queued: Close and a failed
// Open call it last thing before they release the LOCK. It returns once
// everything retired before the call is released, by it or by a call
// already under way (the deleter's).
func (db *DB) releaseRetired(stop bool) {
	db.releaseMu.Lock()
	defer db.releaseMu.Unlock()
	db.retireMu.Lock()
	tables, mems := db.retired, db.retiredMems
	db.retired, db.retiredMems = nil, nil
	db.retireStopped = db.retireStopped || stop
	db.retireMu.Unlock()
	for _, m := range mems {
		m.Free()
	}
	for _, t := range tables {
		t.release()
	}
	for _, t := range tables {
		t.removeFile()
	}
}

// version is a manifest.Version with its open tables, reference counted:
// the DB holds one reference to the current version, and every read,
// iterator and compaction holds one to the version it uses, so the files it
// reads stay open and on disk until it is done.
type version struct {
	*manifest.Version
	tables map[uint64]*table
	refs   atomic.Int32
}

func newVersion(v *manifest.Version, tables map[uint64]*table) *version {
	nv := &version{Version: v, tables: tables}
	nv.refs.Store(1)
	for _, t := range tables {
		if t.refs.Add(1) == 1 {
			t.db.filterCounts.add(t) // the first version to take t
		}
	}
	return nv
}

func (v *version) ref() { v.refs.Add(1) }

func (v *version) unref() {
	if v.refs.Add(-1) != 0 {
		return
	}
	for _, t := range v.tables {
		t.unref()
	}
}

// filterCounts adds up the filter outcomes of Gets over the DB's tables,
// for Metrics. Each probe is counted once, by its table's reader (see
// sstable.Reader.FilterCounts); a DB-wide counter beside it would put a
// second atomic add on every probe, on a cache line all cores share.
//
// The DB's figure is the sum over the tables not yet released (live)
// plus released, which took each released table's counts when it went:
//
//   - A table joins live before any read can probe it: newVersion adds
//     it when the first version takes it, before that version is
//     published.
//   - Every probe of a table holds a reference to a version that includes
//     it, so it happens before the table's last reference goes, and so
//     before release: the counts release moves into released are final.
//   - release moves them, and takes the table out of live, under mu, and
//     total sums under mu: a total counts each table once, through live
//     or through released, never both and never neither.
//
// So the figures are exact, whatever version a read holds (an old
// readState's or an Iterator's tables count until released, and after),
// and they never go backwards: a table's counts only grow, and what
// release moves is at least what an earlier total read of them.
type filterCounts struct {
	mu       sync.Mutex
	live     map[*table]struct{}
	released struct{ checks, skips, falsePositives int64 }
}

// add starts counting t, which a version is about to take.
func (c *filterCounts) add(t *table) {
	c.mu.Lock()
	if c.live == nil {
		c.live = map[*table]struct{}{}
	}
	c.live[t] = struct{}{}
	c.mu.Unlock()
}

// release keeps t's final counts, as t leaves for good.
func (c *filterCounts) release(t *table) {
	checks, skips, falsePositives := t.reader.FilterCounts()
	c.mu.Lock()
	delete(c.live, t)
	c.released.checks += checks
	c.released.skips += skips
	c.released.falsePositives += falsePositives
	c.mu.Unlock()
}

// total returns the filter outcomes of every table the DB has opened
// since Open: Metrics' FilterChecks, FilterSkips and FilterFalsePositives.
func (c *filterCounts) total() (checks, skips, falsePositives int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	checks, skips, falsePositives = c.released.checks, c.released.skips, c.released.falsePositives
	for t := range c.live {
		ch, sk, fp := t.reader.FilterCounts()
		checks, skips, falsePositives = checks+ch, skips+sk, falsePositives+fp
	}
	return checks, skips, falsePositives
}
