package shale

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/compaction"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/memtable"
	"github.com/shale-db/shale/internal/merging"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/internal/wal"
)

// lostDir is the folder of a store's directory where Repair moves the files
// it found damaged.
const lostDir = "lost"

// Repair rebuilds the closed store in dir from the tables and WALs present,
// for a store whose MANIFEST or CURRENT is damaged or missing, or whose
// tables or WALs are damaged. It takes the store's LOCK, so it fails at once
// if the store is open. After it returns nil, Open succeeds and reads every
// intact record.
//
// Every table and WAL in the directory is read (the MANIFEST is not
// trusted, so none is known to be obsolete). A table that opens and whose
// every block passes sstable's Reader.Verify is taken whole; of a damaged
// table, the entries of its intact blocks; of a WAL, every batch up to the
// first record that does not read (the framing cannot find the records after
// it). These are merged, as a compaction merges, into new tables in the
// bottom level: of each key only the newest version stays, by sequence
// number, whichever file and level it came from, deletions (point and
// range) included (see merge). A new MANIFEST names those tables and a
// new, empty WAL, and CURRENT is pointed at it, durably (temp file, fsync,
// rename, directory fsync), whatever Options.NoSync says.
//
// What becomes of the inputs: every file Repair found damaged (a table or
// WAL with any problem, a torn tail that cut bytes off included, since
// damage and a torn write look alike, but not a WAL that merely ends in
// records no COMMIT counts yet or in zeros, which hold nothing: see
// wal.Reader.CutOff; a MANIFEST that does not read whole; every MANIFEST when
// CURRENT does not name a readable one) is moved into the folder lost/ of
// dir, before the new MANIFEST is written, and never deleted: its owner may
// want to inspect it. The intact inputs are removed once the new MANIFEST is
// durable; their every record is in the new tables. A crash at any point
// leaves a store that Repair, run again, repairs (the new tables, if not yet
// in a MANIFEST, are inputs like the others) and, once CURRENT is switched,
// that Open opens.
//
// Records of a damaged block, or past a damaged WAL record, are lost; if
// they held a key's newest version, an older one comes back. Like LevelDB's
// RepairDB, Repair also takes files that a crash left obsolete (Open had not
// yet removed them): their versions are older than the ones that replaced
// them, so they lose the merge, except a version whose deletion a compaction
// has since dropped. Repair needs free space for a second copy of the data.
// Options.ReadOnly makes it fail with ErrReadOnly, touching nothing.
func Repair(dir string, opts *Options) error {
	if err := opts.validate(); err != nil {
		return err
	}
	if opts != nil && opts.ReadOnly {
		return fmt.Errorf("shale: repair %s: %w", dir, ErrReadOnly)
	}
	db := offlineDB(dir, opts.withDefaults())
	lock, err := db.lockClosed()
	if err != nil {
		return fmt.Errorf("shale: repair %s: %w", dir, err)
	}
	defer lock.Close()
	r := &repairer{db: db, salvage: memtable.New()}
	defer r.salvage.Free() // merged into new tables by run, or abandoned
	if err := r.run(); err != nil {
		return fmt.Errorf("shale: repair %s: %w", dir, err)
	}
	return nil
}

// repairer holds what Repair has found.
type repairer struct {
	db *DB
	// salvage holds the entries of damaged tables' intact blocks and the
	// batches of every WAL.
	salvage *memtable.MemTable
	// intact are the tables that read whole, open.
	intact []*table
	// damaged are the names of the files to move to lost/; used those of
	// the intact inputs, to remove once the new MANIFEST is durable.
	damaged, used []string
}

