package shale

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

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
//
// Repair logs, through Options.Logger, what it did with each file and a
// summary: the lines of RepairWithReport's report.
//
// Options.ReadOnly makes it fail with ErrReadOnly, touching nothing.
func Repair(dir string, opts *Options) error {
	_, err := RepairWithReport(dir, opts)
	return err
}

// RepairWithReport is Repair, and says what it did, file by file, as a
// report: what it recovered from each table and WAL, what it set aside in
// lost/ with the entries those files held, as far as they can be counted,
// and what it wrote. The report's lines also go, one Options.Logger call
// each, to the logger, and then the error if the repair failed. When the
// repair fails, the report holds what it had found (it is nil only if
// Repair did not get to read the store: a bad option, a held LOCK, no
// directory).
func RepairWithReport(dir string, opts *Options) (*RepairReport, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts != nil && opts.ReadOnly {
		return nil, fmt.Errorf("shale: repair %s: %w", dir, ErrReadOnly)
	}
	db := offlineDB(dir, opts.withDefaults())
	lock, err := db.lockClosed()
	if err != nil {
		return nil, fmt.Errorf("shale: repair %s: %w", dir, err)
	}
	defer lock.Close()
	r := &repairer{db: db, salvage: memtable.New(), report: &RepairReport{Dir: dir}}
	defer r.salvage.Free() // merged into new tables by run, or abandoned
	err = r.run()
	if err != nil {
		err = fmt.Errorf("shale: repair %s: %w", dir, err)
		r.report.Err = err
	}
	for line := range strings.Lines(r.report.String()) {
		db.logf("repair: %s", strings.TrimSuffix(line, "\n"))
	}
	if err != nil {
		db.logf("repair: not repaired: %v", err)
	}
	return r.report, err
}

// RepairReport is what a repair did, file by file, as LevelDB's RepairDB
// logs it. Its String method prints it for people.
type RepairReport struct {
	Dir string
	// Files are the store's MANIFESTs, tables and WALs, in the order
	// Repair read them (MANIFESTs, then tables and WALs by number).
	Files []RepairedFile
	// Problems are the problems that belong to no one file (a missing
	// CURRENT).
	Problems []error
	// Manifest is the name of the MANIFEST Repair wrote, "" if it did not
	// get that far; Tables and Entries count the new tables, in the bottom
	// level, and their entries: the newest version of each key recovered,
	// and the deletions (point and range) that hide older ones.
	Manifest   string
	Tables     int
	Entries    uint64
	LastSeqNum uint64
	// Err is the error that stopped the repair, or nil.
	Err error
}

// RepairedFile is what Repair made of one file of the store.
type RepairedFile struct {
	Name string // as in the store's directory: 000005.sst, 000007.log, MANIFEST-000003
	// Recovered counts the entries taken from the file (range deletions
	// included) into the merge; Held the entries it held, as far as they
	// can be counted (a table's properties say how many it has), or -1
	// where they cannot (a WAL past its damage, a table that does not
	// open). A MANIFEST holds no entries: both are 0.
	Recovered uint64
	Held      int64
	// UnreadBytes is how many bytes of a WAL lie past the first record
	// that does not read, which the framing cannot find records in.
	UnreadBytes int64
	// Problems is the damage found in the file. Damaged says that Repair
	// sets the file aside, and LostTo where it moved it ("lost/000005.sst",
	// maybe with a suffix; "" until it has). A file not damaged is removed
	// once the new MANIFEST is durable: its every entry is in the new
	// tables.
	Problems []error
	Damaged  bool
	LostTo   string
}

// String prints a line per file, with its problems indented below it, and
// a summary, which a repair that failed (Err) does not have.
func (r *RepairReport) String() string {
	var b strings.Builder
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "%v\n", p)
	}
	var tables, logs, moved int
	var recovered uint64
	var lost int64
	unknown := false
	for _, f := range r.Files {
		kind, _, _ := parseFileName(f.Name)
		switch kind {
		case fileTypeTable:
			tables++
		case fileTypeLog:
			logs++
		}
		recovered += f.Recovered
		if f.Damaged {
			moved++
		}
		b.WriteString(f.Name + ": ")
		switch {
		case kind == fileTypeManifest && f.Damaged:
			fmt.Fprint(&b, "not used (CURRENT names no MANIFEST that reads whole)")
		case kind == fileTypeManifest:
			fmt.Fprint(&b, "read whole: replaced")
		case !f.Damaged:
			fmt.Fprintf(&b, "%s, intact", plural(int(f.Recovered), "entry"))
		default:
			fmt.Fprintf(&b, "damaged: %s recovered", plural(int(f.Recovered), "entry"))
			switch {
			case f.Held >= 0:
				n := max(f.Held-int64(f.Recovered), 0)
				lost += n
				fmt.Fprintf(&b, " of %d, %d lost", f.Held, n)
			default:
				unknown = true
				if f.UnreadBytes > 0 {
					fmt.Fprintf(&b, ", then %d bytes unread", f.UnreadBytes)
				}
				fmt.Fprint(&b, " (the entries lost cannot be counted)")
			}
		}
		switch {
		case f.LostTo != "":
			fmt.Fprintf(&b, "; moved to %s", f.LostTo)
		case f.Damaged:
			fmt.Fprintf(&b, "; not moved to %s/ (the repair stopped first)", lostDir)
		}
		b.WriteString("\n")
		for _, p := range f.Problems {
			fmt.Fprintf(&b, "  %v\n", p)
		}
	}
	if r.Manifest == "" {
		return b.String() // the repair stopped before the end: no summary
	}
	fmt.Fprintf(&b, "recovered %s from %s and %s into %s of %s in L%d (%s, last sequence number %d); ",
		plural(int(recovered), "entry"), plural(tables, "table"), plural(logs, "WAL"),
		plural(r.Tables, "new table"), plural(int(r.Entries), "entry"), manifest.NumLevels-1, r.Manifest, r.LastSeqNum)
	switch {
	case moved == 0:
		b.WriteString("nothing lost\n")
	case unknown:
		fmt.Fprintf(&b, "%s moved to %s/; entries lost: %d counted, and more that cannot be\n", plural(moved, "file"), lostDir, lost)
	default:
		fmt.Fprintf(&b, "%s moved to %s/; entries lost: %d\n", plural(moved, "file"), lostDir, lost)
	}
	return b.String()
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
	// report is what Repair says it did.
	report *RepairReport
}

