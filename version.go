package shale

// Files in a store's directory:
//
//	NNNNNN.log        a write-ahead log (wal framing; records are batches)
//	NNNNNN.sst        an SSTable (format: internal/sstable/writer.go)
//	MANIFEST-NNNNNN   a log (wal framing) of version edits
//	                  (format: internal/manifest/edit.go)
//	CURRENT           the name of the live MANIFEST and a newline; replaced by
//	                  writing CURRENT.NNNNNN.dbtmp, fsync, rename, fsync dir
//	LOCK              flock'd while the store is open
//
// All numbers come from one counter, the next file number, which every
// version edit records.

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/sstable"
	"github.com/shale-db/shale/internal/wal"
)

type fileType int

const (
	fileTypeLog fileType = iota
	fileTypeTable
	fileTypeManifest
	fileTypeCurrent
	fileTypeLock
	fileTypeTemp
)

// maxManifestSize is the size past which the next version change starts a
// new MANIFEST holding one snapshot of the current version.
const maxManifestSize = 4 << 20

func (db *DB) fileName(t fileType, num uint64) string {
	return db.fs.PathJoin(db.dir, baseFileName(t, num))
}

func baseFileName(t fileType, num uint64) string {
	switch t {
	case fileTypeLog:
		return fmt.Sprintf("%06d.log", num)
	case fileTypeTable:
		return fmt.Sprintf("%06d.sst", num)
	case fileTypeManifest:
		return fmt.Sprintf("MANIFEST-%06d", num)
	case fileTypeCurrent:
		return "CURRENT"
	case fileTypeLock:
		return "LOCK"
	case fileTypeTemp:
		return fmt.Sprintf("CURRENT.%06d.dbtmp", num)
	}
	panic("unknown file type")
}

// parseFileName recognises the names baseFileName makes.
func parseFileName(name string) (fileType, uint64, bool) {
	num := func(s string) (uint64, bool) {
		n, err := strconv.ParseUint(s, 10, 64)
		return n, err == nil && len(s) >= 6
	}
	switch {
	case name == "CURRENT":
		return fileTypeCurrent, 0, true
	case name == "LOCK":
		return fileTypeLock, 0, true
	case strings.HasPrefix(name, "MANIFEST-"):
		n, ok := num(name[len("MANIFEST-"):])
		return fileTypeManifest, n, ok
	case strings.HasSuffix(name, ".log"):
		n, ok := num(strings.TrimSuffix(name, ".log"))
		return fileTypeLog, n, ok
	case strings.HasSuffix(name, ".sst"):
		n, ok := num(strings.TrimSuffix(name, ".sst"))
		return fileTypeTable, n, ok
	case strings.HasPrefix(name, "CURRENT.") && strings.HasSuffix(name, ".dbtmp"):
		n, ok := num(strings.TrimSuffix(strings.TrimPrefix(name, "CURRENT."), ".dbtmp"))
		return fileTypeTemp, n, ok
	}
	return 0, 0, false
}

// table is an open SSTable. Its reader (with its filter and index in
// memory) lives as long as some version includes the table; when the last
// such version is released the reader is closed, and if the table has left
// the current version the file is deleted.
type table struct {
	meta     *manifest.FileMeta
	reader   *sstable.Reader
	refs     atomic.Int32 // versions that include the table
	obsolete atomic.Bool  // no longer in the current version
	db       *DB
}

func (t *table) unref() {
	if t.refs.Add(-1) != 0 {
		return
	}
	db := t.db
	if err := t.reader.Close(); err != nil {
		db.logf("closing table %06d: %v", t.meta.FileNum, err)
	}
	db.cache.EvictFile(t.meta.FileNum)
	db.rowCache.EvictFile(t.meta.FileNum)
	if t.obsolete.Load() {
		if err := db.fs.Remove(db.fileName(fileTypeTable, t.meta.FileNum)); err != nil {
			db.logf("deleting obsolete table %06d: %v", t.meta.FileNum, err)
		}
	}
}

// version is a manifest.Version with its open tables, reference counted:
// the DB holds one reference to the current version, and every read,
// iterator and compaction holds one to the version it uses, so the files it
// reads stay open and on disk until it is done.
type version struct {
	*manifest.Version
	tables map[uint64]*table
	refs   atomic.Int32
}

func newVersion(v *manifest.Version, tables map[uint64]*table) *version {
	nv := &version{Version: v, tables: tables}
	nv.refs.Store(1)
	for _, t := range tables {
		t.refs.Add(1)
	}
	return nv
}

func (v *version) ref() { v.refs.Add(1) }

func (v *version) unref() {
	if v.refs.Add(-1) != 0 {
		return
	}
	for _, t := range v.tables {
		t.unref()
	}
}

