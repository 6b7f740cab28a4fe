package shale

// The tree in memory: versions (the live tables of each level) and their
// open tables, reference counted, and the retirement of tables no version
// holds.

import (
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
	db       *DB
}

func (t *table) unref() {
	if t.refs.Add(-1) == 0 {
		t.db.retireTable(t)
	}
}

// release closes the table's reader (freeing its filter and index), evicts
// its blocks and, if the table is obsolete and remove is set, deletes its
// file. It runs once, when no version includes the table any more, so
// nothing can be reading it.
func (t *table) release(remove bool) {
	db := t.db
	if err := t.reader.Close(); err != nil {
		db.logf("closing table %06d: %v", t.meta.FileNum, err)
	}
	db.cache.EvictFile(t.meta.FileNum)
	db.rowCache.EvictFile(t.meta.FileNum)
	if remove && t.obsolete.Load() {
		if err := db.fs.Remove(db.fileName(fileTypeTable, t.meta.FileNum)); err != nil {
			db.logf("deleting obsolete table %06d: %v", t.meta.FileNum, err)
		}
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
		t.release(false)
		return
	}
	db.retired = append(db.retired, t)
	db.retireMu.Unlock()
	select {
	case db.retireCh <- struct{}{}:
	default:
	}
}

// deleteLoop releases retired tables until the DB closes.
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

// releaseRetired closes and deletes the tables retired so far. With stop
// set, later retirements are closed at once instead of queued: Close and a
// failed Open call it last thing before they release the LOCK.
func (db *DB) releaseRetired(stop bool) {
	db.retireMu.Lock()
	tables := db.retired
	db.retired = nil
	db.retireStopped = db.retireStopped || stop
	db.retireMu.Unlock()
	for _, t := range tables {
		t.release(true)
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
		t.refs.Add(1)
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