// setAside marks the file name damaged, to move to lost/.
func (r *repairer) setAside(name string) {
	r.damaged = append(r.damaged, name)
	r.file(name).Damaged = true
}

// file returns the report's entry for the file name, adding it.
func (r *repairer) file(name string) *RepairedFile {
	for i := range r.report.Files {
		if r.report.Files[i].Name == name {
			return &r.report.Files[i]
		}
	}
	r.report.Files = append(r.report.Files, RepairedFile{Name: name})
	return &r.report.Files[len(r.report.Files)-1]
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
	r.report.Manifest = baseFileName(fileTypeManifest, db.manifestNum)
	r.report.Tables = len(out)
	for _, t := range out {
		p := t.reader.Properties()
		r.report.Entries += p.NumEntries + p.NumRangeDels
	}
	r.report.LastSeqNum = uint64(db.lastSeq)
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
	for _, name := range sf.names {
		if t, _, ok := parseFileName(name); ok && t == fileTypeManifest {
			r.file(name)
			if whole {
				r.used = append(r.used, name)
			} else {
				r.setAside(name)
			}
		}
	}
	for _, p := range c.problems {
		r.problem(p)
	}
	return nil
}

// problem adds p to the report: to the file it names, or to the report's
// own problems if it names none of the files read.
func (r *repairer) problem(p error) {
	var ce *base.CorruptionError
	if errors.As(p, &ce) {
		for i := range r.report.Files {
			if f := &r.report.Files[i]; r.db.fs.PathJoin(r.db.dir, f.Name) == ce.File {
				f.Problems = append(f.Problems, p)
				return
			}
		}
	}
	r.report.Problems = append(r.report.Problems, p)
}

// readTable takes table num whole if it reads whole, or else salvages the
// entries of its intact blocks.
func (r *repairer) readTable(num uint64) error {
	db := r.db
	name := baseFileName(fileTypeTable, num)
	f := r.file(name)
	t, err := db.openTable(&manifest.FileMeta{FileNum: num})
	if errors.Is(err, base.ErrCorruption) {
		f.Held = -1
		f.Problems = append(f.Problems, fmt.Errorf("%w: nothing in it can be read", err))
		r.setAside(name)
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
	props := t.reader.Properties()
	f.Held = int64(props.NumEntries + props.NumRangeDels)
	if len(problems) == 0 {
		f.Recovered = uint64(f.Held)
		r.intact = append(r.intact, t)
		r.used = append(r.used, name)
		db.lastSeq = max(db.lastSeq, props.LargestSeq)
		return nil
	}
	defer t.reader.Close()
	f.Problems = problems
	r.setAside(name)
	// The range tombstones were read, and checked, when the table opened.
	for _, tb := range t.reader.RangeDels().AppendTombstones(nil) {
		r.salvage.Add(tb.Seq, base.KindRangeDelete, tb.Start, tb.End)
		db.lastSeq = max(db.lastSeq, tb.Seq)
		f.Recovered++
	}
	_, err = t.reader.Verify(func(k base.InternalKey, value []byte) {
		r.salvage.Add(k.SeqNum(), k.Kind(), k.UserKey, value)
		db.lastSeq = max(db.lastSeq, k.SeqNum())
		f.Recovered++
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
	size, err := f.Size()
	if err != nil {
		return err
	}
	rf := r.file(baseFileName(fileTypeLog, num))
	lr := wal.NewReader(f, name)
	countable := true // until a batch is skipped or records are lost
	for {
		rec, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, base.ErrCorruption) {
			rf.Problems = append(rf.Problems, fmt.Errorf("%w: the records after it are lost", err))
			var ce *base.CorruptionError
			if errors.As(err, &ce) && ce.Offset >= 0 {
				rf.UnreadBytes = max(size-ce.Offset, 0)
			}
			countable = false
			break
		}
		if err != nil {
			return err
		}
		n := 0
		_, _, err = decodeBatch(rec, name, lr.Offset(), func(e batchEntry) {
			r.salvage.Add(e.Seq, e.Kind, e.Key, e.Value)
			db.lastSeq = max(db.lastSeq, e.Seq)
			n++
		})
		if err != nil {
			rf.Problems = append(rf.Problems, fmt.Errorf("%w: batch skipped", err))
			countable = false
		}
		rf.Recovered += uint64(n)
	}
	// A log that ends in whole records no COMMIT counts yet, or in zeros (a
	// mapped log's allocated tail), lost nothing (see internal/wal): only a
	// tail that cut bytes off is damage.
	if off, torn := lr.TornTail(); torn && lr.CutOff() {
		rf.Problems = append(rf.Problems, base.CorruptionErrorf(name, off, "a torn record: the bytes after it are lost"))
		rf.UnreadBytes = max(size-off, 0)
		countable = false
	}
	rf.Held = -1
	if countable {
		rf.Held = int64(rf.Recovered)
	}
	if len(rf.Problems) > 0 {
		r.setAside(rf.Name)
	} else {
		r.used = append(r.used, rf.Name)
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
		r.file(name).LostTo = lostDir + "/" + to
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
