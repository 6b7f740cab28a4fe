package shale

// Checkpoints: a consistent copy of the open store in another directory,
// taken while writes, flushes and compactions go on.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"time"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/wal"
	"github.com/shale-db/shale/vfs"
)

// Checkpoint writes a copy of the store into dir, a directory that does not
// exist yet or is empty, while the store goes on taking writes, flushing
// and compacting. The copy is a store of its own: Open opens it, Check
// passes it, and nothing in it changes when the source does. It holds every
// write acknowledged before Checkpoint was called, and possibly some
// written while it ran, each batch whole or not at all: exactly the writes
// up to one sequence number. A non-empty dir fails with an error matching
// fs.ErrExist, and nothing in it is touched.
//
// The tables are hard-linked into dir where the file system can (tables
// never change once written, so the source's compactions, which only remove
// their names, leave the checkpoint's alone), and copied where it cannot
// (dir on another device). The WALs that hold writes no table holds yet are
// copied, record by record, up to the last write the checkpoint includes,
// and end in an end marker; a new MANIFEST describes the version the
// checkpoint took, and nothing else; an empty LOCK file lets read-only
// opens of the checkpoint lock it. Every file and dir are synced before
// CURRENT is written, last, so a power loss during Checkpoint leaves a
// directory that Open and Check refuse (it holds tables or WALs but no
// CURRENT), or nothing of the checkpoint but names a read-write Open takes
// for the leftovers of a first Open that failed (a MANIFEST alone: it
// starts an empty store there), never a store missing some of the
// checkpoint. Check refuses all of these: only a directory for which
// Checkpoint returned nil, or that Check passes, is a checkpoint. On an
// error Checkpoint removes what it wrote, and dir if it made it.
//
// A checkpoint is a backup once copied elsewhere: copy the directory
// anywhere (its files are immutable from the moment Checkpoint returns),
// and restore by opening it where it lies.
//
// A store opened read-only refuses Checkpoint with ErrReadOnly: its
// memtable holds what Open replayed from WALs it never rotated, so there is
// no WAL the copy could end at a batch boundary by the rules above. Copy a
// closed store's directory instead (nothing changes it).
func (db *DB) Checkpoint(dir string) error {
	if err := db.enterWrite(); err != nil {
		return err
	}
	defer db.leave()
	if err := db.checkpoint(dir); err != nil {
		return fmt.Errorf("shale: checkpoint %s: %w", dir, err)
	}
	return nil
}

// checkpointState is what a checkpoint copies, captured at one moment (see
// captureCheckpoint).
type checkpointState struct {
	// v is the version whose tables the checkpoint links, referenced so
	// that no compaction deletes them meanwhile, as a read's is.
	v *version
	// seq is the last write the checkpoint includes: every one up to it
	// is in v's tables or in logs, and none after it is copied.
	seq base.SeqNum
	// logNum is the MANIFEST's log number, the first of logs, and
	// nextFileNum the next file number, which no file in the checkpoint
	// reaches: it numbers the checkpoint's MANIFEST.
	logNum, nextFileNum uint64
	// logs are the WALs the checkpoint copies, oldest first.
	logs []checkpointLog
}

// checkpointLog is a WAL of the source that a checkpoint copies.
type checkpointLog struct {
	num uint64
	// f is the WAL, opened while it could not yet be removed; nil when the
	// checkpoint includes none of its writes (an empty copy is written).
	f vfs.File
	// closed says the WAL takes no more writes (its memtable is
	// immutable): it is copied to its end. The mutable memtable's WAL is
	// read only up to the checkpoint's last write, never past it, where
	// the commit pipeline may be writing.
	closed bool
}