func (r *repairer) run() error {
	db := r.db
	sf, err := listStore(db)
	if err != nil {
		return err
	}
	if !sf.hasCurrent && len(sf.tables) == 0 && len(sf.logs) == 0 {
		return errors.New("no store here (no CURRENT, no table, no WAL)")
	}
	lost, err := db.fs.List(db.fs.PathJoin(db.dir, lostDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// New files get numbers above every file present, in lost/ too, so
	// that nothing moved there later can meet a namesake.
	db.nextFileNum = sf.maxFileNumber + 1
	for _, name := range lost {
		if _, num, ok := parseFileName(name); ok {
			db.nextFileNum = max(db.nextFileNum, num+1)
		}
	}
	if err := r.readManifest(sf); err != nil {
		return err
	}
	defer func() {
		for _, t := range r.intact {
			t.reader.Close()
		}
	}()
	for _, num := range sf.tables {
		if err := r.readTable(num); err != nil {
			return err
		}
	}
	for _, num := range sf.logs {
		if err := r.readLog(num); err != nil {
			return err
		}
	}
	out, err := r.merge()
	if err != nil {
		return err
	}
	defer closeTables(out)
	// The empty WAL the new MANIFEST's log number names: the store is then
	// as Open leaves one.
	logNum := db.newFileNum()
	f, err := db.fs.Create(db.fileName(fileTypeLog, logNum))
	if err != nil {
		return err
	}
	db.walCreated(logNum)
	w := wal.NewWriter(f)
	err = w.Sync()
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := r.moveDamaged(); err != nil {
		return err
	}
	edit := &manifest.VersionEdit{LogNum: logNum, LastSeqNum: db.lastSeq}
	for _, t := range out {
		edit.Added = append(edit.Added, manifest.NewFile{Level: manifest.NumLevels - 1, Meta: t.meta})
	}
	v, err := (&manifest.Version{}).Apply(edit)
	if err != nil {
		return err
	}
	if err := db.createManifest(v, edit); err != nil {
		return err
	}
	if err := db.manifest.Close(); err != nil {
		return err
	}
	db.logf("repair: wrote MANIFEST-%06d: tables in L%d: %d; last sequence number %d", db.manifestNum, manifest.NumLevels-1, len(out), db.lastSeq)
	for _, t := range r.intact {
		t.reader.Close()
	}
	r.intact = nil
	for _, name := range r.used {
		var err error
		if t, num, ok := parseFileName(name); ok && (t == fileTypeTable || t == fileTypeLog) {
			err = db.removeFile(t, num, TableObsolete) // tells the listener
		} else {
			err = db.fs.Remove(db.fs.PathJoin(db.dir, name))
		}
		if err != nil {
			db.logf("repair: removing %s: %v (Open removes it)", name, err)
		}
	}
	return db.fs.SyncDir(db.dir)
}

// readManifest decides the fate of the MANIFESTs present: when CURRENT names
// one that reads whole, they are all obsolete once the new one is written;
// otherwise they all go to lost/. What the MANIFEST read records of the
// counters raises the DB's (a number too high is harmless).
func (r *repairer) readManifest(sf storeFiles) error {
	c := &checker{db: r.db}
	_, whole, err := c.readManifest(sf.hasCurrent)
	if err != nil {
		return err
	}
	for _, p := range c.problems {
		r.db.logf("repair: %v", p)
	}
	for _, name := range sf.names {
		if t, _, ok := parseFileName(name); ok && t == fileTypeManifest {
			if whole {
				r.used = append(r.used, name)
			} else {
				r.damaged = append(r.damaged, name)
			}
		}
	}
	return nil
}

// readTable takes table num whole if it reads whole, or else salvages the
// entries of its intact blocks.
func (r *repairer) readTable(num uint64) error {
	db := r.db
	name := baseFileName(fileTypeTable, num)
	t, err := db.openTable(&manifest.FileMeta{FileNum: num})
	if errors.Is(err, base.ErrCorruption) {
		db.logf("repair: %v: nothing in it can be read", err)
		r.damaged = append(r.damaged, name)
		return nil
	}
	if err != nil {
		return err
	}
	problems, err := t.reader.Verify(nil)
	if err != nil {
		t.reader.Close()
		return err
	}
	if len(problems) == 0 {
		r.intact = append(r.intact, t)
		r.used = append(r.used, name)
		db.lastSeq = max(db.lastSeq, t.reader.Properties().LargestSeq)
		return nil
	}
	defer t.reader.Close()
	for _, p := range problems {
		db.logf("repair: %v", p)
	}
	r.damaged = append(r.damaged, name)
	// The range tombstones were read, and checked, when the table opened.
	for _, tb := range t.reader.RangeDels().AppendTombstones(nil) {
		r.salvage.Add(tb.Seq, base.KindRangeDelete, tb.Start, tb.End)
		db.lastSeq = max(db.lastSeq, tb.Seq)
	}
	_, err = t.reader.Verify(func(k base.InternalKey, value []byte) {
		r.salvage.Add(k.SeqNum(), k.Kind(), k.UserKey, value)
		db.lastSeq = max(db.lastSeq, k.SeqNum())
	})
	return err
}

// readLog salvages the batches of WAL num up to the first record that does
// not read.
func (r *repairer) readLog(num uint64) error {
	db := r.db
	name := db.fileName(fileTypeLog, num)
	f, err := db.fs.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	lr := wal.NewReader(f, name)
	damaged := false
	for {
		rec, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, base.ErrCorruption) {
			db.logf("repair: %v: the records after it are lost", err)
			damaged = true
			break
		}
		if err != nil {
			return err
		}
		_, _, err = decodeBatch(rec, name, lr.Offset(), func(e batchEntry) {
			r.salvage.Add(e.Seq, e.Kind, e.Key, e.Value)
			db.lastSeq = max(db.lastSeq, e.Seq)
		})
		if err != nil {
			db.logf("repair: %v: batch skipped", err)
			damaged = true
		}
	}
	// A log that ends in whole records no COMMIT counts yet, or in zeros (a
	// mapped log's allocated tail), lost nothing (see internal/wal): only a
	// tail that cut bytes off is damage.
	if off, torn := lr.TornTail(); torn && lr.CutOff() {
		db.logf("repair: %s ends in a torn record at offset %d", name, off)
		damaged = true
	}
	if damaged {
		r.damaged = append(r.damaged, baseFileName(fileTypeLog, num))
	} else {
		r.used = append(r.used, baseFileName(fileTypeLog, num))
	}
	return nil
}

// merge writes the intact tables and the salvaged entries, merged, as new
// tables for the bottom level, durably.
func (r *repairer) merge() ([]*table, error) {
	db := r.db
	var iters []base.InternalIterator
	var tombs []rangedel.Spans
	var size int64
	readahead := scanReadahead(len(r.intact))
	for _, t := range r.intact {
		iters = append(iters, t.reader.NewScanIter(readahead))
		tombs = append(tombs, t.reader.RangeDels())
		size += int64(t.reader.Properties().DataSize)
	}
	if !r.salvage.Empty() {
		iters = append(iters, r.salvage.NewIter())
		tombs = append(tombs, r.salvage.RangeDels())
		size += int64(r.salvage.Size())
	}
	merged := merging.NewIter(iters...)
	// No snapshot survives a reopen: of each key, only its newest version
	// is kept, and every older version a deletion, point or range, deletes
	// is dropped (whichever file it came from). The deletions themselves
	// stay, although nothing lies below the bottom level: until the inputs
	// are all removed, a crash or a failed removal can leave some behind,
	// and a second Repair reads them again; the deletions keep hiding what
	// they held. The next compaction of their keys drops them.
	spans := rangedel.Merge(tombs...)
	it := compaction.NewIter(merged, spans, nil, nil)
	out, err := db.writeTables(it, compaction.CompactTombstones(spans, nil, nil), manifest.NumLevels-1, db.opts.TargetFileSize, nil, nil, size, TableRepair)
	if cerr := merged.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		for _, t := range out {
			t.reader.Close()
			db.removeFile(fileTypeTable, t.meta.FileNum, TableFailed)
		}
		return nil, err
	}
	return out, nil
}

