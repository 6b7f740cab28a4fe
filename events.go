package shale

import (
	"time"

	"github.com/shale-db/shale/internal/manifest"
)

// EventListener receives the store's background events, as Pebble's
// EventListener does; Options.EventListener installs one. Each hook is
// optional (nil: not called).
//
// Hooks run on the goroutine that did the work (a flush, a compaction, a
// table being closed, the commit leader, Open, or the caller of Flush or
// Compact), so different hooks, and the same one, may run at the same
// time. FlushEnd and CompactionEnd are called after the new version is
// installed; FlushEnd runs with no lock of the DB's held, CompactionEnd
// holding the lock that lets one compaction run at a time. WriteStallBegin,
// WriteStallEnd and BackgroundError run holding the DB's main lock, which
// every write and flush needs. The work waits for each hook to return, so
// a hook must be quick, and it must not call the DB: a hook that called
// Compact, or waited on Close, would never return.
type EventListener struct {
	// FlushEnd is called after each flush that wrote a table.
	FlushEnd func(FlushInfo)
	// CompactionEnd is called after each compaction, trivial move and
	// delete-only compaction.
	CompactionEnd func(CompactionInfo)

	// WriteStallBegin is called when writes stop to wait for a flush or a
	// compaction (see WriteStallBeginInfo); WriteStallEnd when they go on,
	// or fail. The slowdown below Options.L0StopWritesThreshold is no
	// stall.
	WriteStallBegin func(WriteStallBeginInfo)
	WriteStallEnd   func(WriteStallEndInfo)
	// BackgroundError is called with the error that stops the DB taking
	// writes (a WAL write, flush, compaction or MANIFEST failure): the
	// first one, which every later write returns. Reads go on; close and
	// reopen to recover.
	BackgroundError func(error)
	// TableCreated is called when a table file has been written whole and
	// synced, before the version that holds it is installed.
	TableCreated func(TableCreateInfo)
	// TableDeleted is called when a table file the DB wrote or found is
	// removed, or its removal fails (Err set).
	TableDeleted func(TableDeleteInfo)
	// WALCreated is called when a new WAL file is created: at Open, each
	// time the memtable is replaced (full, or by Flush), and by Repair.
	WALCreated func(WALCreateInfo)
	// WALDeleted is called when a WAL whose writes are all in tables is
	// removed, or its removal fails (Err set).
	WALDeleted func(WALDeleteInfo)
}

// WriteStallBeginInfo says why writes stopped.
type WriteStallBeginInfo struct {
	// Reason is "memtables" (Options.MaxImmutableMemTables full memtables
	// wait for a flush) or "L0" (L0 holds Options.L0StopWritesThreshold
	// tables and waits for a compaction), followed by the counts.
	Reason string
}

// WriteStallEndInfo describes a stall that ended.
type WriteStallEndInfo struct {
	Duration time.Duration
}

// The reasons a table is created or deleted, in TableCreateInfo and
// TableDeleteInfo.
const (
	// TableFlush: a flush wrote it from a memtable.
	TableFlush = "flush"
	// TableCompaction: a compaction wrote it.
	TableCompaction = "compaction"
	// TableRecovery: Open wrote it from the WALs it replayed.
	TableRecovery = "recovery"
	// TableRepair: Repair wrote it.
	TableRepair = "repair"
	// TableIngest: Ingest wrote it, a copy of a table given to it.
	TableIngest = "ingest"
	// TableObsolete: a deleted table no version holds any more (a
	// compaction replaced it, Open found it in none, or Repair rewrote
	// it).
	TableObsolete = "obsolete"
	// TableFailed: a deleted table whose flush, compaction, Repair or
	// Ingest failed before the table was installed.
	TableFailed = "failed"
)

// TableCreateInfo describes a table written.
type TableCreateInfo struct {
	Reason string // TableFlush, TableCompaction, TableRecovery, TableRepair or TableIngest
	Table  EventTable
	Path   string
}

// TableDeleteInfo describes a table file removed.
type TableDeleteInfo struct {
	Reason  string // TableObsolete or TableFailed
	FileNum uint64
	Path    string
	Err     error // the removal's error; nil: the file is gone
}

// WALCreateInfo describes a WAL file created.
type WALCreateInfo struct {
	FileNum uint64
	Path    string
}

// WALDeleteInfo describes a WAL file removed.
type WALDeleteInfo struct {
	FileNum uint64
	Path    string
	Err     error // the removal's error; nil: the file is gone
}

// EventTable names a table in an event: its level, file number and size.
type EventTable struct {
	Level   int
	FileNum uint64
	Size    uint64
}

