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
	"io/fs"
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
// such version is released the table is retired: the DB's background work
// closes the reader and, if the table has left the current version,
// deletes the file (see retireTable).
type table struct {
	meta     *manifest.FileMeta
	reader   *sstable.Reader
	refs     atomic.Int32 // versions that include the table
	obsolete atomic.Bool  // no longer in the current version
	db       *DB
}

func (t *table) unref() {
	if t.refs.Add(-1) == 0 {
		t.db.retireTable(t)
	}
}

// release closes the table's reader, evicts its blocks and, if the table is
// obsolete and remove is set, deletes its file.
func (t *table) release(remove bool) {
	db := t.db
	if err := t.reader.Close(); err != nil {
		db.logf("closing table %06d: %v", t.meta.FileNum, err)
	}
	db.cache.EvictFile(t.meta.FileNum)
	db.rowCache.EvictFile(t.meta.FileNum)
	if remove && t.obsolete.Load() {
		if err := db.fs.Remove(db.fileName(fileTypeTable, t.meta.FileNum)); err != nil {
			db.logf("deleting obsolete table %06d: %v", t.meta.FileNum, err)
		}
	}
}

// retireTable hands over a table no version holds any more. Whoever drops
// the last reference (a user's Get or Iterator.Close, say) does no file
// work: the deleter goroutine closes and deletes the table, so files are
// deleted only while the DB holds the LOCK. Once the DB has stopped
// retiring (Close, or a failed Open), the table is closed at once and an
// obsolete file is left for the next Open to delete.
func (db *DB) retireTable(t *table) {
	db.retireMu.Lock()
	if db.retireStopped {
		db.retireMu.Unlock()
		t.release(false)
		return
	}
	db.retired = append(db.retired, t)
	db.retireMu.Unlock()
	select {
	case db.retireCh <- struct{}{}:
	default:
	}
}

// deleteLoop releases retired tables until the DB closes.
func (db *DB) deleteLoop() {
	defer db.bgWG.Done()
	for {
		select {
		case <-db.closing:
			return
		case <-db.retireCh:
			db.releaseRetired(false)
		}
	}
}

// releaseRetired closes and deletes the tables retired so far. With stop
// set, later retirements are closed at once instead of queued: Close and a
// failed Open call it last thing before they release the LOCK.
func (db *DB) releaseRetired(stop bool) {
	db.retireMu.Lock()
	tables := db.retired
	db.retired = nil
	db.retireStopped = db.retireStopped || stop
	db.retireMu.Unlock()
	for _, t := range tables {
		t.release(true)
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
	db.publishReadState()
	db.cond.Broadcast()
	db.mu.Unlock()
	cur.unref()
	return nil
}

// appendManifest makes edit durable, then writes and syncs a commit record
// after it. Nothing the edit makes obsolete is deleted before that: so when
// a MANIFEST ends in damage, replayManifest knows that the cut-off edit had
// either not taken effect on disk or was committed, and recover checks
// which by the files present.
func (db *DB) appendManifest(edit *manifest.VersionEdit) error {
	for _, rec := range [][]byte{edit.Encode(nil), manifest.AppendCommit(nil)} {
		if _, err := db.manifest.WriteRecord(rec); err != nil {
			return err
		}
		db.manifestSize += int64(len(rec))
		if err := db.manifest.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// createManifest starts a new MANIFEST whose one record is a snapshot of v
// with the counters of edit, points CURRENT at it and removes the old one.
// The snapshot is synced before CURRENT names it, so it needs no commit
// record, and CURRENT's directory sync makes every file created since the
// last one durable too.
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

// maxCurrentSize bounds what readCurrent reads: CURRENT holds one name.
const maxCurrentSize = 256

// readCurrent returns the MANIFEST file number CURRENT names. Anything but
// a file holding exactly a MANIFEST name and a newline is corruption.
func (db *DB) readCurrent() (uint64, error) {
	name := db.fileName(fileTypeCurrent, 0)
	info, err := db.fs.Stat(name)
	if err != nil {
		return 0, err
	}
	if info.IsDir() || info.Size() > maxCurrentSize {
		return 0, base.CorruptionErrorf(name, -1, "CURRENT is a directory or %d bytes long, not a MANIFEST name", info.Size())
	}
	f, err := db.fs.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, info.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	content := string(buf[:n])
	t, num, ok := parseFileName(strings.TrimSuffix(content, "\n"))
	if !ok || t != fileTypeManifest || content != baseFileName(t, num)+"\n" {
		return 0, base.CorruptionErrorf(name, 0, "CURRENT holds %q, not a MANIFEST name", content)
	}
	return num, nil
}

// replayManifest rebuilds the version, the counters and the log number from
// MANIFEST-num.
//
// The first record was synced before CURRENT named the MANIFEST, so a
// MANIFEST with no intact first record (empty, cut short or damaged) is
// corruption. Damage at the end after that is cut off as a write a crash
// interrupted, as the wal Reader reports it; but it cannot be told from a
// synced record damaged later. What was cut off is an edit that never took
// effect (nothing it made obsolete was deleted: deletions wait for its
// commit record), a commit record whose edit survived, or a committed edit
// with its commit record, whose obsolete files may be gone. So when damage
// is cut off, replayManifest returns a note saying so, and recover adds it
// to the error if a file the surviving version needs (a table, the WAL at
// its log number or one after it) is missing: that is a damaged edit, not a
// torn one, and Open fails without deleting anything.
func (db *DB) replayManifest(num uint64) (v *manifest.Version, cutOff string, err error) {
	name := db.fileName(fileTypeManifest, num)
	f, err := db.fs.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", base.CorruptionErrorf(name, -1, "CURRENT names this MANIFEST, which is missing")
		}
		return nil, "", err
	}
	defer f.Close()
	r := wal.NewReader(f, name)
	v = &manifest.Version{}
	records := 0
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", err
		}
		records++
		rr, err := manifest.DecodeRecord(rec, name)
		if err != nil {
			return nil, "", err
		}
		edit := rr.Edit
		if edit == nil {
			if records == 1 {
				return nil, "", base.CorruptionErrorf(name, r.Offset(), "MANIFEST starts with a commit record, not a snapshot")
			}
			continue
		}
		if v, err = v.Apply(edit); err != nil {
			return nil, "", base.CorruptionErrorf(name, r.Offset(), "%v", err)
		}
		db.nextFileNum = max(db.nextFileNum, edit.NextFileNum)
		db.lastSeq = max(db.lastSeq, edit.LastSeqNum)
		db.logNum = max(db.logNum, edit.LogNum)
	}
	off, torn := r.TornTail()
	if records == 0 {
		return nil, "", base.CorruptionErrorf(name, 0, "MANIFEST holds no intact record (its first was synced before CURRENT named it)")
	}
	if torn {
		cutOff = fmt.Sprintf("%s ends in damage at offset %d, cut off as a torn write", name, off)
		db.logf("%s", cutOff)
	}
	return v, cutOff, nil
}
