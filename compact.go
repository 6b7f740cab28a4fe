package shale

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/compaction"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/memtable"
	"github.com/shale-db/shale/internal/merging"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/internal/sstable"
)

// scheduleFlush wakes the flush goroutine.
func (db *DB) scheduleFlush() {
	select {
	case db.flushCh <- struct{}{}:
	default:
	}
}

// maybeScheduleCompaction wakes the compaction goroutine, which decides
// whether there is anything to do.
func (db *DB) maybeScheduleCompaction() {
	if db.opts.DisableAutomaticCompactions || db.opts.ReadOnly {
		return
	}
	select {
	case db.compactCh <- struct{}{}:
	default:
	}
}

// flushLoop writes immutable memtables to L0, oldest first.
func (db *DB) flushLoop() {
	defer db.bgWG.Done()
	for {
		select {
		case <-db.closing:
			return
		case <-db.flushCh:
		}
		for !isClosing(db.closing) {
			db.mu.Lock()
			if len(db.imm) == 0 || db.bgErr != nil {
				db.mu.Unlock()
				break
			}
			imm := db.imm[0]
			next := db.mem.logNum
			if len(db.imm) > 1 {
				next = db.imm[1].logNum
			}
			db.mu.Unlock()
			if err := db.flushMemTable(imm, next); err != nil {
				db.setBackgroundError(fmt.Errorf("shale: flush: %w", err))
				break
			}
		}
	}
}

// flushMemTable writes imm as an L0 table, records it in the MANIFEST along
// with the new log number, then drops imm and its WAL.
func (db *DB) flushMemTable(imm *memTable, nextLogNum uint64) error {
	start := time.Now()
	edit := &manifest.VersionEdit{LogNum: nextLogNum}
	var added []*table
	if !imm.Empty() {
		t, err := db.writeL0(imm.MemTable, TableFlush)
		if err != nil {
			return err
		}
		added = append(added, t)
		edit.Added = append(edit.Added, manifest.NewFile{Level: 0, Meta: t.meta})
		db.stats.flushBytes.Add(int64(t.meta.Size))
		db.stats.levelBytesWritten[0].Add(int64(t.meta.Size))
	}
	if err := db.logAndApply(edit, added); err != nil {
		closeTables(added) // their files go at the next Open
		return err
	}
	if err := db.removeFile(fileTypeLog, imm.logNum, ""); err != nil {
		db.logf("removing flushed WAL: %v", err)
	}
	// Count the flush and tell the listener before waking its waiters:
	// Metrics read and events seen after Flush returns must include it.
	db.stats.flushes.Add(1)
	if len(added) > 0 {
		db.logf("flushed memtable to L0 %s in %v", added[0].meta, time.Since(start))
		db.flushEnd(FlushInfo{Output: eventTable(0, added[0].meta), Duration: time.Since(start)})
	}
	db.mu.Lock()
	// A fresh slice, not db.imm[1:]: that one keeps the array holding the
	// flushed memtable (even when empty, a slice points into its array),
	// and with it the whole memtable, alive until the next rotation. The
	// old array is left as it was for the reads still using it.
	db.imm = append([]*memTable(nil), db.imm[1:]...)
	db.publishReadState()
	db.cond.Broadcast()
	db.mu.Unlock()
	db.maybeScheduleCompaction()
	imm.unrefFlushed() // the DB's: reads still using imm hold their own
	return nil
}

// writeL0 writes a memtable as one table, for reason (TableFlush or
// TableRecovery). Versions no snapshot can see are left out; tombstones,
// point and range, stay (deeper levels may hold what they delete).
func (db *DB) writeL0(mem *memtable.MemTable, reason string) (*table, error) {
	snaps := db.snapshotSeqs()
	spans := mem.RangeDels()
	it := compaction.NewIter(mem.NewIter(), spans, snaps, nil)
	tables, err := db.writeTables(it, compaction.CompactTombstones(spans, snaps, nil), 0, 0, nil, nil, int64(mem.Size()), reason)
	if err != nil {
		return nil, err
	}
	if len(tables) != 1 {
		closeTables(tables)
		return nil, fmt.Errorf("shale: flush of a non-empty memtable wrote %d tables", len(tables))
	}
	return tables[0], nil
}

// filterFor returns the filter for a new table at level, as the filter
// policy decides from the current shape of the tree.
func (db *DB) filterFor(level int, inputs []levelFile, size int64) filter.Policy {
	db.mu.Lock()
	v := db.current.Version
	db.mu.Unlock()
	f := db.opts.FilterPolicy.FilterFor(newTable(v, level, inputs, size))
	if f == nil {
		return nil
	}
	return f.policy()
}

