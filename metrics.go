package shale

import (
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/compaction"
	"github.com/shale-db/shale/internal/manual"
	"github.com/shale-db/shale/internal/wal"
)

// Metrics is a snapshot of the store's counters and shape.
type Metrics struct {
	DiskReads            int64 // blocks read from SSTable files, not served by the block cache
	FilterChecks         int64 // point lookups that consulted a file's filter
	FilterSkips          int64 // ... and were told "definitely not": the file was skipped
	FilterFalsePositives int64 // ... told "maybe", and the file did not hold the key
	PrefixFilterChecks   int64 // files a prefix iterator asked its filter about (IterOptions.Prefix)
	PrefixFilterSkips    int64 // ... and was told "definitely not": no block of the file was read
	// RangeFilterChecks counts the tables whose range filter a bounded
	// iterator consulted (Options.RangeFilter), RangeFilterSkips those told
	// "definitely not", which the iterator skipped, and
	// RangeFilterFalsePositives those told "maybe" whose table then yielded
	// no entry in the bounds (counted when the iterator is closed).
	RangeFilterChecks         int64
	RangeFilterSkips          int64
	RangeFilterFalsePositives int64
	Levels                    []LevelMetrics // index = level
	// BaseLevel is the level L0 compacts into: L6 for a small store, moving
	// up as the data grows. The levels between L0 and it are empty.
	BaseLevel int

	// FilterMemory is the bytes of filters the live tables hold in
	// memory, and IndexMemory of their index blocks. They are outside the
	// Go heap, so the collector's headroom does not double them, in one
	// buffer per table that takes whole pages (up to a page more than
	// these figures per table); range filters, counted in FilterMemory,
	// are on the heap.
	FilterMemory int64
	IndexMemory  int64

	BlockCacheHits  int64 // data blocks served by the block cache
	BlockCacheMiss  int64 // data blocks the block cache did not hold, read from the file
	BlockCacheBytes int64 // uncompressed blocks the block cache holds now
	RowCacheHits    int64 // table lookups answered by the row cache
	RowCacheMisses  int64 // table lookups that consulted the row cache and read blocks
	RowCacheBytes   int64 // charged to the row cache now: keys, values and bookkeeping

	// MemTableBytes is what the entries of the mutable memtable occupy:
	// keys, values and skiplist nodes, outside the Go heap, so the
	// garbage collector's headroom does not double them (the current
	// slabs' unused tails and page rounding come on top, at most a few
	// MiB), and its range tombstones, which are on the heap.
	MemTableBytes          int64
	ImmutableTables        int   // memtables waiting for a flush
	ImmutableMemTableBytes int64 // ... and their bytes, outside the Go heap too
	// MemTableFilterBytes is what the key filters of the mutable and
	// immutable memtables take, on the Go heap: 10 bits for every 64 bytes
	// of MemTableSize each (80 KiB for 4 MiB), so that a Get skips the
	// search of a memtable that never held its key.
	MemTableFilterBytes int64
	// MemTableSpareBytes is the slabs of freed memtables the store keeps,
	// cleared, for new memtables to write into instead of faulting in new
	// pages: at most MemTableSize, outside the Go heap. Like the Go
	// runtime's free heap it is memory kept for reuse, not for data, so
	// MemoryTotal leaves it out (and String does not print it: how much is
	// kept at a given moment depends on when the flush goroutine frees a
	// memtable, after Flush has returned).
	MemTableSpareBytes int64
	// MemoryTotal is the memory the store holds, in bytes: FilterMemory,
	// IndexMemory (pinned for every live table), MemTableBytes,
	// ImmutableMemTableBytes, MemTableFilterBytes, BlockCacheBytes and
	// RowCacheBytes. The Go runtime's garbage and free heap, and
	// MemTableSpareBytes, come on top of it.
	MemoryTotal int64

	// OpenFiles is the file descriptors the DB holds: TableFilesOpen, and
	// its LOCK, WAL and MANIFEST. (A flush or compaction also holds the
	// tables it is writing.)
	OpenFiles int
	// TableFilesOpen is the table files open for reading (a file being
	// opened counts from the start of its open(2)), at most
	// Options.MaxOpenFiles.
	TableFilesOpen int
	// TableCacheHits counts table reads that found the table's file open;
	// TableCacheReopens counts those that opened it again (the table
	// cache's misses), an open(2) each.
	TableCacheHits    int64
	TableCacheReopens int64
	WALBytes          int64 // bytes appended to WALs by commits since Open: batches, their framing and COMMITs
	// WALMappedBytes is the part of WALBytes stored through a shared
	// mapping rather than written with write(2) (see
	// Options.DisableWALMapping; a WAL whose window the kernel refused, see
	// MappingRefusals, is written from there on). A process's write count
	// in /proc/self/io (wchar) does not see it: add it to compare bytes
	// written.
	WALMappedBytes int64
	WALWrites      int64 // commit groups written to WALs since Open: a write call each, unless mapped
	UserBytes      int64 // key and value bytes written since Open

	Flushes      int64 // memtables written as L0 tables since Open
	FlushBytes   int64 // bytes of L0 tables written by flushes
	Compactions  int64 // compactions since Open that rewrote tables (moves and delete-only ones are counted apart)
	TrivialMoves int64 // tables moved down a level without a rewrite
	// DeleteOnlyCompactions counts the version edits that dropped, without
	// reading them, tables a newer range tombstone deletes wholly.
	DeleteOnlyCompactions int64
	// ReadCompactions counts the compactions and moves picked because a
	// table's Gets read its blocks for nothing too often (see
	// Options.DisableReadCompactions); Compactions or TrivialMoves count
	// them too.
	ReadCompactions   int64
	CompactionBytesIn int64 // bytes of the tables compactions read
	// Ingests counts the Ingest calls since Open that added tables, and
	// IngestedBytes the bytes of the tables they wrote into the store.
	Ingests            int64
	IngestedBytes      int64
	CompactionBytesOut int64 // bytes of the tables compactions wrote
	// CompactionDue reports whether a compaction is wanted now: a level
	// scoring >= 1, a table above the bottom level that is at least half
	// point deletions or that has used up its read allowance (then every
	// score may be below 1), or tables a range tombstone deletes wholly.
	// With ImmutableTables at 0 and this false, the tree is settled.
	CompactionDue bool
	// WriteAmp is (WAL + flush + compaction bytes written) / user bytes.
	WriteAmp float64
	// StallTime is the time writes waited at a hard stop: for a flush, with
	// Options.MaxImmutableMemTables memtables waiting, or for a compaction,
	// with L0 at Options.L0StopWritesThreshold files.
	StallTime time.Duration
	// Slowdowns counts the pauses writes took with L0 at or above
	// Options.L0SlowdownWritesThreshold files, and SlowdownTime is their
	// total, as slept. Writes there are charged a pause per byte that grows
	// with the number of L0 files, paid in pauses of at least 10 ms.
	Slowdowns    int64
	SlowdownTime time.Duration
	LastSeqNum   uint64 // the sequence number of the newest write
	Snapshots    int    // snapshots open
	BackgroundOK bool   // false once a flush, compaction or WAL write failed
	// MappingRefusals counts the memory mappings the kernel refused this
	// process: for off-heap buffers (filters, indexes, memtable slabs),
	// each such buffer came from the Go heap instead, or stayed mapped
	// after its last use; for a WAL's window, the rest of that WAL was
	// written with write(2) (pwrite) instead, and the next WAL tries the
	// mapping again. It is not zero only at the kernel's limit of mappings
	// (vm.max_map_count; see README "Known limits"), and it counts for
	// every store in the process.
	MappingRefusals int64
}

