// Package shale is an embedded, persistent, ordered key-value store built as
// a log-structured merge tree.
//
// The write path (Apply): a batch gets sequence numbers and becomes one
// record of the write-ahead log; concurrent writers' records go to the log
// in one write and share one fsync (group commit). The batch is then
// inserted into the mutable memtable and becomes visible. A full memtable
// becomes immutable, a new memtable and WAL start, and a background flush
// writes it to an L0 SSTable and logs that in the MANIFEST.
//
// The read path (Get): the mutable memtable, the immutable memtables newest
// first, the L0 files newest first, then at most one file per deeper level;
// the first source that holds the key, or a range tombstone covering it,
// answers. Each file is skipped by its key range, then by its filter, held in
// memory (its range tombstones, in memory too, still apply), then answered
// by the row cache if it has the key, before any block is read.
//
// Iterators (NewIter) merge every source the same way. A table whose key
// range lies outside the iterator's bounds is not read, nor, for an iterator
// over one prefix (IterOptions.Prefix), a table whose filter says no key
// has it; the range tombstones of both still apply.
package shale

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/memtable"
	"github.com/shale-db/shale/internal/sstable"
	"github.com/shale-db/shale/internal/wal"
	"github.com/shale-db/shale/vfs"
)

// Errors. Match them with errors.Is.
var (
	// ErrNotFound: the key is absent.
	ErrNotFound = errors.New("shale: not found")
	// ErrClosed: the DB (or snapshot, or iterator) was closed.
	ErrClosed = errors.New("shale: closed")
	// ErrCorruption: stored bytes are not what their format says. The error
	// names the file and, where known, the offset.
	ErrCorruption = base.ErrCorruption
	// ErrReadOnly: a write (Put, Delete, DeleteRange, Apply, Flush,
	// Compact) to a store opened with Options.ReadOnly.
	ErrReadOnly = errors.New("shale: the store was opened read-only")
	// ErrInvalidRange: a range deletion's start is after its end (as
	// RocksDB's InvalidArgument). The error names both keys.
	ErrInvalidRange = errors.New("shale: invalid range")
)