// writerOptions are the options of a new table at level with filter f:
// the block size, compression, prefix extractor and range filter the
// options give.
func (o *Options) writerOptions(level int, f filter.Policy) sstable.WriterOptions {
	wopts := sstable.WriterOptions{
		BlockSize:    o.BlockSize,
		Compression:  o.compressionFor(level),
		FilterPolicy: f,
		RangeFilter:  o.RangeFilter,
		BytesPerSync: outputSyncBytes,
	}
	if p := o.Prefix; p != nil {
		wopts.PrefixName, wopts.PrefixLength = p.Name, p.Length
	}
	return wopts
}

// outputSyncBytes is how often a table being written (by a flush or a
// compaction) is pushed towards the device: each time that many more bytes
// are written, its writeback is started without waiting (or, on a file
// system that cannot, the file is synced; see sstable.WriterOptions), so
// that the device takes the table as it comes rather than all at once when
// it is complete, which would stall the WAL's syncs behind it. The final
// sync, before the MANIFEST names the table, stays. (The WAL starts its own
// writeback, every 1 MiB too but from a goroutine of its own, since its
// writer is the commit leader: see wal.Writer's startWriteback.)
const outputSyncBytes = 1 << 20

func (db *DB) newFileNum() uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	n := db.nextFileNum
	db.nextFileNum++
	return n
}

// writeTables writes what it yields, and the range tombstones tombs
// (fragmented), into tables for level, starting a new table once one
// reaches targetSize (0: never), always between two user keys so that the
// tables of a level never share a user key. below are the files of the next
// level down (nil: none): a table that has reached half of targetSize also
// ends where one of them starts, so that the tables line up with those they
// will later be compacted into. A table that straddles such a boundary
// overlaps two files below, and its compaction rewrites both whole, the
// parts outside its range included; a table that ends at the boundary
// leaves the second out. Each table takes the part of
// tombs between its first key and the next table's (the first from the
// start of the key space, the last to its end): tombstones are truncated at
// the cuts, and a table's bounds cover its tombstones, so the tables stay
// disjoint. Tombstones with no entry to go with make a table of their own.
// The new tables are open and not yet in any version. On error, the files
// written are removed.
//
// inputs and size, the files being replaced and the bytes expected, tell
// the filter policy the shape of the tree after the write; reason is what
// the listener's TableCreated is told.
func (db *DB) writeTables(it *compaction.Iter, tombs rangedel.Spans, level int, targetSize int64, below []*manifest.FileMeta, inputs []levelFile, size int64, reason string) (out []*table, err error) {
	var (
		w        *sstable.Writer
		fileNum  uint64
		prevUser []byte
		// lower is where the current table's share of the key space
		// starts: nil for the first table, then the first key of each.
		lower []byte
	)
	// closing is the table being closed on a goroutine of its own while
	// the next one is written (see finish); wait collects it into out.
	var closing *closingTable
	wait := func() error {
		c := closing
		if c == nil {
			return nil
		}
		closing = nil
		<-c.done
		if c.err != nil {
			return c.err
		}
		out = append(out, c.t)
		return nil
	}
	defer func() {
		if err == nil {
			return
		}
		wait()
		if w != nil {
			w.Abort()
			db.fs.Remove(db.fileName(fileTypeTable, fileNum))
		}
		for _, t := range out {
			t.reader.Close()
			db.removeFile(fileTypeTable, t.meta.FileNum, TableFailed)
		}
		out = nil
	}()
	start := func() error {
		fileNum = db.newFileNum()
		f, err := db.fs.Create(db.fileName(fileTypeTable, fileNum))
		if err != nil {
			return err
		}
		w = sstable.NewWriter(f, db.opts.writerOptions(level, db.filterFor(level, inputs, size)))
		return nil
	}
	// finish hands the current table, with the tombstones below upper
	// (nil: all that are left), to a goroutine that closes it and opens it
	// for reading (closeTable), and returns: the table's last blocks and
	// its sync, 7 ms a table in a fill on this project's test machine,
	// overlap the writing of the next table rather than pause the merge.
	// One table closes at a time: finish first waits for the one before.
	// The clipped tombstones are cloned, since upper is the iterator's key,
	// which changes while the table closes.
	finish := func(upper []byte) error {
		if err := wait(); err != nil {
			return err
		}
		w.SetRangeDels(tombs.Clip(lower, upper).Clone())
		c := &closingTable{done: make(chan struct{})}
		tw, num := w, fileNum
		w, closing = nil, c
		go func() {
			defer close(c.done)
			c.t, c.err = db.closeTable(tw, num, level, reason)
		}()
		return nil
	}
	// next is the first file of below that starts after the keys written.
	next := 0
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		newUser := !bytes.Equal(k.UserKey, prevUser)
		atBoundary := false
		for newUser && next < len(below) && base.CompareUserKeys(below[next].Smallest.UserKey, k.UserKey) <= 0 {
			atBoundary = true
			next++
		}
		if w != nil && targetSize > 0 && newUser && cutBefore(int64(w.EstimatedSize()), targetSize, atBoundary) {
			if err := finish(k.UserKey); err != nil {
				return out, err
			}
			lower = bytes.Clone(k.UserKey)
		}
		if w == nil {
			if err := start(); err != nil {
				return out, err
			}
		}
		if err := w.Add(k, it.Value()); err != nil {
			return out, err
		}
		prevUser = append(prevUser[:0], k.UserKey...)
	}
	if err := it.Error(); err != nil {
		return out, err
	}
	if w == nil && len(tombs.Clip(lower, nil)) > 0 {
		if err := start(); err != nil {
			return out, err
		}
	}
	if w != nil {
		if err := finish(nil); err != nil {
			return out, err
		}
	}
	if err := wait(); err != nil {
		return out, err
	}
	// The tables' data was synced as each was closed; their directory
	// entries are synced here, once for all of them and whatever NoSync
	// says: the MANIFEST edit that names them follows.
	if len(out) > 0 {
		if err := db.fs.SyncDir(db.dir); err != nil {
			return out, err
		}
	}
	return out, nil
}