// LevelMetrics describes one level of the tree.
type LevelMetrics struct {
	Files int
	Bytes int64
	// Target is the level's target size, computed from the size of the
	// largest level (see Options.LBaseMaxBytes); 0 for L0, which is sized
	// by its file count, and for the empty levels above the base level.
	Target int64
	// Score is how urgently the level wants compacting; >= 1 wants a
	// compaction, and the highest score goes first. It is the level's size
	// relative to its target (L0: its file count relative to
	// Options.L0CompactionThreshold), divided by the same ratio of the
	// level it compacts into when that one is over its target, so that a
	// level below is drained before more is merged into it. The bottom
	// level's score is 0. A compaction can be due with every score below
	// 1: see Metrics.CompactionDue.
	Score float64
	// BytesWritten is the bytes of tables written into the level since
	// Open: by flushes for L0, by compactions below. Tables moved down
	// without a rewrite are not counted.
	BytesWritten int64
}

// Metrics returns the current metrics. After Close it returns the zero
// Metrics.
func (db *DB) Metrics() Metrics {
	if err := db.enter(); err != nil {
		return Metrics{}
	}
	defer db.leave()
	var m Metrics
	m.DiskReads = db.tableStats.BlockReads.Load()
	m.FilterChecks, m.FilterSkips, m.FilterFalsePositives = db.filterCounts.total()
	m.PrefixFilterChecks = db.tableStats.PrefixChecks.Load()
	m.PrefixFilterSkips = db.tableStats.PrefixSkips.Load()
	m.RangeFilterChecks = db.tableStats.RangeFilterChecks.Load()
	m.RangeFilterSkips = db.tableStats.RangeFilterSkips.Load()
	m.RangeFilterFalsePositives = db.tableStats.RangeFilterFalsePositives.Load()
	m.BlockCacheHits, m.BlockCacheMiss = db.cache.Stats()
	m.BlockCacheBytes = int64(db.cache.Size())
	m.RowCacheHits, m.RowCacheMisses = db.rowCache.Stats()
	m.RowCacheBytes = db.rowCache.Size()

	// The counts of flushes and compactions are read before the tree:
	// each is counted after its version is installed, so the tree read
	// below holds every one they count (a test that waits for a count
	// and then looks at the tree relies on it).
	m.WALBytes = db.stats.walBytes.Load()
	m.WALMappedBytes = db.stats.walMappedBytes.Load()
	m.WALWrites = db.stats.walWrites.Load()
	m.UserBytes = db.stats.userBytes.Load()
	m.Flushes = db.stats.flushes.Load()
	m.FlushBytes = db.stats.flushBytes.Load()
	m.Compactions = db.stats.compactions.Load()
	m.TrivialMoves = db.stats.trivialMoves.Load()
	m.DeleteOnlyCompactions = db.stats.deleteOnlyCompactions.Load()
	m.ReadCompactions = db.stats.readCompactions.Load()
	m.Ingests = db.stats.ingests.Load()
	m.IngestedBytes = db.stats.ingestedBytes.Load()
	m.CompactionBytesIn = db.stats.compactionBytesIn.Load()
	m.CompactionBytesOut = db.stats.compactionBytesOut.Load()

	rs, _ := db.loadReadState(readLatest)
	defer rs.unref()
	v := rs.v
	m.MemTableBytes = int64(rs.mem.Size())
	m.MemTableFilterBytes = int64(rs.mem.FilterBytes())
	m.ImmutableTables = len(rs.imm)
	for _, mem := range rs.imm {
		m.ImmutableMemTableBytes += int64(mem.Size())
		m.MemTableFilterBytes += int64(mem.FilterBytes())
	}
	m.TableFilesOpen = db.tableCache.openFiles()
	m.OpenFiles = m.TableFilesOpen + nonTableFiles
	m.TableCacheHits = db.tableCache.hits.Load()
	m.TableCacheReopens = db.tableCache.reopens.Load()
	copts := db.compactionOptions(v)
	scores, baseLevel := compaction.Scores(v.Version, copts)
	m.BaseLevel = baseLevel
	m.CompactionDue = compaction.Pick(v.Version, copts) != nil || len(deleteOnlyFiles(v, db.snapshotSeqs())) > 0
	for level, files := range v.Levels {
		lm := LevelMetrics{Files: len(files), Bytes: int64(v.LevelSize(level)), BytesWritten: db.stats.levelBytesWritten[level].Load()}
		if level < len(scores) {
			lm.Target = int64(min(scores[level].Target, math.MaxInt64))
			lm.Score = scores[level].Score
		}
		m.Levels = append(m.Levels, lm)
		for _, f := range files {
			r := v.tables[f.FileNum].reader
			m.FilterMemory += int64(r.FilterSize())
			m.IndexMemory += int64(r.IndexSize())
		}
	}
	m.MemTableSpareBytes = int64(db.memSlabs.Bytes())
	m.MemoryTotal = m.FilterMemory + m.IndexMemory + m.MemTableBytes + m.ImmutableMemTableBytes +
		m.MemTableFilterBytes + m.BlockCacheBytes + m.RowCacheBytes
	if m.UserBytes > 0 {
		m.WriteAmp = float64(m.WALBytes+m.FlushBytes+m.CompactionBytesOut) / float64(m.UserBytes)
	}
	m.StallTime = time.Duration(db.stats.stallNanos.Load())
	m.Slowdowns = db.stats.slowdowns.Load()
	m.SlowdownTime = time.Duration(db.stats.slowdownNanos.Load())
	m.LastSeqNum = db.visibleSeq.Load()
	db.mu.Lock()
	m.Snapshots = len(db.snapshots)
	m.BackgroundOK = db.bgErr == nil
	db.mu.Unlock()
	heapNews, lostFrees := manual.Fallbacks()
	m.MappingRefusals = heapNews + lostFrees + wal.MappingRefusals()
	return m
}

