package shale

// Ingest: tables written outside the store (TableWriter) checked, copied in
// with a sequence number of the store's, and installed by one MANIFEST
// edit. docs/design.md, "Ingest", gives the reasons.

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/sstable"
)

// Ingest adds the tables at paths (on Options.FS), written by TableWriter,
// to the store, all of them or none, also across a crash. Their entries
// become newer than every write acknowledged before Ingest was called; a
// snapshot taken before never sees them.
//
// Every table is checked before the store changes: that it is a table of
// this format, every block's checksum, that its keys ascend and that
// TableWriter wrote it. A file missing, damaged (an error that matches
// ErrCorruption), of another kind, or two tables whose key ranges overlap,
// and Ingest returns an error naming the file and leaves the store as it
// was. Empty tables are skipped; no paths, or only empty tables, is a
// no-op.
//
// Each table is copied into the store, its entries given the Ingest's
// sequence number, with the filter and compression of the level it goes
// to: the deepest level where nothing in the store overlaps it. The
// caller's files are only read, never moved or removed. Writes wait while
// the tables are copied, and the memtables are flushed first when they
// hold writes; since Ingest takes the compaction lock while it places and
// copies the tables, writes also wait for a compaction running when it
// starts (a manual Compact of a large store included). A read-only store
// returns ErrReadOnly.
func (db *DB) Ingest(paths []string) error {
	if err := db.enterWrite(); err != nil {
		return err
	}
	defer db.leave()
	if len(paths) == 0 {
		return nil
	}
	tables, err := db.verifyIngest(paths)
	defer func() {
		for _, t := range tables {
			t.reader.Close()
		}
	}()
	if err != nil || len(tables) == 0 {
		return err
	}
	return db.exclusive(func() error { return db.ingest(tables) })
}

// ingestTable is a table given to Ingest, checked, open for reading.
type ingestTable struct {
	path   string
	reader *sstable.Reader
	size   int64
	// bounds holds the table's smallest and largest keys, tombstones
	// included, as a table in the store would.
	bounds manifest.FileMeta
}

// verifyIngest opens and checks the tables at paths and returns the ones
// that are not empty, in key order. On error it returns the tables it
// opened, for the caller to close.
func (db *DB) verifyIngest(paths []string) ([]*ingestTable, error) {
	var tables []*ingestTable
	for _, path := range paths {
		t, err := db.verifyIngestTable(path)
		if err != nil {
			return tables, fmt.Errorf("shale: ingest %s: %w", path, err)
		}
		p := t.reader.Properties()
		if p.NumEntries == 0 && p.NumRangeDels == 0 {
			t.reader.Close()
			continue
		}
		tables = append(tables, t)
	}
	slices.SortFunc(tables, func(a, b *ingestTable) int { return base.Compare(a.bounds.Smallest, b.bounds.Smallest) })
	for i := 1; i < len(tables); i++ {
		if a, b := tables[i-1], tables[i]; !a.bounds.EndsBefore(b.bounds.Smallest.UserKey) {
			return tables, fmt.Errorf("shale: ingest: %s and %s overlap: keys %s to %s and %s to %s",
				a.path, b.path, FormatKey(a.bounds.Smallest.UserKey), FormatKey(a.bounds.Largest.UserKey),
				FormatKey(b.bounds.Smallest.UserKey), FormatKey(b.bounds.Largest.UserKey))
		}
	}
	return tables, nil
}