// DB is an open store. Every method is safe for concurrent use.
//
// Lock order: a goroutine holding one of these locks takes only those after
// it in this list. closeMu (shared, by every public call) before compactMu,
// manifestMu, mu, itersMu, releaseMu, retireMu and filterCounts.mu, in that
// order.
// commitMu is held with no other lock but closeMu. Reads (Get, NewIter) take none
// of them but closeMu for their state: they load readState.
type DB struct {
	dir  string
	opts Options
	fs   vfs.FS
	lock io.Closer

	cache      *cache.Cache
	rowCache   *sstable.RowCache // nil when Options.RowCacheSize is 0
	tableCache *tableCache       // the open table files
	// memSlabs keeps the slabs of freed memtables for new ones.
	memSlabs   *memtable.Recycler
	tableStats sstable.Stats
	// filterCounts adds up the tables' filter counts, which tableStats
	// does not hold (see filterCounts).
	filterCounts filterCounts

	// closeMu is held shared by every public call while it runs and
	// exclusively by Close, so Close waits for calls in flight and calls
	// after it see closed.
	closeMu sync.RWMutex
	closed  atomic.Bool

	// visibleSeq is the sequence number reads see: every write up to it is
	// in a memtable (or below).
	visibleSeq atomic.Uint64

	// Commit pipeline: one leader at a time writes a group of batches.
	commitMu sync.Mutex
	queue    []*pendingWrite
	leading  bool
	// committing counts the writes from queueing to returning: queued,
	// leading, or woken and about to return (see electLeader).
	committing int
	// walWriteCalls says whether the WAL wrote the last group with a system
	// call rather than storing it through a mapping (see electLeader).
	walWriteCalls bool
	// spareQueue is the queue of the previous group, emptied, for the next
	// leader to swap in (nil while a leader has it).
	spareQueue []*pendingWrite
	walRecs    [][]byte // the WAL records of the group being committed (commit leader only; reused)

	// readState is the state reads use: the memtables and the current
	// version, published under mu whenever one of them changes (see
	// loadReadState).
	readState atomic.Pointer[readState]

	// mu guards the fields from mem to slowdownDebt and is the lock of
	// cond, which is broadcast whenever a flush or compaction finishes or
	// bgErr is set. (The groups after them have locks of their own.)
	mu   sync.Mutex
	cond sync.Cond
	mem  *memTable   // mutable
	imm  []*memTable // immutable, oldest first, waiting for flush
	log  *wal.Writer // the mutable memtable's WAL (touched only by the commit leader)
	// current is the live version; readers take a reference.
	current     *version
	nextFileNum uint64
	logNum      uint64 // WALs numbered below it are obsolete
	lastSeq     base.SeqNum
	snapshots   snapshotList
	bgErr       error // sticky: a failed flush, compaction or WAL write
	// pacedBytes is the WAL byte count the last slowdown charge covered,
	// and slowdownDebt the pause charged and not yet taken (see slowdown).
	pacedBytes   int64
	slowdownDebt time.Duration

	// iters are the open iterators, which Close releases if their owners
	// did not; nil until the first.
	itersMu sync.Mutex
	iters   map[*Iterator]struct{}

	// manifestMu serialises version changes (logAndApply).
	manifestMu   sync.Mutex
	manifest     *wal.Writer
	manifestNum  uint64
	manifestSize int64

	// compactMu serialises compactions (background and manual).
	compactMu sync.Mutex

	// Tables no version holds any more, and memtables nothing references,
	// waiting for the deleter goroutine (see retireTable, retireMemTable).
	retireMu      sync.Mutex
	retired       []*table
	retiredMems   []*memTable
	retireStopped bool
	retireCh      chan struct{}
	// releaseMu is held by whoever releases what was retired
	// (releaseRetired), so that a caller whose releaseRetired returns knows
	// that everything retired before it is released, even what the deleter
	// goroutine took first.
	releaseMu sync.Mutex

	flushCh   chan struct{}
	compactCh chan struct{}
	closing   chan struct{}
	bgWG      sync.WaitGroup

	stats dbStats
	// recovery is what Open replayed (see Recovery); set before Open
	// returns, and never changed after.
	recovery RecoveryInfo
}

// memTable is a memtable, the number of the WAL that holds its writes, and
// a count of the references that keep it alive.
//
// A memtable's memory is outside the Go heap (see memtable.MemTable.Free):
// it is freed once the last reference goes (by the DB's deleter goroutine,
// see retireMemTable), and a read after that faults and kills the process.
// So the rule is that nothing reads a memtable without holding a reference
// to it or to a readState that lists it. The references are:
//
//   - the DB's, while the memtable is db.mem or in db.imm: taken by
//     newMemTable, dropped by the flush that takes it out of db.imm (after
//     the table is written and a readState without it is published; the
//     flush frees the memtable itself if that was the last reference), by
//     Close, or by a failed Open;
//   - each readState's, for each memtable it lists, from publishReadState
//     until the state's last reference goes (readState.unref).
//
// Everything else reads through one of them: Get, Metrics and traces hold
// a readState while they read; an Iterator holds its readState until it is
// closed or DB.Close releases it, and hands out copies, never memtable
// bytes; the commit leader adds to db.mem, which only a later rotation by a
// later leader can hand to a flush; a flush reads db.imm[0], which the DB
// drops only after the flush is done. Get returns a copy of the value, and
// range tombstones are on the heap (memtable.MemTable.RangeDels), so
// nothing a caller keeps points into a memtable. Recovery and Repair use a
// bare memtable.MemTable of their own and free it when they are done.
type memTable struct {
	*memtable.MemTable
	logNum uint64
	// firstSeq is the sequence number of the first write the memtable
	// takes (it takes every later one until the next rotation), set under
	// db.mu when it becomes db.mem, and moved past an Ingest's number
	// while it is empty (see logAndApplyVisible): a checkpoint reads its
	// WAL only if a write it includes is there (see captureCheckpoint).
	firstSeq base.SeqNum
	refs     atomic.Int32
	db       *DB
}

