package shale

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/compaction"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/memtable"
	"github.com/shale-db/shale/internal/sstable"
	"github.com/shale-db/shale/internal/wal"
)

// Open opens the store in dir, creating dir and an empty store if needed
// (unless Options.ErrorIfNotExists or ReadOnly). nil opts means the
// defaults. Opening a store that is open read-write, in this process or
// another, fails at once, as does a read-write Open of a store that is open
// read-only (see Options.ReadOnly).
//
// Recovery: read CURRENT and replay the MANIFEST it names, open every live
// table, replay each WAL the MANIFEST does not cover into a memtable, write
// that memtable as an L0 table, start a new WAL and a new MANIFEST, and
// remove every file nothing refers to. Recovery is idempotent: a crash at
// any point of it leaves a directory the next Open recovers to the same
// data (see recover). A read-only Open stops after the replay: the
// replayed memtable stays the DB's memtable, and nothing is written.
func Open(dir string, opts *Options) (*DB, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	db := &DB{
		dir:       dir,
		opts:      o,
		fs:        o.FS,
		flushCh:   make(chan struct{}, 1),
		compactCh: make(chan struct{}, 1),
		retireCh:  make(chan struct{}, 1),
		closing:   make(chan struct{}),
	}
	db.cond.L = &db.mu
	db.tableCache = newTableCache(db.fs, o.MaxOpenFiles, !o.DisableMmapReads)
	db.memSlabs = memtable.NewRecycler(o.MemTableSize)
	if o.BlockCacheSize > 0 {
		db.cache = cache.New(o.BlockCacheSize)
	}
	if o.RowCacheSize > 0 {
		db.rowCache = sstable.NewRowCache(o.RowCacheSize)
	}
	// Refuse before anything is created; recover checks again under the
	// lock, in case another process made or removed a store meanwhile.
	_, err := db.fs.Stat(db.fileName(fileTypeCurrent, 0))
	exists := err == nil
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		err = db.checkStoreExists(exists)
	}
	if err != nil {
		return nil, fmt.Errorf("shale: open %s: %w", dir, err)
	}
	if !o.ReadOnly {
		if err := db.makeDir(dir); err != nil {
			return nil, fmt.Errorf("shale: open %s: %w", dir, err)
		}
	}
	lock, err := db.lockStore()
	if err != nil {
		return nil, fmt.Errorf("shale: open %s: %w", dir, err)
	}
	db.lock = lock
	start := time.Now()
	if err := db.recover(); err != nil {
		if db.current != nil {
			db.current.unref()
		}
		db.releaseMemTables()
		db.releaseRetired(true)
		db.memSlabs.Close()
		if db.log != nil {
			db.log.Close()
		}
		if db.manifest != nil {
			db.manifest.Close()
		}
		lock.Close()
		return nil, err
	}
	db.logf("opened %s in %v: %s", dir, time.Since(start), db.current.Version.String())
	db.mu.Lock()
	db.publishReadState() // the first: it replaces none
	db.mu.Unlock()
	db.bgWG.Add(1)
	go db.deleteLoop()
	if !o.ReadOnly {
		db.bgWG.Add(2)
		go db.flushLoop()
		go db.compactLoop()
		db.maybeScheduleCompaction()
	}
	return db, nil
}

// checkStoreExists applies Options.ErrorIfNotExists, ErrorIfExists and
// ReadOnly's need of a store, given whether the directory holds one (a
// CURRENT file). A directory without CURRENT that holds a store's tables
// or WALs is a store that lost its CURRENT, in every mode: that is the
// corruption error failedCreate returns, not "no store here".
func (db *DB) checkStoreExists(exists bool) error {
	if exists {
		if db.opts.ErrorIfExists {
			return fmt.Errorf("a store is here, and Options.ErrorIfExists is set: %w", fs.ErrExist)
		}
		return nil
	}
	if names, err := db.fs.List(db.dir); err == nil {
		if _, err := db.failedCreate(names); err != nil {
			return err
		}
	}
	if db.opts.ReadOnly || db.opts.ErrorIfNotExists {
		return fmt.Errorf("no store here (no CURRENT file), and a read-only open or Options.ErrorIfNotExists creates none: %w", fs.ErrNotExist)
	}
	return nil
}