// verifyIngestTable opens the table at path and reads all of it: every
// block passes its checksum, the keys ascend, one entry per user key, and
// every entry and tombstone carries TableWriter's sequence number.
func (db *DB) verifyIngestTable(path string) (*ingestTable, error) {
	info, err := db.fs.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, fmt.Errorf("is a directory, not a table")
	}
	f, err := db.fs.Open(path)
	if err != nil {
		return nil, err
	}
	opts := sstable.ReaderOptions{Filters: knownFilters}
	if rf := db.opts.RangeFilter; rf != nil {
		opts.RangeFilterMap = rf.Map
	}
	r, err := sstable.Open(f, path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	var (
		prev    []byte
		entries int
		bad     error
	)
	problems, err := r.Verify(func(k base.InternalKey, _ []byte) {
		switch {
		case bad != nil:
		case k.SeqNum() != tableWriterSeq:
			bad = notFromTableWriter(k.UserKey, k.SeqNum())
		case entries > 0 && bytes.Compare(k.UserKey, prev) <= 0:
			bad = base.CorruptionErrorf(path, -1, "key %s follows %s: keys must strictly ascend", FormatKey(k.UserKey), FormatKey(prev))
		}
		prev = append(prev[:0], k.UserKey...)
		entries++
	})
	if err == nil && len(problems) > 0 {
		err = errors.Join(problems...)
	}
	if err == nil {
		err = bad
	}
	for _, s := range r.RangeDels() {
		if err == nil && !slices.Equal(s.Seqs, []base.SeqNum{tableWriterSeq}) {
			err = notFromTableWriter(s.Start, s.Seqs[0])
		}
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	p := r.Properties()
	t := &ingestTable{path: path, reader: r, size: info.Size()}
	t.bounds.Smallest, t.bounds.Largest = p.Smallest, p.Largest
	return t, nil
}

func notFromTableWriter(key []byte, seq base.SeqNum) error {
	return fmt.Errorf("holds key %s at sequence number %d: not a table that TableWriter wrote (every entry of one is at %d)",
		FormatKey(key), seq, tableWriterSeq)
}

// ingest installs the checked tables, as the commit pipeline's exclusive
// write (see DB.exclusive): no write commits meanwhile. The memtables are
// flushed first if they hold writes, since the live WALs' sequence numbers
// must follow on from the MANIFEST's last one and the Ingest's number is in
// no WAL (see docs/design.md, "Ingest"). The tables are copied with that
// number, then installed by one MANIFEST edit, which also records the
// number as the last one; the number becomes visible together with the
// version that holds the tables (logAndApplyVisible), so that no snapshot
// or checkpoint sees one without the other.
func (db *DB) ingest(tables []*ingestTable) error {
	start := time.Now()
	db.mu.Lock()
	if !db.mem.Empty() {
		if err := db.makeRoomForWrite(true); err != nil {
			db.mu.Unlock()
			return err
		}
	}
	for len(db.imm) > 0 && db.bgErr == nil {
		db.cond.Wait()
	}
	if err := db.bgErr; err != nil {
		db.mu.Unlock()
		return err
	}
	seq := db.lastSeq + 1
	db.mu.Unlock()

	// No compaction runs while the levels are chosen and the tables
	// installed: one installed meanwhile could put a table where an
	// ingested one goes.
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	db.mu.Lock()
	v := db.current
	v.ref()
	db.mu.Unlock()
	defer v.unref()

	edit := &manifest.VersionEdit{}
	var added []*table
	err := func() error {
		for _, t := range tables {
			level := ingestLevel(v.Version, &t.bounds)
			nt, err := db.copyIngested(t, seq, level)
			if err != nil {
				return err
			}
			added = append(added, nt)
			edit.Added = append(edit.Added, manifest.NewFile{Level: level, Meta: nt.meta})
		}
		return db.fs.SyncDir(db.dir) // the MANIFEST edit names them next
	}()
	if err != nil {
		for _, a := range added {
			a.reader.Close()
			db.removeFile(fileTypeTable, a.meta.FileNum, TableFailed)
		}
		return err
	}
	db.mu.Lock()
	db.lastSeq = seq
	db.mu.Unlock()
	if err := db.logAndApplyVisible(edit, added, seq); err != nil {
		closeTables(added) // their files go at the next Open
		return err
	}
	var size int64
	for _, a := range edit.Added {
		db.stats.levelBytesWritten[a.Level].Add(int64(a.Meta.Size))
		size += int64(a.Meta.Size)
	}
	db.stats.ingests.Add(1)
	db.stats.ingestedBytes.Add(size)
	db.logf("ingested %d tables (%d bytes) at sequence number %d in %v", len(added), size, seq, time.Since(start))
	db.maybeScheduleCompaction()
	return nil
}

// ingestLevel is the level an ingested table with bounds b goes to in v:
// the deepest level above every table that overlaps it, L0 if one in L0
// does, the bottom level if none does.
func ingestLevel(v *manifest.Version, b *manifest.FileMeta) int {
	for level := range v.Levels {
		if len(v.Overlapping(level, b.Smallest.UserKey, b.Largest.UserKey)) > 0 {
			return max(level-1, 0)
		}
	}
	return manifest.NumLevels - 1
}

// copyIngested writes t into the store as a new table for level, every
// entry and tombstone at seq, and opens it. It reads t whole again, so a
// file changed since it was checked fails here.
func (db *DB) copyIngested(t *ingestTable, seq base.SeqNum, level int) (*table, error) {
	fileNum := db.newFileNum()
	name := db.fileName(fileTypeTable, fileNum)
	f, err := db.fs.Create(name)
	if err != nil {
		return nil, err
	}
	w := sstable.NewWriter(f, db.opts.writerOptions(level, db.filterFor(level, nil, t.size)))
	var addErr error
	problems, err := t.reader.Verify(func(k base.InternalKey, value []byte) {
		if addErr == nil {
			addErr = w.Add(base.MakeInternalKey(k.UserKey, seq, k.Kind()), value)
		}
	})
	if err == nil && len(problems) > 0 {
		err = errors.Join(problems...)
	}
	if err == nil {
		err = addErr
	}
	if err != nil {
		w.Abort()
		db.fs.Remove(name)
		return nil, fmt.Errorf("shale: ingest %s: %w", t.path, err)
	}
	spans := t.reader.RangeDels().Clone()
	for i := range spans {
		spans[i].Seqs = []base.SeqNum{seq}
	}
	w.SetRangeDels(spans)
	nt, err := db.closeTable(w, fileNum, level, TableIngest)
	if err != nil {
		return nil, fmt.Errorf("shale: ingest %s: %w", t.path, err)
	}
	return nt, nil
}
