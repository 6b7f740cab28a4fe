package shale

// The MANIFEST and CURRENT: version changes made durable (logAndApply), a
// new MANIFEST started from a snapshot of the version, CURRENT pointed at
// it, and both read back at Open.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/wal"
	"github.com/shale-db/shale/vfs"
)

// maxManifestSize is the size past which the next version change starts a
// new MANIFEST holding one snapshot of the current version.
const maxManifestSize = 4 << 20

// logAndApply makes edit durable in the MANIFEST and installs the version it
// produces. newTables are the tables the edit adds, already open. Only one
// version change runs at a time.
func (db *DB) logAndApply(edit *manifest.VersionEdit, newTables []*table) error {
	return db.logAndApplyVisible(edit, newTables, 0)
}

// logAndApplyVisible is logAndApply that, when visible is not 0, also
// makes sequence number visible the one reads see, under db.mu together
// with the new version: Ingest's, whose tables hold it and which no WAL
// holds. Nothing that takes db.mu (a snapshot, a checkpoint) sees the
// version without the number or the number without the version. The
// mutable memtable, which Ingest has left empty, then takes its first
// write after visible (see memTable.firstSeq).
func (db *DB) logAndApplyVisible(edit *manifest.VersionEdit, newTables []*table, visible base.SeqNum) error {
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
	if visible != 0 {
		db.visibleSeq.Store(uint64(visible))
		db.mem.firstSeq = visible + 1
	}
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
//
// On error the DB keeps its old MANIFEST, and CURRENT may already name the
// new one (the rename done, the directory sync failed). So nothing may be
// appended to the old one afterwards: the DB stops (logAndApply sets the
// background error), and an edit still in flight finds db.manifestSize
// unchanged, still over maxManifestSize (logAndApply calls this only
// then; Open and Repair fail whole), and writes a whole new MANIFEST again
// rather than appending.
func (db *DB) createManifest(v *manifest.Version, edit *manifest.VersionEdit) error {
	db.mu.Lock()
	num := db.nextFileNum
	db.nextFileNum++
	db.mu.Unlock()

	snap := v.Snapshot()
	snap.NextFileNum = num + 1
	snap.LastSeqNum = edit.LastSeqNum
	snap.LogNum = edit.LogNum
	w, size, err := writeManifest(db.fs, db.fileName(fileTypeManifest, num), snap)
	if err != nil {
		return err
	}
	if err := setCurrent(db.fs, db.dir, num); err != nil {
		w.Close()
		return err
	}
	old, oldNum := db.manifest, db.manifestNum
	db.manifest, db.manifestNum, db.manifestSize = w, num, size
	if old != nil {
		old.Close()
		if err := db.fs.Remove(db.fileName(fileTypeManifest, oldNum)); err != nil {
			db.logf("removing old manifest: %v", err)
		}
	}
	return nil
}

// writeManifest creates the MANIFEST name holding snap, a snapshot of a
// version, as its one record, synced, and returns its writer, open for the
// edits that follow, and the record's length. The snapshot needs no commit
// record: it is synced before CURRENT names the MANIFEST.
func writeManifest(fsys vfs.FS, name string, snap *manifest.VersionEdit) (*wal.Writer, int64, error) {
	f, err := fsys.Create(name)
	if err != nil {
		return nil, 0, err
	}
	w := wal.NewWriter(f)
	rec := snap.Encode(nil)
	if _, err := w.WriteRecord(rec); err != nil {
		w.Close()
		return nil, 0, err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return nil, 0, err
	}
	return w, int64(len(rec)), nil
}

// setCurrent points CURRENT in dir at MANIFEST-num atomically: write a
// temp file, fsync it, rename it over CURRENT, fsync the directory.
func setCurrent(fsys vfs.FS, dir string, num uint64) error {
	tmp := fsys.PathJoin(dir, baseFileName(fileTypeTemp, num))
	f, err := fsys.Create(tmp)
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
	if err := fsys.Rename(tmp, fsys.PathJoin(dir, baseFileName(fileTypeCurrent, 0))); err != nil {
		return err
	}
	return fsys.SyncDir(dir)
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
