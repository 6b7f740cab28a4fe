package shale

import (
	"fmt"
	"sync"
	"time"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/wal"
	"github.com/shale-db/shale/vfs"
)

// pendingWrite is a batch (or a flush request) waiting in the commit queue.
// pendingWrites are pooled (see pendingWrites), wake channel included: a
// write receives at most one message on it, and receives it before its
// commit returns, so the channel is empty whenever the pendingWrite is in
// the pool.
type pendingWrite struct {
	batch      *Batch
	forceFlush bool // rotate the memtable even if it is not full
	sync       bool // sync the WAL before returning, even under Options.NoSync
	wake       chan commitResult
	// exclusive, when not nil, runs after the group's batches are
	// committed, while its leader still leads: no other write commits
	// until it returns (see DB.exclusive). Its error is the write's.
	exclusive func() error
}

type commitResult struct {
	err  error
	lead bool // the waiter becomes the leader and commits the queue
}

// pendingWrites pools pendingWrites with their wake channels, so that a
// write allocates neither.
var pendingWrites = sync.Pool{
	New: func() any { return &pendingWrite{wake: make(chan commitResult, 1)} },
}

// commit runs a batch (nil for none), synced if syncWAL, or with
// forceFlush a memtable rotation, through the group commit pipeline.
// Writers queue up; one of them, the leader, takes the whole queue, writes
// its batches to the WAL as one group (one write call), syncs the log once
// for the group, applies the batches to the memtable and publishes the new
// sequence number, then wakes the others; the next group's leader is
// elected once it is due (see electLeader). So N concurrent writers share
// one write and one fsync. The batch is not referenced once commit returns.
//
// A pipelined commit, the WAL passed to the next group while a group
// applies to the memtable (in turn order, the memtable's rotation waiting
// for every turn), was tried and measured slower: kvbench fillrandom, 1M
// keys, 4 writers on 2 cores, 201-242k ops/s against 247-293k in three
// alternated pairs (one writer: the same within the noise). The hand-offs
// cost more than the overlap saves, although a fill keeps only about 1.3
// cores busy.
func (db *DB) commit(b *Batch, syncWAL, forceFlush bool) error {
	w := pendingWrites.Get().(*pendingWrite)
	w.batch, w.sync, w.forceFlush = b, syncWAL, forceFlush
	err := db.commitQueued(w)
	putPendingWrite(w)
	return err
}

// putPendingWrite returns w to the pool with nothing of its write left in
// it: the next write to take it, perhaps an exclusive one or another DB's,
// sets only what it needs.
func putPendingWrite(w *pendingWrite) {
	*w = pendingWrite{wake: w.wake}
	pendingWrites.Put(w)
}

// exclusive runs fn in the commit pipeline, alone: the batches of its
// group (queued before it or with it) are committed first, and no later
// write commits, or becomes visible, until fn returns. fn runs on the group's leader, which
// may hold db.mu while it makes room (makeRoomForWrite) and owns db.log
// and the sequence numbers as a commit does.
func (db *DB) exclusive(fn func() error) error {
	w := pendingWrites.Get().(*pendingWrite)
	w.exclusive = fn
	err := db.commitQueued(w)
	putPendingWrite(w)
	return err
}

// commitQueued queues w and waits for its group to be committed, leading
// the group if it is elected (see electLeader).
func (db *DB) commitQueued(w *pendingWrite) error {
	db.commitMu.Lock()
	db.committing++
	db.queue = append(db.queue, w)
	lead := db.electLeader(w)
	db.commitMu.Unlock()

	if !lead {
		r := <-w.wake
		if !r.lead {
			db.commitMu.Lock()
			db.committing--
			db.electLeader(nil)
			db.commitMu.Unlock()
			return r.err
		}
	}

	// The leader swaps the queue for the spare one, so that writers queue
	// into a slice that has already grown while this group commits.
	db.commitMu.Lock()
	group := db.queue
	db.queue, db.spareQueue = db.spareQueue, nil
	db.commitMu.Unlock()

	groupErr := db.commitGroup(group)
	var err error
	for _, g := range group {
		gerr := groupErr
		if g.exclusive != nil && gerr == nil {
			gerr = g.exclusive()
		}
		if g == w {
			err = gerr
		} else {
			g.wake <- commitResult{err: gerr}
		}
	}
	walWriteCalls := !db.log.Mapped() // db.log is the leader's to read (see rotateMemTable)

	clear(group) // keep no pendingWrite (and so no batch) alive
	db.commitMu.Lock()
	db.committing--
	db.spareQueue = group[:0]
	db.walWriteCalls = walWriteCalls
	db.leading = false
	db.electLeader(nil)
	db.commitMu.Unlock()
	return err
}

