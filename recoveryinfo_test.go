package shale

import (
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestRecovery: DB.Recovery counts the WALs, batches and writes Open
// replayed, the sequence number it reached, and a torn tail it cut off.
func TestRecovery(t *testing.T) {
	fs := vfs.NewMem()
	open := func(fs *vfs.MemFS, noSync bool) *DB {
		t.Helper()
		db, err := Open("db", &Options{FS: fs, NoSync: noSync})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	check := func(db *DB, want RecoveryInfo) {
		t.Helper()
		if got := db.Recovery(); got != want {
			t.Errorf("Recovery() = %+v, want %+v", got, want)
		}
	}
	put := func(db *DB, keys ...string) {
		t.Helper()
		b := db.NewBatch()
		for _, k := range keys {
			b.Put([]byte(k), []byte("v"))
		}
		if err := db.Apply(b); err != nil {
			t.Fatal(err)
		}
	}

	db := open(fs, false)
	check(db, RecoveryInfo{})
	put(db, "a")
	put(db, "b")
	put(db, "c", "d")
	crash := func(db *DB, clone func(*vfs.MemFS) *vfs.MemFS) *vfs.MemFS {
		t.Helper()
		c := clone(db.opts.FS.(*vfs.MemFS))
		if err := db.Close(); err != nil { // writes only to the file system the crash replaced
			t.Fatal(err)
		}
		return c
	}
	fs = crash(db, (*vfs.MemFS).CrashClone)
	db = open(fs, false)
	check(db, RecoveryInfo{WALs: 1, Batches: 3, Entries: 4, LastSeqNum: 4})

	// Replayed writes are flushed at Open: the next recovery replays only
	// what came after, and reaches the sequence number of both.
	put(db, "e")
	fs = crash(db, (*vfs.MemFS).CrashClone)
	db = open(fs, true)
	check(db, RecoveryInfo{WALs: 1, Batches: 1, Entries: 1, LastSeqNum: 5})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	check(db, RecoveryInfo{})

	// A WAL whose last record a crash cut short: the records before it are
	// replayed, and the cut is reported.
	db = open(fs, true)
	check(db, RecoveryInfo{LastSeqNum: 5})
	put(db, "f")
	put(db, "g", "h")
	logName := db.fileName(fileTypeLog, db.logNum)
	st, err := fs.FileState(logName)
	if err != nil {
		t.Fatal(err)
	}
	crashed := crash(db, (*vfs.MemFS).ProcessCrashClone)
	writeFile(t, crashed, logName, readFile(t, crashed, logName)[:st.Written-5])
	db = open(crashed, true)
	got := db.Recovery()
	if !got.TornTail || got.TornTailAt <= 0 || got.TornTailAt >= st.Written-5 {
		t.Errorf("Recovery() = %+v, want a torn tail cut off inside the %d bytes left", got, st.Written-5)
	}
	got.TornTail, got.TornTailAt = false, 0
	if want := (RecoveryInfo{WALs: 1, Batches: 1, Entries: 1, LastSeqNum: 6}); got != want {
		t.Errorf("Recovery() = %+v, want %+v and a torn tail", got, want)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