// checkpoint is Checkpoint, within a public call.
func (db *DB) checkpoint(dir string) (err error) {
	start := time.Now()
	made, err := db.checkpointDir(dir)
	if err != nil {
		return err
	}
	var written []string // the files made in dir, removed on an error
	defer func() {
		if err == nil {
			return
		}
		for _, name := range slices.Backward(written) {
			if rerr := db.fs.Remove(name); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				db.logf("checkpoint %s: removing %s after the error: %v", dir, name, rerr)
			}
		}
		if made {
			if rerr := db.fs.Remove(dir); rerr != nil {
				db.logf("checkpoint %s: removing it after the error: %v", dir, rerr)
			}
		}
	}()
	c, err := db.captureCheckpoint()
	if err != nil {
		return err
	}
	defer c.release()

	path := func(t fileType, num uint64) string {
		name := db.fs.PathJoin(dir, baseFileName(t, num))
		written = append(written, name)
		return name
	}
	var linked, copied int
	var copiedBytes, logBytes int64
	for _, files := range c.v.Levels {
		for _, f := range files {
			n, err := db.linkOrCopy(db.fileName(fileTypeTable, f.FileNum), path(fileTypeTable, f.FileNum))
			switch {
			case err != nil:
				return err
			case n == 0:
				linked++
			default:
				copied++
				copiedBytes += n
			}
		}
	}
	for _, l := range c.logs {
		n, err := db.copyLog(l, c.seq, path(fileTypeLog, l.num))
		if err != nil {
			return err
		}
		logBytes += n
	}
	// The MANIFEST: the version's tables; the last sequence number is seq,
	// which no table passes and at which the copied WALs end; the log
	// number is the first copied WAL, from which the copies go on without
	// a gap in sequence numbers, as recovery requires (see replayLogs).
	snap := c.v.Snapshot()
	snap.NextFileNum = c.nextFileNum + 1
	snap.LastSeqNum = c.seq
	snap.LogNum = c.logNum
	w, _, err := writeManifest(db.fs, path(fileTypeManifest, c.nextFileNum), snap)
	if err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	// An empty LOCK file, as Open makes, so that read-only opens of the
	// checkpoint lock it (see Options.ReadOnly on a store without one).
	lock, err := db.fs.Create(path(fileTypeLock, 0))
	if err != nil {
		return err
	}
	if err := lock.Close(); err != nil {
		return err
	}
	// Every file's entry is made durable before CURRENT is written, so that
	// no file system can keep CURRENT and lose a file it needs.
	if err := db.fs.SyncDir(dir); err != nil {
		return err
	}
	path(fileTypeTemp, c.nextFileNum) // setCurrent's names, to remove on an error
	path(fileTypeCurrent, 0)
	if err := setCurrent(db.fs, dir, c.nextFileNum); err != nil {
		return err
	}
	db.logf("checkpoint %s: through sequence number %d; tables linked %d, copied %d (%d bytes); WALs %d (%d bytes); in %v",
		dir, c.seq, linked, copied, copiedBytes, len(c.logs), logBytes, time.Since(start))
	return nil
}

// checkpointDir makes sure dir is a directory with nothing in it, making it
// (and any missing parent, each synced into the directory that holds it,
// as Open does) if it does not exist, and reports whether it made dir.
func (db *DB) checkpointDir(dir string) (bool, error) {
	info, err := db.fs.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, db.makeDir(dir)
	case err != nil:
		return false, err
	case !info.IsDir():
		return false, fmt.Errorf("%s is not a directory: %w", dir, fs.ErrExist)
	}
	names, err := db.fs.List(dir)
	if err != nil {
		return false, err
	}
	if len(names) > 0 {
		return false, fmt.Errorf("the directory is not empty (it holds %s): %w", names[0], fs.ErrExist)
	}
	return false, nil
}

// captureCheckpoint takes, under db.mu, what a checkpoint copies: the
// current version, referenced; the last visible write, which is in that
// version or in the memtables, since a memtable leaves db.imm only once
// its table is in the version, and the commit leader makes a write visible
// only once it is in db.mem and in its WAL; and the WALs of the memtables
// no table holds yet, those numbered from the log number on (a flushed
// memtable stays in db.imm a moment after its table is in the version and
// its WAL is removed).
//
// The WALs are opened here, with db.mu held, because a flush removes a WAL
// only after installing a version whose log number is past it, which
// takes db.mu: so none of these is removed before it is open, and once
// open it stays readable. That is a few opens under db.mu per checkpoint.
func (db *DB) captureCheckpoint() (*checkpointState, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	c := &checkpointState{v: db.current, seq: base.SeqNum(db.visibleSeq.Load()), logNum: db.logNum, nextFileNum: db.nextFileNum}
	c.v.ref()
	for _, m := range append(slices.Clip(db.imm), db.mem) {
		if m.logNum < db.logNum {
			continue
		}
		l := checkpointLog{num: m.logNum, closed: m != db.mem}
		if l.closed || m.firstSeq <= c.seq {
			f, err := db.fs.Open(db.fileName(fileTypeLog, m.logNum))
			if err != nil {
				c.release()
				return nil, err
			}
			l.f = f
		}
		c.logs = append(c.logs, l)
	}
	if len(c.logs) == 0 || c.logs[0].num != c.logNum {
		c.release()
		return nil, fmt.Errorf("shale: internal error: no memtable holds WAL %06d, the log number", c.logNum)
	}
	return c, nil
}

