package shale

import (
	"time"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/memtable"
	"github.com/shale-db/shale/internal/wal"
)

// pendingWrite is a batch (or a flush request) waiting in the commit queue.
type pendingWrite struct {
	batch      *Batch
	forceFlush bool // rotate the memtable even if it is not full
	sync       bool // sync the WAL before returning, even under Options.NoSync
	wake       chan commitResult
}

type commitResult struct {
	err  error
	lead bool // the waiter becomes the leader and commits the queue
}

// commit runs w through the group commit pipeline. Writers queue up; one of
// them, the leader, takes the whole queue, writes one WAL record per batch,
// syncs the log once for the group, applies the batches to the memtable and
// publishes the new sequence number, then hands leadership to the next
// waiting writer. So N concurrent writers share one fsync.
func (db *DB) commit(w *pendingWrite) error {
	w.wake = make(chan commitResult, 1)
	db.commitMu.Lock()
	db.queue = append(db.queue, w)
	lead := !db.leading
	db.leading = true
	db.commitMu.Unlock()

	if !lead {
		r := <-w.wake
		if !r.lead {
			return r.err
		}
	}

	db.commitMu.Lock()
	group := db.queue
	db.queue = nil
	db.commitMu.Unlock()

	err := db.commitGroup(group)

	for _, g := range group {
		if g != w {
			g.wake <- commitResult{err: err}
		}
	}
	db.commitMu.Lock()
	if len(db.queue) > 0 {
		db.queue[0].wake <- commitResult{lead: true}
	} else {
		db.leading = false
	}
	db.commitMu.Unlock()
	return err
}

// commitGroup writes a group of batches: room in the memtable, sequence
// numbers, WAL records, one sync, memtable inserts, then visibility.
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
	var walBytes, userBytes int64
	for _, w := range group {
		if w.batch == nil {
			continue
		}
		if _, err := log.WriteRecord(w.batch.data); err != nil {
			return db.setBackgroundError(err)
		}
		walBytes += int64(len(w.batch.data))
	}
	db.stats.walBytes.Add(walBytes)
	if sync {
		if err := log.Sync(); err != nil {
			return db.setBackgroundError(err)
		}
	}
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
	if db.bgErr == nil {
		db.bgErr = err
		db.logf("background error: %v", err)
	}
	db.cond.Broadcast()
	return db.bgErr
}

// makeRoomForWrite makes sure the mutable memtable can take the next group,
// with db.mu held; only the commit leader calls it. It delays writes once at
// the L0 slowdown threshold, waits while L0 is at its stop threshold or too
// many memtables wait for a flush, and rotates a full memtable (or any
// non-empty one when force is set) to a new WAL.
func (db *DB) makeRoomForWrite(force bool) error {
	slowed := false
	var stallStart time.Time
	defer func() {
		if !stallStart.IsZero() {
			db.stats.stallNanos.Add(sinceNanos(stallStart))
		}
	}()
	for {
		if db.bgErr != nil {
			return db.bgErr
		}
		l0 := len(db.current.Levels[0])
		switch {
		case !slowed && !db.opts.DisableAutomaticCompactions && l0 >= db.opts.L0SlowdownWritesThreshold:
			// Give compaction a moment instead of stalling hard later.
			slowed = true
			db.stats.slowdowns.Add(1)
			db.mu.Unlock()
			time.Sleep(time.Millisecond)
			db.stats.stallNanos.Add(int64(time.Millisecond))
			db.mu.Lock()
		case !force && db.mem.Size() < db.opts.MemTableSize:
			return nil
		case force && db.mem.Empty():
			return nil
		case len(db.imm) >= db.opts.MaxImmutableMemTables:
			if stallStart.IsZero() {
				stallStart = time.Now()
			}
			db.cond.Wait()
		case !db.opts.DisableAutomaticCompactions && l0 >= db.opts.L0StopWritesThreshold:
			if stallStart.IsZero() {
				stallStart = time.Now()
			}
			db.maybeScheduleCompaction()
			db.cond.Wait()
		default:
			if err := db.rotateMemTable(); err != nil {
				db.bgErr = err
				db.logf("background error: %v", err)
				db.cond.Broadcast()
				return err
			}
			force = false
		}
	}
}

// rotateMemTable, with db.mu held, starts a new WAL and memtable and queues
// the full one for flushing.
//
// The old WAL is synced first, even under NoSync: recovery allows a torn
// tail only in the newest WAL, so no newer one may exist before the old one
// is whole. The new WAL's directory entry is then synced, also under NoSync:
// the flush of the old memtable names the new WAL in the MANIFEST as its log
// number, and the MANIFEST must never name a file a power loss can take
// away. Both happen once per memtable and cost little. If either step
// fails, the old WAL stays the newest one with a whole record at its end, or
// an empty newer WAL follows it, which recovery skips.
func (db *DB) rotateMemTable() error {
	if err := db.log.Sync(); err != nil {
		return err
	}
	num := db.nextFileNum
	db.nextFileNum++
	f, err := db.fs.Create(db.fileName(fileTypeLog, num))
	if err != nil {
		return err
	}
	if err := db.fs.SyncDir(db.dir); err != nil {
		f.Close()
		return err
	}
	if err := db.log.Close(); err != nil {
		f.Close()
		return err
	}
	db.log = wal.NewWriter(f)
	db.imm = append(db.imm, db.mem)
	db.mem = &memTable{MemTable: memtable.New(), logNum: num}
	db.scheduleFlush()
	return nil
}

func isClosing(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
