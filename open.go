package shale

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"time"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/memtable"
	"github.com/shale-db/shale/internal/sstable"
	"github.com/shale-db/shale/internal/wal"
)

// Open opens the store in dir, creating dir and an empty store if needed.
// nil opts means the defaults. Opening a store that is open, in this process
// or another, fails at once.
//
// Recovery: read CURRENT and replay the MANIFEST it names, open every live
// table, replay each WAL the MANIFEST does not cover into a memtable, write
// that memtable as an L0 table, start a new WAL and a new MANIFEST, and
// remove every file nothing refers to.
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
		closing:   make(chan struct{}),
	}
	db.cond.L = &db.mu
	if o.BlockCacheSize > 0 {
		db.cache = cache.New(o.BlockCacheSize)
	}
	if o.RowCacheSize > 0 {
		db.rowCache = sstable.NewRowCache(o.RowCacheSize)
	}
	if err := db.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shale: open %s: %w", dir, err)
	}
	lock, err := db.fs.Lock(db.fileName(fileTypeLock, 0))
	if err != nil {
		return nil, fmt.Errorf("shale: open %s: %w", dir, err)
	}
	db.lock = lock
	start := time.Now()
	if err := db.recover(); err != nil {
		if db.current != nil {
			db.current.unref()
		}
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
	db.bgWG.Add(2)
	go db.flushLoop()
	go db.compactLoop()
	db.maybeScheduleCompaction()
	return db, nil
}

func (db *DB) recover() error {
	names, err := db.fs.List(db.dir)
	if err != nil {
		return err
	}
	v := &manifest.Version{}
	db.nextFileNum = 1
	if slices.Contains(names, "CURRENT") {
		num, err := db.readCurrent()
		if err != nil {
			return err
		}
		if v, err = db.replayManifest(num); err != nil {
			return err
		}
	} else {
		if err := db.clearFailedCreate(names); err != nil {
			return err
		}
		names = nil // a new store: nothing to replay
	}

	tables := map[uint64]*table{}
	for level := range v.Levels {
		for _, f := range v.Levels[level] {
			t, err := db.openTable(f)
			if err != nil {
				for _, t := range tables {
					t.reader.Close()
				}
				return err
			}
			tables[f.FileNum] = t
		}
	}
	db.current = newVersion(v, tables)

	// Replay the WALs the MANIFEST does not cover, oldest first.
	var logs []uint64
	for _, name := range names {
		t, num, ok := parseFileName(name)
		if !ok {
			continue
		}
		db.nextFileNum = max(db.nextFileNum, num+1)
		if t == fileTypeLog && num >= db.logNum {
			logs = append(logs, num)
		}
	}
	slices.Sort(logs)
	mem := memtable.New()
	for i, num := range logs {
		if err := db.replayLog(num, mem, i == len(logs)-1); err != nil {
			return err
		}
	}
	db.visibleSeq.Store(uint64(db.lastSeq))

	// Start the new WAL, then flush what was replayed.
	logNum := db.nextFileNum
	db.nextFileNum++
	f, err := db.fs.Create(db.fileName(fileTypeLog, logNum))
	if err != nil {
		return err
	}
	db.log = wal.NewWriter(f)
	db.mem = &memTable{MemTable: memtable.New(), logNum: logNum}
	edit := &manifest.VersionEdit{LogNum: logNum}
	var newTables []*table
	if !mem.Empty() {
		t, err := db.writeL0(mem)
		if err != nil {
			return err
		}
		edit.Added = append(edit.Added, manifest.NewFile{Level: 0, Meta: t.meta})
		newTables = append(newTables, t)
	}
	nv, err := v.Apply(edit)
	if err != nil {
		return err
	}
	edit.LastSeqNum = db.lastSeq
	if err := db.createManifest(nv, edit); err != nil {
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

// clearFailedCreate prepares a directory without CURRENT for a new store.
// A first Open that crashed before it wrote CURRENT leaves an empty WAL and
// a MANIFEST behind; no write was ever acknowledged there (Open had not
// returned), so they are removed. Anything else of a store's, a table or a
// WAL with records, means CURRENT was lost: that is not a store to start
// afresh over.
func (db *DB) clearFailedCreate(names []string) error {
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
				return err
			}
			empty = info.Size() == 0
		}
		if t == fileTypeTable || t == fileTypeLog && !empty {
			return base.CorruptionErrorf(path, -1, "%s has no CURRENT, but holds %s", db.dir, name)
		}
		leftovers = append(leftovers, path)
	}
	for _, path := range leftovers {
		if err := db.fs.Remove(path); err != nil {
			return err
		}
	}
	return nil
}

// replayLog applies every batch in WAL num to mem. In the newest WAL a torn
// tail (the crash interrupted the last write) ends the log. Older WALs were
// synced whole before the next one started, so a torn tail there, or
// anything else that does not decode, is corruption and stops the open:
// replaying later WALs past a gap would break the order of writes.
func (db *DB) replayLog(num uint64, mem *memtable.MemTable, newest bool) error {
	name := db.fileName(fileTypeLog, num)
	f, err := db.fs.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	r := wal.NewReader(f, name)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		first, n, err := decodeBatch(rec, name, r.Offset(), func(e batchEntry) {
			mem.Add(e.Seq, e.Kind, e.Key, e.Value)
		})
		if err != nil {
			return err
		}
		if n > 0 {
			db.lastSeq = max(db.lastSeq, first+base.SeqNum(n)-1)
		}
	}
	if off, torn := r.TornTail(); torn {
		if !newest {
			return base.CorruptionErrorf(name, off, "log ends in a torn record, but a newer log follows it")
		}
		db.logf("%s: torn tail at offset %d cut off (a write the crash interrupted)", name, off)
	}
	return nil
}

// openTable opens a live table's reader, with its filter and index loaded.
func (db *DB) openTable(meta *manifest.FileMeta) (*table, error) {
	name := db.fileName(fileTypeTable, meta.FileNum)
	f, err := db.fs.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, base.CorruptionErrorf(name, -1, "table in the MANIFEST is missing")
		}
		return nil, err
	}
	r, err := sstable.Open(f, name, sstable.ReaderOptions{
		FileNum:  meta.FileNum,
		Cache:    db.cache,
		RowCache: db.rowCache,
		Filters:  knownFilters,
		Stats:    &db.tableStats,
	})
	if err != nil {
		f.Close()
		return nil, err
	}
	return &table{meta: meta, reader: r, db: db}, nil
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
		if obsolete {
			if err := db.fs.Remove(db.fs.PathJoin(db.dir, name)); err != nil {
				db.logf("removing %s: %v", name, err)
			}
		}
	}
}