// release closes the WALs and drops the version's reference.
func (c *checkpointState) release() {
	for _, l := range c.logs {
		if l.f != nil {
			l.f.Close()
		}
	}
	c.v.unref()
}

// linkOrCopy makes dst a hard link to the table src or, where the file
// system cannot link them, a synced copy. It returns the bytes copied, 0
// for a link (a table is never empty). A link needs no sync: the table's
// bytes were synced when it was written, and dst's entry is synced with its
// directory.
func (db *DB) linkOrCopy(src, dst string) (int64, error) {
	err := db.fs.Link(src, dst)
	if err == nil {
		return 0, nil
	}
	if !errors.Is(err, vfs.ErrLinkUnsupported) {
		return 0, err
	}
	in, err := db.fs.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := db.fs.Create(dst)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.NewSectionReader(in, 0, 1<<62))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// checkpointGroupBytes is about how many bytes of records copyLog writes
// at a time.
const checkpointGroupBytes = 1 << 20

// copyLog writes to dst a WAL holding the records of l, the source's WAL,
// through the write seq, and returns the size of the copy. The records are
// read as Open's recovery reads them, checksums checked and batches
// decoded, and written anew with their sequence numbers, so the copy
// holds whole batches only, none of the bytes past them (a mapped WAL's
// zeros allocated ahead, a group being written), and ends in an end
// marker, synced. A closed WAL is copied to its end, where it must be
// whole; the mutable memtable's is read up to the record that ends at seq
// and no further, since the commit pipeline may be writing past it.
func (db *DB) copyLog(l checkpointLog, seq base.SeqNum, dst string) (int64, error) {
	f, err := db.fs.Create(dst)
	if err != nil {
		return 0, err
	}
	w := wal.NewWriter(f)
	if l.f != nil {
		if err := copyRecords(w, l, seq, db.fileName(fileTypeLog, l.num)); err != nil {
			w.Close()
			return w.Size(), err
		}
	}
	err = w.EndClose()
	return w.Size(), err
}

// copyRecords appends the records of l through the write seq to w, in
// groups of about checkpointGroupBytes; name names l in errors.
func copyRecords(w *wal.Writer, l checkpointLog, seq base.SeqNum, name string) error {
	r := wal.NewReader(l.f, name)
	var group [][]byte
	var groupBytes int
	var last base.SeqNum
	for l.closed || last != seq {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			if off, torn := r.TornTail(); torn && l.closed {
				return base.CorruptionErrorf(name, off, "a WAL a newer one follows ends in a torn record")
			}
			if !l.closed {
				return base.CorruptionErrorf(name, -1, "the WAL ends at sequence number %d, before %d, the last write visible", last, seq)
			}
			break
		}
		if err != nil {
			return err
		}
		first, n, err := decodeBatch(rec, name, r.Offset(), nil)
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		last = first + base.SeqNum(n) - 1
		if last > seq {
			return fmt.Errorf("shale: internal error: %s holds a batch through sequence number %d, past %d, the last write visible", name, last, seq)
		}
		group = append(group, slices.Clone(rec))
		if groupBytes += len(rec); groupBytes >= checkpointGroupBytes {
			if err := w.WriteGroup(group, false); err != nil {
				return err
			}
			group, groupBytes = group[:0], 0
		}
	}
	return w.WriteGroup(group, false)
}