// electLeader starts the next group if it is due, with commitMu held: if no
// group is being committed, some write is queued, and, if the group costs
// a system call (see groupCostsCall), every write inside commit has queued
// or returned. It is called whenever one of these may have become true: a
// write queued (self, which then leads, and electLeader returns true), a
// write returned, a group ended. Otherwise the first queued write is woken
// to lead.
//
// Waiting for every write inside commit lets the writers of the previous
// group, woken but not yet run, queue for the next group. A leader never
// blocks while it commits (a write call to the page cache keeps its
// thread), so without this wait writers that share a core take turns at
// the scheduler's pace: each one commits alone, one write call per write,
// until it is preempted; and after a synced group the first of its
// writers to queue again would sync alone. The wait is bounded: the writes
// it waits for need only CPU to queue or return. A lone writer never
// waits. With several, the last write to return most often completes the
// group and wakes its leader: a group costs one wake-up per write in it,
// as each of them waited.
//
// A group that a mapped WAL stores with a copy, unsynced, costs little
// more than a share of a larger one, and there the wait costs more than it
// saves: a writer that finds no group being committed leads at once,
// without a wake-up, and groups form only from the writes that queue while
// one commits. (kvbench fillrandom, 1M keys, 4 writers on 2 shared cores,
// alternated with waiting: medians 1.08x and 1.14x the ops/s in two sets
// of runs, and 7% less CPU; one writer is unchanged.)
func (db *DB) electLeader(self *pendingWrite) bool {
	if db.leading || len(db.queue) == 0 || db.committing > len(db.queue) && db.groupCostsCall() {
		return false
	}
	db.leading = true
	if self != nil {
		return true
	}
	db.queue[0].wake <- commitResult{lead: true}
	return false
}

// groupCostsCall reports, with commitMu held, whether the queued group will
// cost a system call: the WAL writes groups with write(2) rather than
// storing them through a mapping (as the last group found it), or the group
// syncs.
func (db *DB) groupCostsCall() bool {
	if db.walWriteCalls || !db.opts.NoSync {
		return true
	}
	for _, w := range db.queue {
		if w.sync {
			return true
		}
	}
	return false
}

// commitGroup writes a group of batches: room in the memtable, sequence
// numbers, one WAL group (a record per batch, one write call or a copy
// into the mapping), one sync, memtable inserts, then visibility.
func (db *DB) commitGroup(group []*pendingWrite) error {
	writes, force, sync := false, false, !db.opts.NoSync
	for _, w := range group {
		writes = writes || w.batch != nil
		force = force || w.forceFlush
		sync = sync || w.sync
	}

	db.mu.Lock()
	if err := db.makeRoomForWrite(force); err != nil {
		db.mu.Unlock()
		return err
	}
	mem, log := db.mem, db.log
	seq := db.lastSeq + 1
	for _, w := range group {
		if w.batch != nil {
			w.batch.setSeqNum(seq)
			seq += base.SeqNum(w.batch.count)
		}
	}
	db.lastSeq = seq - 1
	db.mu.Unlock()

	if !writes {
		return nil
	}
	var userBytes int64
	recs := db.walRecs[:0]
	for _, w := range group {
		if w.batch != nil {
			recs = append(recs, w.batch.data)
		}
	}
	logSize, logStored := log.Size(), log.StoredSize()
	err := log.WriteGroup(recs, sync)
	clear(recs) // keep no batch alive past its commit
	db.walRecs = recs[:0]
	if err != nil {
		return db.setBackgroundError(err)
	}
	db.stats.walWrites.Add(1)
	if sync {
		if err := log.Sync(); err != nil {
			return db.setBackgroundError(err)
		}
	}
	db.stats.walBytes.Add(log.Size() - logSize)
	db.stats.walMappedBytes.Add(log.StoredSize() - logStored)
	for _, w := range group {
		if w.batch == nil {
			continue
		}
		// The batch was built by our own encoder and needs no check.
		w.batch.forEach(func(e batchEntry) {
			mem.Add(e.Seq, e.Kind, e.Key, e.Value)
			userBytes += int64(len(e.Key) + len(e.Value))
		})
	}
	db.stats.userBytes.Add(userBytes)
	db.visibleSeq.Store(uint64(seq - 1))
	return nil
}

