package shale

import (
	"slices"

	"github.com/shale-db/shale/internal/base"
)

// Snapshot is a fixed point in the store's history: reads through it see
// every write that had returned when it was taken and none begun after it;
// a write in flight at that moment is seen whole or not at all.
// Compactions keep every version a live snapshot can see. Close it when
// done, or those versions are kept forever. A Snapshot is for one
// goroutine at a time. Closing the DB releases the snapshots still open,
// which then return ErrClosed.
type Snapshot struct {
	db     *DB
	seq    base.SeqNum
	closed bool
}

// NewSnapshot returns a snapshot of the store as it is now.
func (db *DB) NewSnapshot() *Snapshot {
	s := &Snapshot{db: db}
	if err := db.enter(); err != nil {
		s.closed = true
		return s
	}
	defer db.leave()
	db.mu.Lock()
	s.seq = base.SeqNum(db.visibleSeq.Load())
	db.snapshots.add(s.seq)
	db.mu.Unlock()
	return s
}

// Get returns the value key had when the snapshot was taken, or ErrNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if err := s.db.enter(); err != nil {
		return nil, err
	}
	defer s.db.leave()
	return s.db.get(key, s.seq, nil)
}

// TraceGet looks key up like Get and returns the path the lookup took.
func (s *Snapshot) TraceGet(key []byte) (*LookupTrace, error) {
	if s.closed {
		return nil, ErrClosed
	}
	return s.db.traceGet(key, s.seq)
}

// TraceScan scans like DB.TraceScan, at the snapshot.
func (s *Snapshot) TraceScan(opts *IterOptions) (*ScanTrace, error) {
	if s.closed {
		return nil, ErrClosed
	}
	return s.db.traceScan(opts, s.seq)
}

// NewIter returns an iterator over the store as it was when the snapshot was
// taken.
func (s *Snapshot) NewIter(opts *IterOptions) *Iterator {
	if s.closed {
		return &Iterator{err: ErrClosed}
	}
	return s.db.newIter(opts, s.seq, nil)
}

// Close releases the snapshot. Closing twice returns ErrClosed, and so does
// closing after the DB was closed, which released the snapshot already.
func (s *Snapshot) Close() error {
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	db := s.db
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	db.mu.Lock()
	db.snapshots.remove(s.seq)
	db.mu.Unlock()
	return nil
}

// snapshotList is the multiset of live snapshot sequence numbers, sorted.
type snapshotList []base.SeqNum

func (l *snapshotList) add(seq base.SeqNum) {
	i, _ := slices.BinarySearch(*l, seq)
	*l = slices.Insert(*l, i, seq)
}

func (l *snapshotList) remove(seq base.SeqNum) {
	if i, found := slices.BinarySearch(*l, seq); found {
		*l = slices.Delete(*l, i, i+1)
	}
}

// snapshotSeqs returns a copy of the live snapshots, ascending.
func (db *DB) snapshotSeqs() []base.SeqNum {
	db.mu.Lock()
	defer db.mu.Unlock()
	return slices.Clone(db.snapshots)
}