// closingTable is a table being closed by closeTable on a goroutine of its
// own: t and err are set when done is closed.
type closingTable struct {
	done chan struct{}
	t    *table
	err  error
}

// closeTable closes table fileNum's writer w (writing its last blocks and
// syncing it), opens the table for reading and tells the listener that it
// was created for level, for reason. On error the file is removed.
func (db *DB) closeTable(w *sstable.Writer, fileNum uint64, level int, reason string) (*table, error) {
	name := db.fileName(fileTypeTable, fileNum)
	props, err := w.Close()
	if err != nil {
		db.fs.Remove(name)
		return nil, err
	}
	info, err := db.fs.Stat(name)
	if err != nil {
		db.fs.Remove(name)
		return nil, err
	}
	meta := &manifest.FileMeta{
		FileNum: fileNum, Size: uint64(info.Size()),
		Smallest: props.Smallest, Largest: props.Largest,
		SmallestSeq: props.SmallestSeq, LargestSeq: props.LargestSeq,
	}
	t, err := db.openTable(meta)
	if err != nil {
		db.fs.Remove(name)
		return nil, err
	}
	db.tableCreated(reason, level, meta)
	return t, nil
}

// cutBefore reports whether writeTables ends a table of size bytes before
// the next user key: at targetSize, or from half of it when the key is at
// the start of a file of the level below.
func cutBefore(size, targetSize int64, atBoundary bool) bool {
	return size >= targetSize || atBoundary && size >= targetSize/2
}

// closeTables closes new tables that no version took.
func closeTables(tables []*table) {
	for _, t := range tables {
		t.reader.Close()
	}
}

// scanBudget is the read-ahead memory a compaction's inputs share (and a
// Repair's): each of n tables read at once reads ahead at most
// scanBudget/n bytes (sstable.Reader.NewScanIter clamps it to 32-256
// KiB). Their buffers are on the Go heap, where the collector's headroom
// doubles them: a compaction of 12 L0 tables with 256 KiB each held 3 MiB.
const scanBudget = 1 << 20

// scanReadahead is the read-ahead of each of n tables read at once.
func scanReadahead(n int) int { return scanBudget / max(n, 1) }

// compactLoop runs background compactions while the picker finds work.
func (db *DB) compactLoop() {
	defer db.bgWG.Done()
	for {
		select {
		case <-db.closing:
			return
		case <-db.compactCh:
		}
		for !isClosing(db.closing) {
			ran, err := db.compactOnce()
			if err != nil {
				db.setBackgroundError(fmt.Errorf("shale: compaction: %w", err))
				break
			}
			if !ran {
				break
			}
		}
	}
}

