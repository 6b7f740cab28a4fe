package shale

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/wal"
)

// Check verifies the closed store in dir without writing anything to its
// directory. It takes the store's LOCK shared, as a read-only Open does
// (see Options.ReadOnly, also for a store without a LOCK file), so it
// fails at once, with an error that is not corruption, if the store is open
// read-write (in this process or another), and runs beside read-only opens
// and other Checks. It returns nil when the
// store is consistent; otherwise a *CheckError, which matches ErrCorruption,
// listing every problem found, each itself matching ErrCorruption and
// naming the file and, where known, the offset.
//
// What is checked:
//   - CURRENT names a MANIFEST, and the MANIFEST reads whole: every record's
//     checksum, every edit decodes and applies to the version before it
//     (which refuses overlapping files in a level below L0), and it does not
//     end in a torn record. A torn last record is what a crash during a
//     version change leaves, and also what damage to the last record looks
//     like; Check cannot tell them apart, so it reports it.
//   - Every table the MANIFEST names is present, of the size it records,
//     numbered below the next file number it records; every block of it
//     passes its checksum and decodes (sstable's Reader.Verify); its keys
//     are sorted, its first and last keys and sequence numbers are those the
//     MANIFEST records, and no sequence number is above the last one the
//     MANIFEST records.
//   - The WAL the MANIFEST's log number names is present, and every WAL from
//     it on reads record by record, each record a batch that decodes, with
//     sequence numbers going on from batch to batch without a gap, within a
//     WAL and from each WAL to the next (a gap between WALs is a WAL
//     missing, as Open finds it), and the first batch of the first WAL
//     with records starting at or below the MANIFEST's last sequence
//     number + 1 (a gap there is a WAL missing or emptied). A torn tail is
//     reported in every WAL but the newest WAL with bytes, where it is the
//     normal trace of a crash that Open cuts off.
//
// Files that are not live, tables and WALs a crash left behind before Open
// could remove them, are leftovers, not problems, and are not read: Open
// deletes them. So is what a first Open that failed before it wrote
// CURRENT leaves (an empty WAL, a MANIFEST): Check then finds no store.
// When the MANIFEST cannot be read whole, which files are live is unknown,
// so every table and WAL present is checked instead. The lost/ folder
// Repair writes is not part of the store.
func Check(dir string, opts *Options) error {
	if err := opts.validate(); err != nil {
		return err
	}
	o := opts.withDefaults()
	o.ReadOnly = true
	db := offlineDB(dir, o)
	lock, err := db.lockClosed()
	if err != nil {
		return fmt.Errorf("shale: check %s: %w", dir, err)
	}
	defer lock.Close()
	c := &checker{db: db}
	if err := c.run(); err != nil {
		return fmt.Errorf("shale: check %s: %w", dir, err)
	}
	if len(c.problems) == 0 {
		return nil
	}
	return &CheckError{Dir: dir, Problems: c.problems}
}

// CheckError is the error Check returns for a store with problems. It
// matches ErrCorruption, as does each of its problems.
type CheckError struct {
	Dir string
	// Problems are the problems found, in the order Check met them, each
	// naming its file and, where known, the offset.
	Problems []error
}