// logAndApply makes edit durable in the MANIFEST and installs the version it
// produces. newTables are the tables the edit adds, already open. Only one
// version change runs at a time.
func (db *DB) logAndApply(edit *manifest.VersionEdit, newTables []*table) error {
	db.manifestMu.Lock()
	defer db.manifestMu.Unlock()

	db.mu.Lock()
	cur := db.current
	edit.NextFileNum = db.nextFileNum
	edit.LastSeqNum = db.lastSeq
	if edit.LogNum == 0 {
		edit.LogNum = db.logNum
	}
	db.mu.Unlock()

	nv, err := cur.Apply(edit)
	if err != nil {
		return db.setBackgroundError(fmt.Errorf("shale: internal error: %w", err))
	}
	tables := make(map[uint64]*table, len(cur.tables)+len(newTables))
	for num, t := range cur.tables {
		tables[num] = t
	}
	for _, d := range edit.Deleted {
		delete(tables, d.FileNum)
	}
	for _, t := range newTables {
		tables[t.meta.FileNum] = t
	}

	if db.manifestSize > maxManifestSize {
		err = db.createManifest(nv, edit)
	} else {
		err = db.appendManifest(edit)
	}
	if err != nil {
		return db.setBackgroundError(err)
	}

	db.mu.Lock()
	v := newVersion(nv, tables)
	for _, d := range edit.Deleted {
		if _, moved := tables[d.FileNum]; !moved {
			cur.tables[d.FileNum].obsolete.Store(true)
		}
	}
	db.current = v
	db.logNum = edit.LogNum
	db.cond.Broadcast()
	db.mu.Unlock()
	cur.unref()
	return nil
}

func (db *DB) appendManifest(edit *manifest.VersionEdit) error {
	rec := edit.Encode(nil)
	if _, err := db.manifest.WriteRecord(rec); err != nil {
		return err
	}
	db.manifestSize += int64(len(rec))
	return db.manifest.Sync()
}

// createManifest starts a new MANIFEST whose one record is a snapshot of v
// with the counters of edit, points CURRENT at it and removes the old one.
func (db *DB) createManifest(v *manifest.Version, edit *manifest.VersionEdit) error {
	db.mu.Lock()
	num := db.nextFileNum
	db.nextFileNum++
	db.mu.Unlock()

	snap := v.Snapshot()
	snap.NextFileNum = num + 1
	snap.LastSeqNum = edit.LastSeqNum
	snap.LogNum = edit.LogNum

	f, err := db.fs.Create(db.fileName(fileTypeManifest, num))
	if err != nil {
		return err
	}
	w := wal.NewWriter(f)
	rec := snap.Encode(nil)
	if _, err := w.WriteRecord(rec); err != nil {
		w.Close()
		return err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return err
	}
	if err := db.setCurrent(num); err != nil {
		w.Close()
		return err
	}
	old, oldNum := db.manifest, db.manifestNum
	db.manifest, db.manifestNum, db.manifestSize = w, num, int64(len(rec))
	if old != nil {
		old.Close()
		if err := db.fs.Remove(db.fileName(fileTypeManifest, oldNum)); err != nil {
			db.logf("removing old manifest: %v", err)
		}
	}
	return nil
}

// setCurrent points CURRENT at MANIFEST-num atomically: write a temp file,
// fsync it, rename it over CURRENT, fsync the directory.
func (db *DB) setCurrent(num uint64) error {
	tmp := db.fileName(fileTypeTemp, num)
	f, err := db.fs.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, baseFileName(fileTypeManifest, num)+"\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := db.fs.Rename(tmp, db.fileName(fileTypeCurrent, 0)); err != nil {
		return err
	}
	return db.fs.SyncDir(db.dir)
}

// readCurrent returns the MANIFEST file number CURRENT names.
func (db *DB) readCurrent() (uint64, error) {
	name := db.fileName(fileTypeCurrent, 0)
	f, err := db.fs.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	content := string(buf[:n])
	t, num, ok := parseFileName(strings.TrimSuffix(content, "\n"))
	if !ok || t != fileTypeManifest || !strings.HasSuffix(content, "\n") {
		return 0, base.CorruptionErrorf(name, 0, "CURRENT holds %q, not a MANIFEST name", content)
	}
	return num, nil
}

// replayManifest rebuilds the version, the counters and the log number from
// MANIFEST-num.
func (db *DB) replayManifest(num uint64) (*manifest.Version, error) {
	name := db.fileName(fileTypeManifest, num)
	f, err := db.fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("shale: CURRENT names %s: %w", name, err)
	}
	defer f.Close()
	r := wal.NewReader(f, name)
	v := &manifest.Version{}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		edit, err := manifest.DecodeEdit(rec, name)
		if err != nil {
			return nil, err
		}
		if v, err = v.Apply(edit); err != nil {
			return nil, base.CorruptionErrorf(name, -1, "%v", err)
		}
		db.nextFileNum = max(db.nextFileNum, edit.NextFileNum)
		db.lastSeq = max(db.lastSeq, edit.LastSeqNum)
		db.logNum = max(db.logNum, edit.LogNum)
	}
	if off, torn := r.TornTail(); torn {
		// A crash while an edit was being written: that edit never took
		// effect, and nothing it would have made obsolete was deleted
		// (deletions wait for the edit's sync). A last record damaged
		// after it was synced cannot be told from a torn one; as in
		// LevelDB, it is taken for one.
		db.logf("%s: torn tail at offset %d: an edit a crash interrupted, ignored", name, off)
	}
	return v, nil
}