// moveDamaged moves the damaged files into lost/, durably, never replacing
// a file there: a name already taken gets a suffix .1, .2 and so on. (A
// crash during an earlier Repair can leave a file both in lost/ and in the
// store, its move durable in one directory and not yet in the other.)
func (r *repairer) moveDamaged() error {
	if len(r.damaged) == 0 {
		return nil
	}
	db := r.db
	lost := db.fs.PathJoin(db.dir, lostDir)
	if err := db.fs.MkdirAll(lost, 0o755); err != nil {
		return err
	}
	for _, name := range r.damaged {
		to, err := r.freeName(lost, name)
		if err != nil {
			return err
		}
		if err := db.fs.Rename(db.fs.PathJoin(db.dir, name), db.fs.PathJoin(lost, to)); err != nil {
			return err
		}
		db.logf("repair: moved %s to %s/%s", name, lostDir, to)
	}
	if err := db.fs.SyncDir(lost); err != nil {
		return err
	}
	return db.fs.SyncDir(db.dir)
}

// freeName returns name, or name with the first suffix .1, .2, ... that no
// file in dir has.
func (r *repairer) freeName(dir, name string) (string, error) {
	const maxSuffix = 1000
	for i := range maxSuffix {
		to := name
		if i > 0 {
			to = fmt.Sprintf("%s.%d", name, i)
		}
		_, err := r.db.fs.Stat(r.db.fs.PathJoin(dir, to))
		if errors.Is(err, fs.ErrNotExist) {
			return to, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%s/ holds %s and %d more copies of it", lostDir, name, maxSuffix-1)
}