// Error lists the problems, one per line after a summary line.
func (e *CheckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "shale: check %s: %d problem(s):", e.Dir, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (e *CheckError) Unwrap() []error { return e.Problems }

// offlineDB returns a DB for the closed store in dir, on which Check and
// Repair call the DB's own methods to read and write its files
// (readCurrent, openTable, writeTables, createManifest). It has no memtable,
// WAL, block cache or background work, and its version is empty.
func offlineDB(dir string, o Options) *DB {
	return &DB{dir: dir, opts: o, fs: o.FS, tableCache: newTableCache(o.FS, o.MaxOpenFiles, !o.DisableMmapReads), current: newVersion(&manifest.Version{}, nil)}
}

// lockClosed takes the LOCK of the store in db.dir, which must exist (it is
// not created), for Check (read-only: shared) and Repair (exclusive; see
// lockStore). A directory holding no file named as a store's is refused
// before the lock, which would create a LOCK file in it: a mistyped path
// gets no file.
func (db *DB) lockClosed() (io.Closer, error) {
	if _, err := db.fs.Stat(db.dir); err != nil {
		return nil, err
	}
	names, err := db.fs.List(db.dir)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(names, func(name string) bool { _, _, ok := parseFileName(name); return ok }) {
		return nil, errors.New("no store here (no file of a store)")
	}
	return db.lockStore()
}

// storeFiles are the tables and WALs in a store's directory, by file number,
// ascending.
type storeFiles struct {
	names         []string
	tables, logs  []uint64
	hasCurrent    bool
	maxFileNumber uint64
}

func listStore(db *DB) (storeFiles, error) {
	names, err := db.fs.List(db.dir)
	if err != nil {
		return storeFiles{}, err
	}
	sf := storeFiles{names: names}
	for _, name := range names {
		t, num, ok := parseFileName(name)
		if !ok {
			continue
		}
		sf.maxFileNumber = max(sf.maxFileNumber, num)
		switch t {
		case fileTypeTable:
			sf.tables = append(sf.tables, num)
		case fileTypeLog:
			sf.logs = append(sf.logs, num)
		case fileTypeCurrent:
			sf.hasCurrent = true
		}
	}
	slices.Sort(sf.tables)
	slices.Sort(sf.logs)
	return sf, nil
}

// checker collects the problems Check finds.
type checker struct {
	db       *DB
	problems []error
}

func (c *checker) problem(file string, offset int64, format string, args ...any) {
	c.problems = append(c.problems, base.CorruptionErrorf(file, offset, format, args...))
}

// run checks the store; it returns an error only when a file cannot be read
// (an I/O error, not damage).
func (c *checker) run() error {
	db := c.db
	sf, err := listStore(db)
	if err != nil {
		return err
	}
	if !sf.hasCurrent {
		// What a first Open that failed leaves is no store: Open removes it
		// and starts afresh.
		_, err := db.failedCreate(sf.names)
		if err == nil {
			return errors.New("no store here (no CURRENT, no table, no WAL with records)")
		}
		if !errors.Is(err, base.ErrCorruption) {
			return err
		}
	}
	v, whole, err := c.readManifest(sf.hasCurrent)
	if err != nil {
		return err
	}
	logs := sf.logs
	if !whole {
		for _, num := range sf.tables {
			if err := c.checkTable(num, nil); err != nil {
				return err
			}
		}
		return c.checkLogs(logs, false)
	}
	for _, files := range v.Levels {
		for _, f := range files {
			if err := c.checkTable(f.FileNum, f); err != nil {
				return err
			}
		}
	}
	logs = slices.DeleteFunc(slices.Clone(logs), func(n uint64) bool { return n < db.logNum })
	if len(logs) == 0 || logs[0] != db.logNum {
		c.problem(db.fileName(fileTypeLog, db.logNum), -1,
			"missing: the MANIFEST's log number says this WAL holds the writes no table holds yet")
	}
	return c.checkLogs(logs, true)
}

// readManifest replays the MANIFEST CURRENT names with Open's own
// replayManifest, setting the DB's counters, and turns what stops Open into
// problems. Unlike Open, it also takes a torn last record for a problem: a
// crash during a version change leaves one, and so does damage to the last
// record, and Check cannot tell them apart. whole says whether the MANIFEST
// read without a problem, so that v is the store's version.
func (c *checker) readManifest(hasCurrent bool) (v *manifest.Version, whole bool, err error) {
	db := c.db
	if !hasCurrent {
		c.problem(db.fileName(fileTypeCurrent, 0), -1, "missing, though the directory holds tables or WALs")
		return nil, false, nil
	}
	num, err := db.readCurrent()
	if err == nil {
		var cutOff string
		v, cutOff, err = db.replayManifest(num)
		if err == nil && cutOff != "" {
			err = base.CorruptionErrorf(db.fileName(fileTypeManifest, num), -1,
				"%s: a version change a crash interrupted, or damage to its last record", cutOff)
		}
	}
	switch {
	case errors.Is(err, base.ErrCorruption):
		c.problems = append(c.problems, err)
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return v, true, nil
}

// checkTable checks table num, which the MANIFEST describes by meta (nil
// when the MANIFEST could not be read).
func (c *checker) checkTable(num uint64, meta *manifest.FileMeta) error {
	db := c.db
	name := db.fileName(fileTypeTable, num)
	open := meta
	if open == nil {
		open = &manifest.FileMeta{FileNum: num}
	}
	t, err := db.openTable(open)
	if errors.Is(err, base.ErrCorruption) {
		c.problems = append(c.problems, err)
		return nil
	}
	if err != nil {
		return err
	}
	defer t.reader.Close()
	if meta != nil {
		info, err := db.fs.Stat(name)
		if err != nil {
			return err
		}
		p := t.reader.Properties()
		switch {
		case num >= db.nextFileNum:
			c.problem(name, -1, "is numbered at or above the MANIFEST's next file number, %d", db.nextFileNum)
		case uint64(info.Size()) != meta.Size:
			c.problem(name, -1, "is %d bytes, the MANIFEST says %d", info.Size(), meta.Size)
		case p.NumEntries == 0 && p.NumRangeDels == 0:
			c.problem(name, -1, "holds no entry and no range tombstone, but is in the MANIFEST")
		case base.Compare(p.Smallest, meta.Smallest) != 0 || base.Compare(p.Largest, meta.Largest) != 0:
			c.problem(name, -1, "holds keys %s to %s, the MANIFEST says %s to %s", p.Smallest, p.Largest, meta.Smallest, meta.Largest)
		case p.SmallestSeq != meta.SmallestSeq || p.LargestSeq != meta.LargestSeq:
			c.problem(name, -1, "holds sequence numbers %d to %d, the MANIFEST says %d to %d", p.SmallestSeq, p.LargestSeq, meta.SmallestSeq, meta.LargestSeq)
		case p.LargestSeq > db.lastSeq:
			c.problem(name, -1, "holds sequence number %d, above the last one the MANIFEST records (%d)", p.LargestSeq, db.lastSeq)
		}
	}
	problems, err := t.reader.Verify(nil)
	c.problems = append(c.problems, problems...)
	return err
}

// checkLogs reads the WALs nums, oldest first, record by record. With
// live set, nums are the live WALs (the MANIFEST's log number and after),
// whose batches go on from one to the next, as Open requires: a gap is a
// batch or a WAL missing. Otherwise (the MANIFEST does not read whole)
// nums are every WAL present, those of memtables already flushed included,
// and a gap means nothing.
func (c *checker) checkLogs(nums []uint64, live bool) error {
	var last base.SeqNum // of the previous batch
	// follows is whether the next batch must start at last+1: the WALs are
	// live and no problem since the previous batch leaves what came
	// between them unknown. atStart is whether the next batch must start at
	// or below the MANIFEST's last sequence number + 1: the WALs are live
	// and no batch or problem came before it.
	follows, atStart := false, live
	var empty []string // while atStart: the WALs read, which hold no write
	newest, err := c.db.newestLog(nums)
	if err != nil {
		return err
	}
	for i, num := range nums {
		name := c.db.fileName(fileTypeLog, num)
		f, err := c.db.fs.Open(name)
		if err != nil {
			return err
		}
		r := wal.NewReader(f, name)
		firstInLog := true
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if errors.Is(err, base.ErrCorruption) {
				c.problems = append(c.problems, err)
				follows, atStart = false, false
				break
			}
			if err != nil {
				f.Close()
				return err
			}
			first, n, err := decodeBatch(rec, name, r.Offset(), func(batchEntry) {})
			switch {
			case err != nil:
				c.problems = append(c.problems, err)
			case n == 0:
			case atStart:
				// Open's rule (replayLogs): the first live WAL with
				// records starts where the MANIFEST leaves off.
				if err := logStartError(name, first, 0, c.db.lastSeq, empty); err != nil {
					c.problems = append(c.problems, err)
				}
			case first <= last:
				c.problem(name, r.Offset(), "batch starts at sequence number %d, not after the previous batch's %d", first, last)
			case follows && firstInLog:
				// Open's rule: each WAL goes on from the one before it,
				// so a gap is a WAL gone with its writes.
				if err := logStartError(name, first, last, c.db.lastSeq, nil); err != nil {
					c.problems = append(c.problems, err)
				}
			case follows && first != last+1:
				c.problem(name, r.Offset(), "batch at sequence number %d follows one ending at %d", first, last)
			}
			if err != nil {
				follows, atStart = false, false
			} else if n > 0 {
				last, follows, firstInLog, atStart = first+base.SeqNum(n)-1, live, false, false
			}
		}
		if atStart {
			empty = append(empty, name)
		}
		if off, torn := r.TornTail(); torn && i < newest {
			c.problem(name, off, "ends in a torn record, but a newer WAL with bytes in it follows it")
			follows, atStart = false, false
		}
		f.Close()
	}
	return nil
}