// lockStore takes the store's LOCK: exclusively, creating the file if
// needed; or, for a read-only open, shared, which creates nothing. A
// read-only open of a store without a LOCK file takes no lock (see
// Options.ReadOnly): the store was copied without it, and making one would
// write to the directory.
func (db *DB) lockStore() (io.Closer, error) {
	name := db.fileName(fileTypeLock, 0)
	if !db.opts.ReadOnly {
		return db.fs.Lock(name)
	}
	l, err := db.fs.LockShared(name)
	if errors.Is(err, fs.ErrNotExist) {
		db.logf("%s is absent: opened read-only without a lock", name)
		return noLock{}, nil
	}
	return l, err
}

// noLock is the lock of a read-only open of a store without a LOCK file.
type noLock struct{}

func (noLock) Close() error { return nil }

// makeDir creates dir and any missing parents, and makes each new
// directory's entry durable by syncing the directory that holds it: syncing
// a file makes its data and its own entry durable, not the directories on
// its path, so without this a power loss could take a new store away whole,
// with every write it had acknowledged as synced.
func (db *DB) makeDir(dir string) error {
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		_, err := db.fs.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		made = append(made, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := db.fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range slices.Backward(made) {
		if err := db.fs.SyncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// recover rebuilds the DB's state from the directory; see Open.
//
// Missing WALs. A WAL holds writes no table holds yet, so one that is gone
// loses them silently unless recovery notices. Two checks catch it: the WAL
// the MANIFEST names as its log number must be present, and the sequence
// numbers must run on without a gap from the MANIFEST to the first WAL with
// records and from each WAL to the next (the first starts at or below the
// MANIFEST's last sequence number + 1, every later WAL with records at the
// sequence number after the last one of the WAL before it, as the commit
// pipeline assigns them), which also catches a WAL emptied. We chose this
// over recording each WAL's creation in the MANIFEST, as RocksDB can: it
// needs no MANIFEST write (and sync) on the commit path at every memtable
// rotation, and no new record type. What it cannot see is the newest WAL
// with records missing or emptied whole when it was not the first live
// one; file numbers, shared with tables and MANIFESTs, cannot tell that
// either.
//
// Idempotence. Until the new CURRENT is durable, the directory must still
// recover as before, so recovery first writes the replayed memtable as a
// table (an orphan if a crash follows, deleted by the next Open), and only
// then creates the new WAL, whose directory entry becomes durable in the
// same directory sync as the new MANIFEST's and CURRENT's. Had the new,
// empty WAL become durable first, a crash would leave the replayed WAL,
// with its torn tail, no longer the newest. Some file systems make a new
// name durable with any later fsync (ext4 commits its journal whole), so
// the WAL allowed a torn tail is the newest one with any bytes: an empty
// WAL after it holds nothing a torn tail could have been followed by.
func (db *DB) recover() error {
	names, err := db.fs.List(db.dir)
	if err != nil {
		return err
	}
	v := &manifest.Version{}
	db.nextFileNum = 1
	cutOff := ""
	hasCurrent := slices.Contains(names, "CURRENT")
	if err := db.checkStoreExists(hasCurrent); err != nil {
		return fmt.Errorf("shale: open %s: %w", db.dir, err)
	}
	if hasCurrent {
		num, err := db.readCurrent()
		if err != nil {
			return err
		}
		if v, cutOff, err = db.replayManifest(num); err != nil {
			return err
		}
	} else {
		if err := db.clearFailedCreate(names); err != nil {
			return err
		}
		names = nil // a new store: nothing to replay
	}
	// missing explains a file the version needs that is not there: if the
	// MANIFEST's end was cut off, that was most likely an edit damaged after
	// it took effect, not a torn one (see replayManifest).
	missing := func(err error) error {
		if cutOff != "" {
			return fmt.Errorf("%w (%s; if that was an edit damaged after it took effect, this file is what it made obsolete)", err, cutOff)
		}
		return err
	}

	tables := map[uint64]*table{}
	for level := range v.Levels {
		for _, f := range v.Levels[level] {
			t, err := db.openTable(f)
			if err != nil {
				closeTables(slices.Collect(maps.Values(tables)))
				return missing(err)
			}
			tables[f.FileNum] = t
		}
	}
	db.current = newVersion(v, tables)

	for _, name := range names {
		if _, num, ok := parseFileName(name); ok {
			db.nextFileNum = max(db.nextFileNum, num+1)
		}
	}
	mem := memtable.New()
	if err := db.replayLogs(names, missing, mem); err != nil {
		mem.Free()
		return err
	}
	db.visibleSeq.Store(uint64(db.lastSeq))
	db.recovery.LastSeqNum = uint64(db.lastSeq)
	if db.opts.ReadOnly {
		// The replayed writes stay in memory, in the DB's memtable: a
		// read-only DB writes no table, WAL or MANIFEST, and removes
		// nothing.
		db.mem = &memTable{MemTable: mem, logNum: db.logNum, db: db}
		db.mem.refs.Store(1)
		return nil
	}
	defer mem.Free() // flushed below, or dropped with the failed Open

	// Flush what was replayed, then start the new WAL and MANIFEST.
	logNum := db.nextFileNum
	db.nextFileNum++
	edit := &manifest.VersionEdit{LogNum: logNum}
	var newTables []*table
	if !mem.Empty() {
		t, err := db.writeL0(mem, TableRecovery)
		if err != nil {
			return err
		}
		edit.Added = append(edit.Added, manifest.NewFile{Level: 0, Meta: t.meta})
		newTables = append(newTables, t)
	}
	nv, err := db.startLogAndManifest(v, edit)
	if err != nil {
		// The new tables are in no version: close them. Their files stay
		// (CURRENT may name them if only its directory sync failed); if
		// CURRENT does not, the next Open deletes them.
		closeTables(newTables)
		return err
	}
	all := maps.Clone(tables)
	for _, t := range newTables {
		all[t.meta.FileNum] = t
	}
	old := db.current
	db.current = newVersion(nv, all)
	db.logNum = logNum
	old.unref()
	db.deleteObsoleteFiles(names)
	return nil
}

// replayLogs replays into mem the WALs the MANIFEST does not cover, oldest
// first, of the files Open found (names), and checks that none is missing
// (see recover); missing adds what the MANIFEST replay knows to such an
// error.
func (db *DB) replayLogs(names []string, missing func(error) error, mem *memtable.MemTable) error {
	var logs []uint64
	for _, name := range names {
		if t, num, ok := parseFileName(name); ok && t == fileTypeLog && num >= db.logNum {
			logs = append(logs, num)
		}
	}
	slices.Sort(logs)
	if db.logNum != 0 && (len(logs) == 0 || logs[0] != db.logNum) {
		return missing(base.CorruptionErrorf(db.fileName(fileTypeLog, db.logNum), -1,
			"the WAL the MANIFEST names as its log number is missing"))
	}
	newest, err := db.newestLog(logs)
	if err != nil {
		return err
	}
	manifestLast := db.lastSeq
	var prevLast base.SeqNum // of the last WAL with records; 0 before it
	var empty []string       // the WALs before the first with records
	for i, num := range logs {
		name := db.fileName(fileTypeLog, num)
		first, last, err := db.replayLog(num, mem, i >= newest)
		if err != nil {
			return err
		}
		if first == 0 {
			empty = append(empty, name) // no records: empty, or all of it a torn tail
			continue
		}
		db.recovery.WALs++
		if err := logStartError(name, first, prevLast, manifestLast, empty); err != nil {
			return missing(err)
		}
		prevLast = last
	}
	return nil
}

// logStartError checks where a live WAL (file name) whose first batch has
// sequence number first starts, after the live WALs before it, the last of
// which with records ended at prevLast (0 if none had any, and then empty
// names those before it), in a store whose MANIFEST records manifestLast as
// its last sequence number. The first WAL with records must start at or
// below manifestLast+1: the writes before it are in tables, and the
// MANIFEST's last sequence number, recorded when the memtable before the
// first live WAL's was flushed, or later, is at least the last of them.
// Every later one must go on from the one before. Either gap is writes
// gone: a WAL missing, or one emptied (a WAL a newer one follows was synced
// whole before the newer one took a write), and it returns a corruption
// error naming the WAL after the gap and those before it without records.
func logStartError(name string, first, prevLast, manifestLast base.SeqNum, empty []string) error {
	switch {
	case prevLast == 0 && first > manifestLast+1 && len(empty) > 0:
		return base.CorruptionErrorf(name, 0,
			"the log starts at sequence number %d, but the MANIFEST's last sequence number is %d and the live WALs before it hold no write (%s): their writes are missing, the WALs emptied",
			first, manifestLast, strings.Join(empty, ", "))
	case prevLast == 0 && first > manifestLast+1:
		return base.CorruptionErrorf(name, 0,
			"the log starts at sequence number %d, but the MANIFEST's last sequence number is %d: the writes between them are missing", first, manifestLast)
	case prevLast != 0 && first != prevLast+1:
		return base.CorruptionErrorf(name, 0,
			"the log starts at sequence number %d, but the log before it ends at %d: a WAL between them is missing", first, prevLast)
	}
	return nil
}

// startLogAndManifest creates the new WAL edit.LogNum and a new MANIFEST
// holding v with edit applied, points CURRENT at it and returns that
// version.
func (db *DB) startLogAndManifest(v *manifest.Version, edit *manifest.VersionEdit) (*manifest.Version, error) {
	nv, err := v.Apply(edit)
	if err != nil {
		return nil, err
	}
	f, err := db.fs.Create(db.fileName(fileTypeLog, edit.LogNum))
	if err != nil {
		return nil, err
	}
	db.walCreated(edit.LogNum)
	db.log = db.newWALWriter(f)
	db.mem = db.newMemTable(edit.LogNum)
	db.mem.firstSeq = db.lastSeq + 1
	edit.LastSeqNum = db.lastSeq
	return nv, db.createManifest(nv, edit)
}

// clearFailedCreate prepares a directory without CURRENT, holding names,
// for a new store: it removes the leftovers failedCreate finds, or returns
// its error.
func (db *DB) clearFailedCreate(names []string) error {
	leftovers, err := db.failedCreate(names)
	if err != nil {
		return err
	}
	for _, path := range leftovers {
		if err := db.fs.Remove(path); err != nil {
			return err
		}
	}
	return nil
}

// failedCreate sorts the files (names) of a directory without CURRENT. A
// first Open that crashed before it wrote CURRENT leaves an empty WAL and
// a MANIFEST behind; no write was ever acknowledged there (Open had not
// returned), so they are leftovers, whose paths it returns. Anything else
// of a store's, a table or a WAL with bytes, means CURRENT was lost, or is
// a checkpoint that never got its CURRENT (DB.Checkpoint writes it last,
// and every WAL it writes has bytes): that is not a store to start afresh
// over, and it returns a corruption error.
func (db *DB) failedCreate(names []string) ([]string, error) {
	var leftovers []string
	for _, name := range names {
		t, _, ok := parseFileName(name)
		if !ok || t == fileTypeLock {
			continue
		}
		path := db.fs.PathJoin(db.dir, name)
		empty := false
		if t == fileTypeLog {
			info, err := db.fs.Stat(path)
			if err != nil {
				return nil, err
			}
			empty = info.Size() == 0
		}
		if t == fileTypeTable || t == fileTypeLog && !empty {
			return nil, base.CorruptionErrorf(path, -1, "%s has no CURRENT, but holds %s (CURRENT was lost, or a checkpoint did not finish)", db.dir, name)
		}
		leftovers = append(leftovers, path)
	}
	return leftovers, nil
}

// newestLog returns the index in nums (WAL numbers, oldest first) of the
// last WAL with any bytes, 0 if none has any: the one WAL that may end in a
// torn tail (see recover).
func (db *DB) newestLog(nums []uint64) (int, error) {
	newest := 0
	for i, num := range nums {
		info, err := db.fs.Stat(db.fileName(fileTypeLog, num))
		if err != nil {
			return 0, err
		}
		if info.Size() > 0 {
			newest = i
		}
	}
	return newest, nil
}

// replayLog applies every batch in WAL num to mem and returns the first and
// last sequence numbers it holds (0, 0 if none). In the newest WAL with
// bytes (newest) a torn tail (the crash interrupted the last write) ends
// the log. Older WALs were synced whole before the next one was created,
// so a torn tail there, or anything else that does not decode, is
// corruption and stops the open: replaying later WALs past a gap would
// break the order of writes. A WAL a memtable rotation left behind also
// ends in an end marker (see startWAL), which claims every byte before it:
// damage there is corruption too, even in the newest WAL with bytes, where
// a power loss right after the rotation leaves it before an empty WAL.
func (db *DB) replayLog(num uint64, mem *memtable.MemTable, newest bool) (first, last base.SeqNum, err error) {
	name := db.fileName(fileTypeLog, num)
	f, err := db.fs.Open(name)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r := wal.NewReader(f, name)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, 0, err
		}
		seq, n, err := decodeBatch(rec, name, r.Offset(), func(e batchEntry) {
			mem.Add(e.Seq, e.Kind, e.Key, e.Value)
		})
		if err != nil {
			return 0, 0, err
		}
		if n == 0 {
			continue
		}
		db.recovery.Batches++
		db.recovery.Entries += n
		if first == 0 {
			first = seq
		} else if seq != last+1 {
			return 0, 0, base.CorruptionErrorf(name, r.Offset(), "batch at sequence number %d follows one ending at %d", seq, last)
		}
		last = seq + base.SeqNum(n) - 1
		db.lastSeq = max(db.lastSeq, last)
	}
	if off, torn := r.TornTail(); torn {
		if !newest {
			return 0, 0, base.CorruptionErrorf(name, off, "log ends in a torn record, but a newer log follows it")
		}
		if r.CutOff() {
			db.recovery.TornTail, db.recovery.TornTailAt = true, off
			db.logf("%s: torn tail at offset %d cut off (a write the crash interrupted)", name, off)
		} else {
			db.logf("%s: ends at offset %d in whole records whose COMMIT was not due yet, or in zeros allocated ahead of a mapped log; nothing cut off", name, off)
		}
	}
	return first, last, nil
}

// openTable opens a live table's reader, with its filter and index loaded,
// and sets meta's entry counts from its properties. meta must not yet be in
// a version another goroutine can see: Open, Check and Repair open tables
// before they publish a version, flushes and compactions their new tables
// before they install them.
func (db *DB) openTable(meta *manifest.FileMeta) (*table, error) {
	name := db.fileName(fileTypeTable, meta.FileNum)
	f, err := db.tableCache.openFile(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, base.CorruptionErrorf(name, -1, "table in the MANIFEST is missing")
		}
		return nil, err
	}
	opts := sstable.ReaderOptions{
		FileNum:  meta.FileNum,
		Cache:    db.cache,
		RowCache: db.rowCache,
		Filters:  knownFilters,
		Stats:    &db.tableStats,
	}
	if rf := db.opts.RangeFilter; rf != nil {
		opts.RangeFilterMap = rf.Map
	}
	t := &table{meta: meta, db: db}
	if !db.opts.DisableReadCompactions {
		// The table's allowance depends on what a merge of it would
		// rewrite, which changes with the level below, and is never less
		// than the allowance of the table alone. So once the count
		// reaches that least allowance it wakes the compactions every
		// tenth of it, and the picker, which knows the level below, takes
		// the table when its count has reached the whole allowance and
		// nothing else is due: at most a tenth of the least allowance
		// late (10 wasted reads for a 2 MiB table).
		least := compaction.ReadAllowance(meta.Size)
		step := max(least/10, 1)
		opts.OnWastedRead = func() {
			if n := t.wastedReads.Add(1); n >= least && n%step == 0 {
				db.maybeScheduleCompaction()
			}
		}
	}
	r, err := sstable.Open(f, name, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	f.tableOpened()
	props := r.Properties()
	meta.Entries, meta.Deletions = props.NumEntries, props.NumDeletions
	t.reader = r
	return t, nil
}

// deleteObsoleteFiles removes, of the files Open found (names), what no
// version, WAL or MANIFEST refers to any more: tables not in the current
// version, WALs below the log number, other MANIFESTs and temp files. Files
// Open created since are all live. Run only at Open, before anything else
// can be using the files.
func (db *DB) deleteObsoleteFiles(names []string) {
	for _, name := range names {
		t, num, ok := parseFileName(name)
		if !ok {
			continue
		}
		var obsolete bool
		switch t {
		case fileTypeLog:
			obsolete = num < db.logNum
		case fileTypeTable:
			_, live := db.current.tables[num]
			obsolete = !live
		case fileTypeManifest:
			obsolete = num != db.manifestNum
		case fileTypeTemp:
			obsolete = true
		}
		if !obsolete {
			continue
		}
		var err error
		if t == fileTypeTable || t == fileTypeLog {
			err = db.removeFile(t, num, TableObsolete) // tells the listener
		} else {
			err = db.fs.Remove(db.fs.PathJoin(db.dir, name))
		}
		if err != nil {
			db.logf("removing %s: %v", name, err)
		}
	}
}