// String renders the metrics as a table a person reads: the tree level by
// level, then reads, filters, cache and writes.
func (m Metrics) String() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "level\tfiles\tsize\ttarget\tscore\twritten\t")
	var files int
	var bytes, written int64
	for i, l := range m.Levels {
		target := "-"
		if l.Target > 0 {
			target = humanBytes(l.Target)
		}
		name := fmt.Sprintf("L%d", i)
		if i == m.BaseLevel {
			name = "base " + name
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.2f\t%s\t\n", name, l.Files, humanBytes(l.Bytes), target, l.Score, humanBytes(l.BytesWritten))
		files += l.Files
		bytes += l.Bytes
		written += l.BytesWritten
	}
	fmt.Fprintf(tw, "total\t%d\t%s\t\t\t%s\t\n", files, humanBytes(bytes), humanBytes(written))
	tw.Flush()
	fmt.Fprintf(&b, "memtable: %s (+%d waiting to flush); WAL written: %s\n",
		humanBytes(m.MemTableBytes), m.ImmutableTables, humanBytes(m.WALBytes))
	fmt.Fprintf(&b, "memory: %s: filters %s, indexes %s, memtables %s + %s waiting (their key filters %s), block cache %s, row cache %s; besides, %s of freed memtable slabs kept for the next\n",
		humanBytes(m.MemoryTotal), humanBytes(m.FilterMemory), humanBytes(m.IndexMemory),
		humanBytes(m.MemTableBytes), humanBytes(m.ImmutableMemTableBytes), humanBytes(m.MemTableFilterBytes),
		humanBytes(m.BlockCacheBytes), humanBytes(m.RowCacheBytes), humanBytes(m.MemTableSpareBytes))
	if m.MappingRefusals > 0 {
		fmt.Fprintf(&b, "memory mappings refused: %d (the process is at vm.max_map_count: off-heap buffers taken from the Go heap or left mapped, WALs written rather than mapped)\n", m.MappingRefusals)
	}
	fmt.Fprintf(&b, "open files: %d (%s); table cache: %d hits, %d reopens\n",
		m.OpenFiles, plural(m.TableFilesOpen, "table"), m.TableCacheHits, m.TableCacheReopens)
	fmt.Fprintf(&b, "disk reads: %d blocks; block cache: %d hits, %d misses, %s; row cache: %d hits, %d misses, %s\n",
		m.DiskReads, m.BlockCacheHits, m.BlockCacheMiss, humanBytes(m.BlockCacheBytes),
		m.RowCacheHits, m.RowCacheMisses, humanBytes(m.RowCacheBytes))
	// Checks of a file that did not hold the key end in a skip or a false
	// positive; the rate is the share of those that got through.
	fpr := 0.0
	if absent := m.FilterSkips + m.FilterFalsePositives; absent > 0 {
		fpr = float64(m.FilterFalsePositives) / float64(absent) * 100
	}
	fmt.Fprintf(&b, "filters: %d checks, %d skips, %d false positives (%.2f%% of absent); %s in memory (index: %s)\n",
		m.FilterChecks, m.FilterSkips, m.FilterFalsePositives, fpr, humanBytes(m.FilterMemory), humanBytes(m.IndexMemory))
	if m.PrefixFilterChecks > 0 {
		fmt.Fprintf(&b, "prefix filters: %d checks, %d skips\n", m.PrefixFilterChecks, m.PrefixFilterSkips)
	}
	if m.RangeFilterChecks > 0 {
		fmt.Fprintf(&b, "range filters: %d checks, %d skips, %d false positives\n",
			m.RangeFilterChecks, m.RangeFilterSkips, m.RangeFilterFalsePositives)
	}
	others := ""
	if m.DeleteOnlyCompactions > 0 {
		others = fmt.Sprintf(", +%d delete-only", m.DeleteOnlyCompactions)
	}
	if m.ReadCompactions > 0 {
		others += fmt.Sprintf("; %d for reads", m.ReadCompactions)
	}
	fmt.Fprintf(&b, "flushes: %d (%s); compactions: %d (+%d moves%s), %s read, %s written; write amp: %.2f\n",
		m.Flushes, humanBytes(m.FlushBytes), m.Compactions, m.TrivialMoves, others,
		humanBytes(m.CompactionBytesIn), humanBytes(m.CompactionBytesOut), m.WriteAmp)
	if m.Ingests > 0 {
		fmt.Fprintf(&b, "ingests: %d (%s)\n", m.Ingests, humanBytes(m.IngestedBytes))
	}
	fmt.Fprintf(&b, "stalls: %v; slowdowns: %d (%v); last seqnum: %d; open snapshots: %d\n",
		m.StallTime.Round(time.Millisecond), m.Slowdowns, m.SlowdownTime.Round(time.Millisecond), m.LastSeqNum, m.Snapshots)
	return b.String()
}

// nonTableFiles is the files an open DB holds besides its tables: the
// LOCK, the WAL and the MANIFEST.
const nonTableFiles = 3

// humanBytes renders a byte count for people (base.FormatSize).
func humanBytes(n int64) string { return base.FormatSize(uint64(max(n, 0))) }

// Shape names the number of tables in each non-empty level: "tables L0: 2
// tables, L6: 1 table", or "no tables".
func (m Metrics) Shape() string {
	var levels []string
	for i, l := range m.Levels {
		if l.Files > 0 {
			levels = append(levels, fmt.Sprintf("L%d: %s", i, plural(l.Files, "table")))
		}
	}
	if len(levels) == 0 {
		return "no tables"
	}
	return "tables " + strings.Join(levels, ", ")
}