// compactionOptions returns the picker's options for version v: the tree's
// shape from the DB's options, and v's tables' wasted reads unless read
// compactions are off.
func (db *DB) compactionOptions(v *version) compaction.Options {
	o := compaction.Options{
		L0CompactionThreshold: db.opts.L0CompactionThreshold,
		LBaseMaxBytes:         uint64(db.opts.LBaseMaxBytes),
	}
	if !db.opts.DisableReadCompactions {
		o.WastedReads = func(f *manifest.FileMeta) int64 { return v.tables[f.FileNum].wastedReads.Load() }
	}
	return o.WithDefaults()
}

// compactOnce runs the compaction the picker chooses, if any.
func (db *DB) compactOnce() (bool, error) {
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	db.mu.Lock()
	if db.bgErr != nil {
		db.mu.Unlock()
		return false, nil
	}
	v := db.current
	v.ref()
	c := compaction.Pick(v.Version, db.compactionOptions(v))
	db.mu.Unlock()
	defer v.unref()
	if files := deleteOnlyFiles(v, db.snapshotSeqs()); len(files) > 0 {
		return true, db.runDeleteOnly(files)
	}
	if c == nil {
		return false, nil
	}
	if c.ForReads {
		// A table moved down as it is keeps its reader, and with it its
		// count: it starts again, so that the move is not picked again.
		for _, f := range c.Inputs[0] {
			v.tables[f.FileNum].wastedReads.Store(0)
		}
	}
	job := compactionJob{outputLevel: c.OutputLevel, reason: c.Reason, allowMove: true}
	for i, files := range c.Inputs {
		level := c.Level
		if i == 1 {
			level = c.OutputLevel
		}
		for _, f := range files {
			job.inputs = append(job.inputs, levelFile{level, f})
		}
	}
	if err := db.runCompaction(v, job); err != nil {
		return true, err
	}
	if c.ForReads {
		db.stats.readCompactions.Add(1)
	}
	return true, nil
}

type levelFile struct {
	level int
	meta  *manifest.FileMeta
}

// compactionJob is a compaction as the DB runs it: input files from any
// levels, merged into new tables at outputLevel.
type compactionJob struct {
	inputs      []levelFile
	outputLevel int
	reason      string
	// allowMove lets a lone input file move down without a rewrite. A
	// manual compaction rewrites everything to drop what it can.
	allowMove bool
}