// setBackgroundError records a failure that leaves the DB unable to accept
// writes (a WAL, flush or MANIFEST error) and returns it.
func (db *DB) setBackgroundError(err error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.setBackgroundErrorLocked(err)
}

// setBackgroundErrorLocked is setBackgroundError with db.mu held. The first
// error stays: it returns that one, which a later failure (of work that
// ran without db.mu meanwhile) does not replace.
func (db *DB) setBackgroundErrorLocked(err error) error {
	if db.bgErr == nil {
		db.bgErr = err
		db.logf("background error: %v", err)
		db.backgroundError(err)
	}
	db.cond.Broadcast()
	return db.bgErr
}

// makeRoomForWrite makes sure the mutable memtable can take the next group,
// with db.mu held; only the commit leader calls it. It pauses writes
// between the L0 slowdown and stop thresholds (see slowdown), waits while L0
// is at its stop threshold or too many memtables wait for a flush, and
// rotates a full memtable (or any non-empty one when force is set) to a
// new WAL.
func (db *DB) makeRoomForWrite(force bool) error {
	var stallStart time.Time
	// stall marks the start of a stall, telling the listener why (format
	// and args) if it is the start.
	stall := func(format string, args ...any) {
		if stallStart.IsZero() {
			stallStart = time.Now()
			if db.listener().WriteStallBegin != nil {
				db.writeStallBegin(fmt.Sprintf(format, args...))
			}
		}
	}
	defer func() {
		if !stallStart.IsZero() {
			d := time.Since(stallStart)
			db.stats.stallNanos.Add(int64(d))
			db.writeStallEnd(d)
		}
	}()
	if d := db.slowdown(); d > 0 {
		db.mu.Unlock()
		start := time.Now()
		time.Sleep(d)
		db.stats.slowdowns.Add(1)
		db.stats.slowdownNanos.Add(sinceNanos(start))
		db.mu.Lock()
	}
	for {
		if db.bgErr != nil {
			return db.bgErr
		}
		l0 := len(db.current.Levels[0])
		switch {
		case !force && db.mem.Size() < db.opts.MemTableSize:
			return nil
		case force && db.mem.Empty():
			return nil
		case len(db.imm) >= db.opts.MaxImmutableMemTables:
			stall("memtables: %d wait for a flush (MaxImmutableMemTables %d)", len(db.imm), db.opts.MaxImmutableMemTables)
			db.cond.Wait()
		case !db.opts.DisableAutomaticCompactions && l0 >= db.opts.L0StopWritesThreshold:
			stall("L0: %d tables wait for a compaction (L0StopWritesThreshold %d)", l0, db.opts.L0StopWritesThreshold)
			db.maybeScheduleCompaction()
			db.cond.Wait()
		default:
			if err := db.rotateMemTable(); err != nil {
				// A flush may have failed while the rotation ran without
				// db.mu: its error, the first, stays the DB's.
				return db.setBackgroundErrorLocked(err)
			}
			force = false
		}
	}
}

// slowdownNanosPerByte is the pause charged per byte written while L0 is
// one file short of its stop threshold; below that the charge is a fraction
// of it (see slowdownCharge).
const slowdownNanosPerByte = 50

// slowdownQuantum is the shortest pause slowdown asks for: charges accrue
// until they reach it. On a busy machine a sleeping goroutine can take
// milliseconds to run again, so many short pauses cost far more than their
// sum: measured, 1 ms pauses took twice their total, and fills ran slower
// than with 10 ms ones.
const slowdownQuantum = 10 * time.Millisecond