// newMemTable returns an empty memtable for WAL logNum, with the DB's
// reference.
func (db *DB) newMemTable(logNum uint64) *memTable {
	m := &memTable{MemTable: memtable.NewFiltered(db.opts.MemTableSize, db.memSlabs), logNum: logNum, db: db}
	m.refs.Store(1)
	return m
}

func (m *memTable) ref() { m.refs.Add(1) }

// unref drops a reference; the last one retires the memtable, to be
// freed (see retireMemTable).
func (m *memTable) unref() {
	if m.refs.Add(-1) == 0 {
		m.db.retireMemTable(m)
	}
}

// unrefFlushed drops the DB's reference once a flush has installed the
// memtable's table, on the flush goroutine, which frees the memtable at
// once when no read holds it: queued to the deleter, it would wait behind
// the files the deleter is removing (see releaseRetired), and during a
// burst of flushes several memtables would wait there.
func (m *memTable) unrefFlushed() {
	if m.refs.Add(-1) == 0 {
		m.Free()
	}
}

// retireMemTable hands over a memtable nothing references any more, like
// retireTable a table: its last reference often goes on a user's Get or
// Iterator.Close (the readState's), which should not pay for unmapping
// its slabs, so the deleter goroutine frees it. Once the DB has stopped
// retiring (Close, or a failed Open), it is freed at once; Close frees
// what was queued before that (releaseRetired).
func (db *DB) retireMemTable(m *memTable) {
	db.retireMu.Lock()
	if db.retireStopped {
		db.retireMu.Unlock()
		m.Free()
		return
	}
	db.retiredMems = append(db.retiredMems, m)
	db.retireMu.Unlock()
	db.wakeDeleter()
}