// FlushInfo describes a flush: a memtable written as one L0 table.
type FlushInfo struct {
	Output   EventTable
	Duration time.Duration
}

// The kinds of compaction a CompactionInfo describes.
const (
	// CompactionRewrite merged its inputs into new tables.
	CompactionRewrite = "compaction"
	// CompactionMove moved one table down a level without rewriting it.
	CompactionMove = "trivial move"
	// CompactionDeleteOnly dropped tables that newer range tombstones
	// delete wholly, reading none of them.
	CompactionDeleteOnly = "delete-only"
)

// CompactionInfo describes a finished compaction.
type CompactionInfo struct {
	Kind string // CompactionRewrite, CompactionMove or CompactionDeleteOnly
	// Reason says why it ran: the picker's reason ("L0 has 5 files
	// (threshold 4)"), "manual compaction", or, for a delete-only
	// compaction, "range tombstones delete the tables wholly".
	Reason string
	// Inputs are the tables it replaced, by level and then as picked.
	Inputs []EventTable
	// Outputs are the tables it installed: the new tables of a rewrite,
	// the moved table at its new level, none for a delete-only compaction.
	Outputs []EventTable
	// BytesIn is the size of the inputs; BytesOut the bytes written, 0 for
	// a move or a delete-only compaction.
	BytesIn, BytesOut int64
	Duration          time.Duration
}

func eventTable(level int, m *manifest.FileMeta) EventTable {
	return EventTable{Level: level, FileNum: m.FileNum, Size: m.Size}
}

// eventInputs lists files as the inputs of an event.
func eventInputs(files []levelFile) []EventTable {
	ts := make([]EventTable, len(files))
	for i, f := range files {
		ts[i] = eventTable(f.level, f.meta)
	}
	return ts
}

// flushEnd calls the listener's FlushEnd, if any.
func (db *DB) flushEnd(info FlushInfo) {
	if l := db.opts.EventListener; l != nil && l.FlushEnd != nil {
		l.FlushEnd(info)
	}
}

// compactionEnd calls the listener's CompactionEnd, if any.
func (db *DB) compactionEnd(info CompactionInfo) {
	if l := db.opts.EventListener; l != nil && l.CompactionEnd != nil {
		l.CompactionEnd(info)
	}
}

// noListener is the listener of a DB without one.
var noListener EventListener

// listener returns the EventListener, an empty one if none is set.
func (db *DB) listener() *EventListener {
	if l := db.opts.EventListener; l != nil {
		return l
	}
	return &noListener
}

// writeStallBegin calls WriteStallBegin, if set, with db.mu held.
func (db *DB) writeStallBegin(reason string) {
	if f := db.listener().WriteStallBegin; f != nil {
		f(WriteStallBeginInfo{Reason: reason})
	}
}

// writeStallEnd calls WriteStallEnd, if set, with db.mu held.
func (db *DB) writeStallEnd(d time.Duration) {
	if f := db.listener().WriteStallEnd; f != nil {
		f(WriteStallEndInfo{Duration: d})
	}
}

// backgroundError calls BackgroundError, if set, with db.mu held.
func (db *DB) backgroundError(err error) {
	if f := db.listener().BackgroundError; f != nil {
		f(err)
	}
}

// tableCreated calls TableCreated, if set.
func (db *DB) tableCreated(reason string, level int, meta *manifest.FileMeta) {
	if f := db.listener().TableCreated; f != nil {
		f(TableCreateInfo{Reason: reason, Table: eventTable(level, meta), Path: db.fileName(fileTypeTable, meta.FileNum)})
	}
}

// walCreated calls WALCreated, if set.
func (db *DB) walCreated(num uint64) {
	if f := db.listener().WALCreated; f != nil {
		f(WALCreateInfo{FileNum: num, Path: db.fileName(fileTypeLog, num)})
	}
}

// removeFile removes the store's file of type t and number num, and tells
// the listener if it is a table (with reason) or a WAL.
func (db *DB) removeFile(t fileType, num uint64, reason string) error {
	path := db.fileName(t, num)
	err := db.fs.Remove(path)
	l := db.listener()
	switch {
	case t == fileTypeTable && l.TableDeleted != nil:
		l.TableDeleted(TableDeleteInfo{Reason: reason, FileNum: num, Path: path, Err: err})
	case t == fileTypeLog && l.WALDeleted != nil:
		l.WALDeleted(WALDeleteInfo{FileNum: num, Path: path, Err: err})
	}
	return err
}
