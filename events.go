package shale

import (
	"time"

	"github.com/shale-db/shale/internal/manifest"
)

// EventListener receives the store's background events, as Pebble's
// EventListener does; Options.EventListener installs one. Each hook is
// optional (nil: not called).
//
// The hooks are called after the new version is installed, from the
// goroutine that did the work: the flush or compaction goroutine, or the
// caller of Compact. FlushEnd runs with no lock of the DB's held;
// CompactionEnd runs holding the lock that lets one compaction run at a
// time. The next flush or compaction waits for the hook to return, so a
// hook must be quick, and it must not call the DB: a hook that called
// Compact, or waited on Close, would never return.
type EventListener struct {
	// FlushEnd is called after each flush that wrote a table.
	FlushEnd func(FlushInfo)
	// CompactionEnd is called after each compaction, trivial move and
	// delete-only compaction.
	CompactionEnd func(CompactionInfo)
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