// runCompaction merges the job's inputs (from version v) into new tables at
// the output level and installs the result. A single input file with nothing
// to merge against moves down without being rewritten.
func (db *DB) runCompaction(v *version, job compactionJob) error {
	start := time.Now()
	edit := &manifest.VersionEdit{}
	var bytesIn int64
	for _, in := range job.inputs {
		edit.Deleted = append(edit.Deleted, manifest.DeletedFile{Level: in.level, FileNum: in.meta.FileNum})
		bytesIn += int64(in.meta.Size)
	}
	if job.allowMove && len(job.inputs) == 1 && job.inputs[0].level < job.outputLevel &&
		len(v.Overlapping(job.outputLevel, job.inputs[0].meta.Smallest.UserKey, job.inputs[0].meta.Largest.UserKey)) == 0 {
		in := job.inputs[0]
		edit.Added = append(edit.Added, manifest.NewFile{Level: job.outputLevel, Meta: in.meta})
		if err := db.logAndApply(edit, []*table{v.tables[in.meta.FileNum]}); err != nil {
			return err
		}
		db.stats.trivialMoves.Add(1)
		db.logf("moved %s from L%d to L%d (%s)", in.meta, in.level, job.outputLevel, job.reason)
		db.compactionEnd(CompactionInfo{Kind: CompactionMove, Reason: job.reason, Inputs: eventInputs(job.inputs),
			Outputs: []EventTable{eventTable(job.outputLevel, in.meta)}, BytesIn: bytesIn, Duration: time.Since(start)})
		return nil
	}

	// Each L0 input is a child of the merge (L0 tables overlap); the inputs
	// from a level below are disjoint, so one levelIter reads them in key
	// order as one child. The fewer the children, the fewer comparisons
	// the merge makes per entry: a flush's worth of L0 tables merged into
	// a few dozen base-level tables is a merge of a handful of children.
	var iters []base.InternalIterator
	var tombs []rangedel.Spans
	var l0 []*sstable.Reader
	var disjoint [manifest.NumLevels][]*manifest.FileMeta
	for _, in := range job.inputs {
		r := v.tables[in.meta.FileNum].reader
		tombs = append(tombs, r.RangeDels())
		if in.level == 0 {
			l0 = append(l0, r)
		} else {
			disjoint[in.level] = append(disjoint[in.level], in.meta)
		}
	}
	children := len(l0)
	for _, files := range disjoint {
		if len(files) > 0 {
			children++
		}
	}
	readahead := scanReadahead(children)
	for _, r := range l0 {
		iters = append(iters, r.NewScanIter(readahead))
	}
	for level, files := range disjoint {
		if len(files) > 0 {
			slices.SortFunc(files, func(a, b *manifest.FileMeta) int { return base.Compare(a.Smallest, b.Smallest) })
			iters = append(iters, &levelIter{v: v, plan: &scanPlan{compaction: true, readahead: readahead}, level: level, files: files, index: -1})
		}
	}
	merged := merging.NewIter(iters...)
	spans := rangedel.Merge(tombs...)
	snaps := db.snapshotSeqs()
	elide := func(ukey []byte) bool { return compaction.IsBaseLevelForKey(v.Version, job.outputLevel, ukey) }
	elideRange := func(start, end []byte) bool {
		return compaction.IsBaseLevelForRange(v.Version, job.outputLevel, start, end)
	}
	it := compaction.NewIter(merged, spans, snaps, elide)
	outTombs := compaction.CompactTombstones(spans, snaps, elideRange)
	var below []*manifest.FileMeta
	if job.outputLevel+1 < manifest.NumLevels {
		below = v.Levels[job.outputLevel+1]
	}
	out, err := db.writeTables(it, outTombs, job.outputLevel, db.opts.TargetFileSize, below, job.inputs, bytesIn, TableCompaction)
	if cerr := merged.Close(); err == nil && cerr != nil {
		for _, t := range out {
			t.reader.Close()
			db.removeFile(fileTypeTable, t.meta.FileNum, TableFailed)
		}
		err = cerr
	}
	if err != nil {
		// Name the inputs: an error of the merge (keys out of order, say)
		// cannot tell which of them it came from.
		names := make([]string, len(job.inputs))
		for i, in := range job.inputs {
			names[i] = baseFileName(fileTypeTable, in.meta.FileNum)
		}
		return fmt.Errorf("compacting %s: %w", strings.Join(names, ", "), err)
	}
	var bytesOut int64
	for _, t := range out {
		edit.Added = append(edit.Added, manifest.NewFile{Level: job.outputLevel, Meta: t.meta})
		bytesOut += int64(t.meta.Size)
	}
	if err := db.logAndApply(edit, out); err != nil {
		closeTables(out) // their files go at the next Open
		return err
	}
	db.stats.compactions.Add(1)
	db.stats.compactionBytesIn.Add(bytesIn)
	db.stats.compactionBytesOut.Add(bytesOut)
	db.stats.levelBytesWritten[job.outputLevel].Add(bytesOut)
	db.logf("compacted %d files (%d bytes) into %d L%d files (%d bytes) in %v: %s",
		len(job.inputs), bytesIn, len(out), job.outputLevel, bytesOut, time.Since(start), job.reason)
	info := CompactionInfo{Kind: CompactionRewrite, Reason: job.reason, Inputs: eventInputs(job.inputs),
		BytesIn: bytesIn, BytesOut: bytesOut, Duration: time.Since(start)}
	for _, t := range out {
		info.Outputs = append(info.Outputs, eventTable(job.outputLevel, t.meta))
	}
	db.compactionEnd(info)
	return nil
}

// Compact flushes the memtable, then merges every table of every level into
// the bottom level, dropping overwritten versions and tombstones that no
// snapshot needs. When it returns, all live data is in the bottom level, and
// the tables it replaced are deleted unless an iterator still reads them.
func (db *DB) Compact() error {
	if err := db.enterWrite(); err != nil {
		return err
	}
	defer db.leave()
	if err := db.flush(); err != nil {
		return err
	}
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	db.mu.Lock()
	if err := db.bgErr; err != nil {
		db.mu.Unlock()
		return err
	}
	v := db.current
	v.ref()
	db.mu.Unlock()

	job := compactionJob{outputLevel: manifest.NumLevels - 1, reason: "manual compaction"}
	for level, files := range v.Levels {
		for _, f := range files {
			job.inputs = append(job.inputs, levelFile{level, f})
		}
	}
	var err error
	if len(job.inputs) > 0 {
		err = db.runCompaction(v, job)
	}
	v.unref()
	if err != nil {
		return db.setBackgroundError(fmt.Errorf("shale: compaction: %w", err))
	}
	// The inputs no reader holds are retired now: delete them before
	// returning, so that the space (and the metrics) reflect the compaction
	// the caller waited for.
	db.releaseRetired(false)
	return nil
}