// slowdown returns how long the commit leader pauses before its group, or
// 0, with db.mu held. Every byte written (as counted in the WAL) while L0
// is at or above its slowdown threshold is charged a pause (see
// slowdownCharge), so the write rate falls in steps as L0 fills instead of
// running at full speed into the hard stop, and a stream of small writes
// is slowed exactly as much as one large batch of the same bytes. The
// charges accrue and are paid in pauses of at least slowdownQuantum. The
// bytes are those written since the previous call, so a group pays for the
// groups before it.
func (db *DB) slowdown() time.Duration {
	written := db.stats.walBytes.Load()
	bytes := written - db.pacedBytes
	db.pacedBytes = written
	charge := slowdownCharge(bytes, len(db.current.Levels[0]), db.opts.L0SlowdownWritesThreshold, db.opts.L0StopWritesThreshold)
	if charge == 0 || db.opts.DisableAutomaticCompactions {
		db.slowdownDebt = 0
		return 0
	}
	db.slowdownDebt += charge
	if db.slowdownDebt < slowdownQuantum {
		return 0
	}
	d := db.slowdownDebt
	db.slowdownDebt = 0
	return d
}

// slowdownCharge is the pause owed for bytes written with l0 files in L0,
// given the slowdown and stop thresholds. It grows with L0's compaction
// debt, how far L0 has gone from the slowdown threshold towards the stop
// threshold: (l0 - slow + 1) / (stop - slow) times slowdownNanosPerByte per
// byte, e.g. a quarter of it at 8 files and all of it at 11 with
// thresholds 8 and 12. Below the slowdown threshold it is 0, and so always
// with the default, which puts the slowdown threshold at the stop.
func slowdownCharge(bytes int64, l0, slow, stop int) time.Duration {
	if l0 < slow || slow >= stop || bytes <= 0 {
		return 0
	}
	debt := float64(min(l0, stop-1)-slow+1) / float64(stop-slow)
	return time.Duration(float64(bytes) * debt * slowdownNanosPerByte)
}

// rotateMemTable starts a new WAL and memtable and queues the full one for
// flushing. The commit leader calls it with db.mu held; it releases db.mu
// for the file work (see startWAL), so that reads, flushes and compactions
// never wait for that I/O, and installs the new WAL and memtable once it
// has it again. Nothing else touches db.log meanwhile: only the commit
// leader writes to it, and Close waits for every call in flight.
func (db *DB) rotateMemTable() error {
	num := db.nextFileNum
	db.nextFileNum++
	old := db.log
	db.mu.Unlock()
	f, err := db.startWAL(old, num)
	var mem *memTable
	if err == nil {
		mem = db.newMemTable(num) // its key filter is allocated zeroed: not under db.mu
	}
	db.mu.Lock()
	if err != nil {
		return err
	}
	db.log = db.newWALWriter(f)
	db.imm = append(db.imm, db.mem)
	mem.firstSeq = db.lastSeq + 1
	db.mem = mem
	db.publishReadState()
	db.scheduleFlush()
	return nil
}

// startWAL, without db.mu, ends old and then makes WAL num, its
// successor.
//
// The old WAL is ended first (wal.Writer.EndClose: synced, then an end
// marker that claims every byte before it, synced with a mapped log's cut),
// even under NoSync, before the new WAL's name exists, so that no crash
// image holds the new name without the old WAL's end: recovery allows a
// torn tail only in the newest WAL with bytes, and a power loss can leave
// the new WAL empty, after which only the end marker tells damage to the
// old WAL's last records from a torn tail. The new WAL's directory entry is
// then synced, also under NoSync: the flush of the old memtable names the
// new WAL in the MANIFEST as its log number, and the MANIFEST must never
// name a file a power loss can take away. The new WAL takes no write before
// both are done. Both happen once per memtable and cost little (the ending
// costs a second fsync only when writes since the last one are unsynced,
// as under NoSync). If a step fails, the old WAL stays the newest one with
// bytes, ended or not, with at most an empty newer WAL after it.
func (db *DB) startWAL(old *wal.Writer, num uint64) (vfs.File, error) {
	if err := old.EndClose(); err != nil {
		return nil, err
	}
	f, err := db.fs.Create(db.fileName(fileTypeLog, num))
	if err != nil {
		return nil, err
	}
	db.walCreated(num)
	if err := db.fs.SyncDir(db.dir); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// newWALWriter returns the writer of the new WAL file f: mapped unless
// Options.DisableWALMapping (see wal.NewMappedWriter).
func (db *DB) newWALWriter(f vfs.File) *wal.Writer {
	if db.opts.DisableWALMapping {
		return wal.NewWriter(f)
	}
	return wal.NewMappedWriter(f)
}

func isClosing(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