// enter marks a public call in flight; it fails once the DB is closed.
func (db *DB) enter() error {
	db.closeMu.RLock()
	if db.closed.Load() {
		db.closeMu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (db *DB) leave() { db.closeMu.RUnlock() }

// enterWrite is enter for a call that changes the store: it also fails,
// with ErrReadOnly, on a store opened read-only.
func (db *DB) enterWrite() error {
	if err := db.enter(); err != nil {
		return err
	}
	if db.opts.ReadOnly {
		db.leave()
		return ErrReadOnly
	}
	return nil
}

// Put sets key to value.
func (db *DB) Put(key, value []byte) error {
	b := getBatch()
	b.Put(key, value)
	return db.applyPooled(b)
}

// Delete removes key. Deleting an absent key is not an error.
func (db *DB) Delete(key []byte) error {
	b := getBatch()
	b.Delete(key)
	return db.applyPooled(b)
}

// DeleteRange deletes every key in [start, end) with one write. An empty
// range (start == end) is a no-op; a reversed one (start > end) is an error
// that names both keys and matches ErrInvalidRange, and writes nothing.
func (db *DB) DeleteRange(start, end []byte) error {
	b := getBatch()
	b.DeleteRange(start, end)
	return db.applyPooled(b)
}

// batches pools the one-write batches of Put, Delete and DeleteRange, so
// that their buffers are reused.
var batches = sync.Pool{New: func() any { return new(Batch) }}

// maxPooledBatch is the largest buffer a pooled batch keeps: a batch that
// grew past it (a large value) is left to the garbage collector rather
// than pinned in the pool.
const maxPooledBatch = 64 << 10

func getBatch() *Batch { return batches.Get().(*Batch) }

// applyPooled applies a batch from getBatch and returns it to the pool.
// Apply holds no reference to a batch once it returns.
func (db *DB) applyPooled(b *Batch) error {
	err := db.Apply(b)
	if cap(b.data) <= maxPooledBatch {
		b.Reset()
		batches.Put(b)
	}
	return err
}

// Apply writes the batch atomically: after a crash, either all of it or none
// of it is there. The batch may be reused once Apply returns.
//
// A batch with an entry whose key and value (a range deletion's start and
// end) together pass 256 MiB - 8 bytes is refused whole, with an error and
// nothing written: a table could not hold it. So is a batch that refused a
// write when it was built (see Batch.DeleteRange): Apply returns that error.
//
// If the WAL cannot be written or synced, or a flush or compaction fails,
// the DB stops taking writes: this and every later write returns that
// error (reads go on). Close and reopen to recover from the WAL.
func (db *DB) Apply(b *Batch) error { return db.ApplyWithOptions(b, WriteOptions{}) }

// WriteOptions choose how one write is made durable.
type WriteOptions struct {
	// Sync makes the write survive a power loss before it returns: the WAL
	// is fsynced even if the store was opened with Options.NoSync. A synced
	// write makes every write committed with it or before it durable too.
	// Without it, Options.NoSync decides.
	Sync bool
}

// ApplyWithOptions is Apply with a choice of durability for this batch, so
// that a store opened with NoSync can still make some writes (a replicated
// log, say) durable one by one, beside unsynced derived state.
func (db *DB) ApplyWithOptions(b *Batch, o WriteOptions) error {
	if err := db.enterWrite(); err != nil {
		return err
	}
	defer db.leave()
	if b != nil && b.err != nil {
		return b.err
	}
	if b == nil || b.empty() {
		return nil
	}
	if b.longest+base.TrailerLen > sstable.MaxEntryLen {
		return fmt.Errorf("shale: a batch entry of %d bytes (key and value) is longer than the %d a table holds; nothing was written",
			b.longest, sstable.MaxEntryLen-base.TrailerLen)
	}
	return db.commit(b, o.Sync, false)
}

// Get returns a copy of the newest value of key, or ErrNotFound.
func (db *DB) Get(key []byte) ([]byte, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.leave()
	return db.get(key, readLatest, nil)
}

// readLatest, as the sequence number of a read, means "every write visible
// when the read took its state" (see readState).
const readLatest = ^base.SeqNum(0)

// get is the read path: memtables newest first, then the tables of the
// version that was current when the read began, at sequence number seq (a
// snapshot's, or readLatest).
//
// Each memtable and table answers for itself, its own range tombstones
// applied: a value, a deletion, a range deletion, or nothing. The first that
// answers decides: everything an older source holds for the key is older
// than what a newer one holds, a range tombstone included (a table's bounds
// cover its tombstones, so compactions keep that order). So a newer table's
// tombstone hides an older table's value without the older table being
// asked, and a per-table answer (a row cache's) never needs another table's
// tombstones.
func (db *DB) get(key []byte, seq base.SeqNum, trace *LookupTrace) ([]byte, error) {
	rs, seq := db.loadReadState(seq)
	defer rs.unref()
	v := rs.v

	for i, m := range rs.memtables {
		val, kind, ok := m.Get(key, seq)
		if trace != nil {
			trace.memtable(i, ok, kind, !m.MayContain(key))
		}
		if ok {
			return foundValue(val, kind)
		}
	}
	// L0 files overlap; newer files hold newer versions, so the first file
	// with a visible version of the key has the answer.
	for _, f := range v.Levels[0] {
		if val, kind, ok, err := db.getFromTable(v, 0, f.FileNum, key, seq, trace); err != nil || ok {
			return foundValueOrErr(val, kind, err)
		}
	}
	for level := 1; level < len(v.Levels); level++ {
		f := v.FileForKey(level, key)
		if f == nil {
			if trace != nil {
				trace.levelMiss(level, len(v.Levels[level]))
			}
			continue
		}
		if val, kind, ok, err := db.getFromTable(v, level, f.FileNum, key, seq, trace); err != nil || ok {
			return foundValueOrErr(val, kind, err)
		}
	}
	if trace != nil {
		trace.Result = "absent"
	}
	return nil, ErrNotFound
}

// getFromTable looks key up in one table: the key-range check, then the
// filter and the row cache (inside sstable.Reader.Get), then at most one
// data block.
func (db *DB) getFromTable(v *version, level int, fileNum uint64, key []byte, seq base.SeqNum, trace *LookupTrace) ([]byte, base.Kind, bool, error) {
	t := v.tables[fileNum]
	if !t.meta.ContainsKey(key) {
		if trace != nil {
			trace.rangeSkip(level, t.meta)
		}
		return nil, 0, false, nil
	}
	var st *sstable.GetTrace
	if trace != nil {
		st = &sstable.GetTrace{}
	}
	val, kind, ok, err := t.reader.Get(key, seq, st)
	if trace != nil {
		trace.table(level, t.meta, t.reader.Properties(), st, ok, kind)
	}
	return val, kind, ok, err
}

// foundValue turns the answer of a memtable or table into Get's: a value,
// or ErrNotFound for a deletion (a point or range tombstone).
func foundValue(val []byte, kind base.Kind) ([]byte, error) {
	if kind != base.KindSet {
		return nil, ErrNotFound
	}
	return append([]byte{}, val...), nil
}

func foundValueOrErr(val []byte, kind base.Kind, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return foundValue(val, kind)
}

// readState is everything a read needs, consistent with each other: the
// memtables and the current version. The DB publishes a new one, with db.mu
// held, each time one of them changes (publishReadState), and reads take the
// published one without any lock (loadReadState), so that they scale with
// cores. It is reference counted: the DB holds a reference to the state it
// publishes until it replaces it, and each read one while it reads (an
// Iterator until it is released); the last reference released releases the
// memtables and the version, whose memory and tables stay until then.
type readState struct {
	refs atomic.Int32
	mem  *memTable
	// imm are the immutable memtables, oldest first. The slice is shared
	// with the DB without a copy: the DB only ever appends to db.imm or
	// drops its first element, so the elements a reader sees never change.
	imm []*memTable
	v   *version
}

// memtables yields the memtables newest first, numbered from 0 (the
// mutable one).
func (rs *readState) memtables(yield func(int, *memTable) bool) {
	if !yield(0, rs.mem) {
		return
	}
	for i := len(rs.imm) - 1; i >= 0; i-- {
		if !yield(len(rs.imm)-i, rs.imm[i]) {
			return
		}
	}
}

// tryRef takes a reference unless the last one is gone: a state whose
// count reached 0 has released its version and must not be used.
func (rs *readState) tryRef() bool {
	for {
		n := rs.refs.Load()
		if n == 0 {
			return false
		}
		if rs.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (rs *readState) unref() {
	if rs.refs.Add(-1) != 0 {
		return
	}
	for _, m := range rs.memtables {
		m.unref()
	}
	rs.v.unref()
}

// loadReadState returns the published state, referenced (release it with
// unref), and the sequence number to read at: seq, or for readLatest the
// visible sequence number, read after the state. Flushes and compactions
// drop a version shadowed by a newer visible one, so a read must never use
// a sequence number older than the data it reads (a snapshot's is
// protected by its registration instead). A state replaced between the
// load and the reference is still whole if the reference was taken: the
// read then sees the store as it was when the state was replaced, as every
// write in a newer memtable has a higher sequence number than those in
// the older ones.
func (db *DB) loadReadState(seq base.SeqNum) (*readState, base.SeqNum) {
	for {
		rs := db.readState.Load()
		if rs.tryRef() {
			if seq == readLatest {
				seq = base.SeqNum(db.visibleSeq.Load())
			}
			return rs, seq
		}
	}
}

// publishReadState, with db.mu held, publishes the current memtables and
// version for reads and drops the DB's reference to the state it replaces.
// Dropping the last reference to a version may retire tables, which takes
// retireMu: that comes after mu in the lock order; dropping the last one to
// a memtable frees it.
func (db *DB) publishReadState() {
	rs := &readState{mem: db.mem, imm: db.imm, v: db.current}
	rs.refs.Store(1)
	for _, m := range rs.memtables {
		m.ref()
	}
	db.current.ref()
	if old := db.readState.Swap(rs); old != nil {
		old.unref()
	}
}

// Flush writes the memtable to an SSTable and returns once the table is in
// the MANIFEST.
func (db *DB) Flush() error {
	if err := db.enterWrite(); err != nil {
		return err
	}
	defer db.leave()
	return db.flush()
}

func (db *DB) flush() error {
	if err := db.commit(nil, false, true); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	for len(db.imm) > 0 && db.bgErr == nil {
		db.cond.Wait()
	}
	return db.bgErr
}

// Close waits for background work, marks the end of the WAL and of the
// MANIFEST (so that the next Open knows they were closed cleanly), closes
// every file and releases the lock. Calls after Close return ErrClosed.
// Iterators and snapshots should be closed first: those still open are
// released all the same, return ErrClosed from then on, and Close returns an
// error that counts them.
func (db *DB) Close() error {
	db.closeMu.Lock()
	if db.closed.Swap(true) {
		db.closeMu.Unlock()
		return ErrClosed
	}
	db.closeMu.Unlock()

	// No call is in flight now (closeMu), so no writer waits on cond;
	// only the background goroutines remain.
	close(db.closing)
	db.bgWG.Wait()

	db.mu.Lock()
	defer db.mu.Unlock()
	err := db.bgErr
	if db.log != nil {
		if e := db.log.MarkEnd(); err == nil {
			err = e
		}
		if e := db.log.Close(); err == nil {
			err = e
		}
	}
	if db.manifest != nil {
		if e := db.manifest.MarkEnd(); err == nil {
			err = e
		}
		if e := db.manifest.Close(); err == nil {
			err = e
		}
	}
	db.itersMu.Lock()
	if n, m := len(db.iters), len(db.snapshots); n+m > 0 {
		err = errors.Join(err, fmt.Errorf("shale: Close: left open: iterators %d, snapshots %d (released; they now return ErrClosed)", n, m))
	}
	for it := range db.iters {
		it.release() // its error is for its Close, which now says ErrClosed
	}
	db.iters = nil
	db.itersMu.Unlock()
	db.readState.Swap(nil).unref()
	db.releaseMemTables()
	db.current.unref()
	db.releaseRetired(true)
	db.memSlabs.Close()
	if e := db.lock.Close(); err == nil {
		err = e
	}
	return err
}

// releaseMemTables drops the DB's references to its memtables, at Close or
// at a failed Open, with no flush or commit running.
func (db *DB) releaseMemTables() {
	if db.mem != nil {
		db.mem.unref()
	}
	for _, m := range db.imm {
		m.unref()
	}
	db.mem, db.imm = nil, nil
}

// dbStats are counters kept by the DB itself (the tables keep theirs in
// tableStats).
type dbStats struct {
	flushes            atomic.Int64
	flushBytes         atomic.Int64
	compactions        atomic.Int64
	compactionBytesIn  atomic.Int64
	compactionBytesOut atomic.Int64
	walBytes           atomic.Int64
	walMappedBytes     atomic.Int64
	walWrites          atomic.Int64
	userBytes          atomic.Int64
	stallNanos         atomic.Int64
	slowdowns          atomic.Int64
	slowdownNanos      atomic.Int64
	trivialMoves       atomic.Int64
	readCompactions    atomic.Int64
	// deleteOnlyCompactions counts the edits that dropped tables a range
	// tombstone deletes wholly, without reading them.
	deleteOnlyCompactions atomic.Int64
	// ingests counts the Ingests that added tables, ingestedBytes the
	// bytes of those tables.
	ingests, ingestedBytes atomic.Int64
	// levelBytesWritten counts, per level, the bytes of the tables written
	// into it: flushes for L0, compaction outputs below (a trivial move
	// writes nothing).
	levelBytesWritten [manifest.NumLevels]atomic.Int64
}

func (db *DB) logf(format string, args ...any) {
	if db.opts.Logger != nil {
		db.opts.Logger(format, args...)
	}
}

func sinceNanos(t time.Time) int64 { return int64(time.Since(t)) }
