package shale

// RecoveryInfo says what Open found in the write-ahead logs: the writes
// acknowledged since the last flush, which no table held yet and which Open
// replayed into a new table before it returned (or, opened read-only, into
// the memtable it reads from, writing nothing).
type RecoveryInfo struct {
	// WALs is the number of WAL files that held a batch.
	WALs int
	// Batches is the number of WAL records replayed, one per batch (each
	// Put, Delete and DeleteRange outside a batch is a batch of one), and
	// Entries the writes they held.
	Batches, Entries int
	// LastSeqNum is the sequence number recovery reached: that of the
	// newest write in the tables or the WALs. The next write gets the one
	// after it.
	LastSeqNum uint64
	// TornTail is set when the newest WAL ended in a record that a crash
	// interrupted, which Open cut off at offset TornTailAt of that WAL
	// (the records before it were replayed; a read-only Open leaves the
	// bytes in the file and reads past none of them). It is not set for a
	// WAL that ends in whole records or in zeros allocated ahead of it.
	TornTail   bool
	TornTailAt int64
}

// Recovery returns what Open replayed from the WALs to open this DB. It
// does not change while the DB is open; after Close it returns the zero
// RecoveryInfo.
func (db *DB) Recovery() RecoveryInfo {
	if err := db.enter(); err != nil {
		return RecoveryInfo{}
	}
	defer db.leave()
	return db.recovery
}
