package shale

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// filesOf returns the paths of the files of type typ in dir, sorted.
func filesOf(t *testing.T, fs vfs.FS, dir string, typ fileType) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range names {
		if ft, _, ok := parseFileName(name); ok && ft == typ {
			out = append(out, fs.PathJoin(dir, name))
		}
	}
	return out
}

// newestOf returns the path of the newest file of type typ in dir.
func newestOf(t *testing.T, fs vfs.FS, dir string, typ fileType) string {
	t.Helper()
	files := filesOf(t, fs, dir, typ)
	if len(files) == 0 {
		t.Fatalf("no file of type %d in %s", typ, dir)
	}
	return files[len(files)-1]
}

func listDir(t *testing.T, fs vfs.FS, dir string) string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(slices.DeleteFunc(names, func(n string) bool { return n == "LOCK" }), " ")
}

// wantOpenCorruption opens dir on fs, expects ErrCorruption naming each of
// files, and checks that Open deleted nothing.
func wantOpenCorruption(t *testing.T, fs vfs.FS, files ...string) {
	t.Helper()
	before := listDir(t, fs, "db")
	db, err := Open("db", &Options{FS: fs})
	if err == nil {
		db.Close()
		t.Fatalf("Open succeeded, want ErrCorruption naming %v", files)
	}
	if !errors.Is(err, ErrCorruption) {
		t.Fatalf("Open: %v, want ErrCorruption", err)
	}
	for _, f := range files {
		if !strings.Contains(err.Error(), filepath.Base(f)) {
			t.Fatalf("Open: %v, want an error naming %s", err, filepath.Base(f))
		}
	}
	if after := listDir(t, fs, "db"); after != before {
		t.Fatalf("a failed Open changed the directory:\nbefore %s\nafter  %s", before, after)
	}
}

// holdFlushes wraps mem in an ErrorFS that holds every table's creation
// until release is closed, so that each full memtable keeps its WAL. A test
// that fails before the release leaves the flush held, and its store open.
func holdFlushes(mem *vfs.MemFS) (efs *vfs.ErrorFS, release chan struct{}) {
	efs = vfs.NewErrorFS(mem)
	release = make(chan struct{})
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpCreate && strings.HasSuffix(path, ".sst") {
			<-release
		}
		return nil
	})
	return efs, release
}

// wantData checks that db maps each key of want to its value ("" for absent).
func wantData(t *testing.T, db *DB, want map[string]string) {
	t.Helper()
	for k, w := range want {
		v, err := db.Get([]byte(k))
		switch {
		case w == "" && !errors.Is(err, ErrNotFound):
			t.Fatalf("Get(%s) = %q, %v, want not found", k, v, err)
		case w != "" && (err != nil || string(v) != w):
			t.Fatalf("Get(%s) = %q, %v, want %q", k, v, err, w)
		}
	}
}

// walCommitSize is the size of a COMMIT fragment (internal/wal/writer.go).
// A log written with Sync, as these tests' are, ends every group with one,
// so its last record ends just before the last COMMIT.
const walCommitSize = 27

// walEndSize is the size of the END fragment that ends a log closed
// cleanly (internal/wal/writer.go).
const walEndSize = 23

func putN(t *testing.T, db *DB, from, to int, value string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for i := from; i < to; i++ {
		k, v := fmt.Sprintf("key%03d", i), fmt.Sprintf("%s%03d", value, i)
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	return m
}

// TestManifestOnlyRecordDamaged: a MANIFEST whose only record (the snapshot
// Open wrote) is damaged, or that is empty or cut short, is corruption, and
// Open deletes no table (it used to take the damage for a torn write, open
// an empty version and delete every table as obsolete).
//
// (A damaged COMMIT or END fragment after an intact record loses nothing:
// the record is read, and the damage is cut off as a torn write.)
func TestManifestOnlyRecordDamaged(t *testing.T) {
	build := func(t *testing.T) *vfs.MemFS {
		fs := vfs.NewMem()
		db := mustOpen(t, "db", &Options{FS: fs})
		putN(t, db, 0, 100, "v")
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		db.Close()
		db = mustOpen(t, "db", &Options{FS: fs})
		defer db.Close()
		return fs.CrashClone() // the new MANIFEST holds its snapshot only
	}
	for name, damage := range map[string]func([]byte) []byte{
		// The record's last byte: the group's COMMIT fragment follows it.
		"last byte flipped": func(b []byte) []byte { b[len(b)-walCommitSize-1] ^= 0x40; return b },
		"empty":             func(b []byte) []byte { return nil },
		"cut in half":       func(b []byte) []byte { return b[:len(b)/2] },
	} {
		t.Run(name, func(t *testing.T) {
			fs := build(t)
			m := newestOf(t, fs, "db", fileTypeManifest)
			writeFile(t, fs, m, damage(readFile(t, fs, m)))
			wantOpenCorruption(t, fs, m)
		})
	}
}

// TestManifestIssueRecipe follows defect 1's recipe on a store closed
// cleanly: put 100 keys, Flush, Close, Open, Close, then damage the
// MANIFEST. Its last bytes are now the END marker Close wrote: a flipped
// byte there cannot be told from an END a crash tore, and loses nothing (the
// record before it is intact), so Open keeps every key and deletes nothing.
// A flipped byte in the record itself is damage that the END proves was
// synced: ErrCorruption naming the MANIFEST, and nothing deleted.
func TestManifestIssueRecipe(t *testing.T) {
	build := func(t *testing.T) (*vfs.MemFS, map[string]string) {
		fs := vfs.NewMem()
		db := mustOpen(t, "db", &Options{FS: fs})
		want := putN(t, db, 0, 100, "v")
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		db.Close()
		mustOpen(t, "db", &Options{FS: fs}).Close()
		return fs, want
	}
	t.Run("last byte", func(t *testing.T) {
		fs, want := build(t)
		m := newestOf(t, fs, "db", fileTypeManifest)
		b := readFile(t, fs, m)
		b[len(b)-1] ^= 0x40
		writeFile(t, fs, m, b)
		tables := filesOf(t, fs, "db", fileTypeTable)
		db := mustOpen(t, "db", &Options{FS: fs})
		defer db.Close()
		wantData(t, db, want)
		if got := filesOf(t, fs, "db", fileTypeTable); !slices.Equal(got, tables) {
			t.Fatalf("tables %v after Open, want %v", got, tables)
		}
	})
	t.Run("record's last byte", func(t *testing.T) {
		fs, _ := build(t)
		m := newestOf(t, fs, "db", fileTypeManifest)
		b := readFile(t, fs, m)
		b[len(b)-walEndSize-walCommitSize-1] ^= 0x40
		writeFile(t, fs, m, b)
		wantOpenCorruption(t, fs, m)
	})
}

// TestManifestDamagedLastEdit: when the MANIFEST ends in damage that cuts
// off a flush's edit, Open may drop the edit as torn only if the version
// before it is whole. Here the flushed WAL is gone (the flush committed and
// deleted it): Open must fail with ErrCorruption naming the WAL and the
// MANIFEST, and delete nothing. With the WAL still there (a crash before the
// commit record), Open recovers the writes from it. A damaged edit followed
// by its intact commit record is corruption whatever files are present.
func TestManifestDamagedLastEdit(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: fs})
	defer db.Close()
	want := putN(t, db, 0, 50, "v")
	m := filesOf(t, fs, "db", fileTypeManifest)[0]
	sizeBefore := len(readFile(t, fs, m))
	oldLog := filesOf(t, fs, "db", fileTypeLog)[0]
	oldLogData := readFile(t, fs, oldLog)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	cut := func(t *testing.T) *vfs.MemFS {
		c := fs.CrashClone()
		writeFile(t, c, m, readFile(t, c, m)[:sizeBefore+3])
		return c
	}
	t.Run("flushed WAL gone", func(t *testing.T) {
		c := cut(t)
		// The flush deleted it; a directory sync made that durable.
		if err := c.Remove(oldLog); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		wantOpenCorruption(t, c, oldLog, m)
	})
	t.Run("committed edit damaged", func(t *testing.T) {
		// The edit's commit record follows it intact: damage to a
		// committed edit is no torn write, even with every file present.
		c := fs.CrashClone()
		b := readFile(t, c, m)
		b[sizeBefore+12] ^= 0x40
		writeFile(t, c, m, b)
		writeFile(t, c, oldLog, oldLogData)
		wantOpenCorruption(t, c, m)
	})
	t.Run("flushed WAL present", func(t *testing.T) {
		c := cut(t)
		writeFile(t, c, oldLog, oldLogData)
		db := mustOpen(t, "db", &Options{FS: c})
		defer db.Close()
		wantData(t, db, want)
	})
}

// TestManifestVersion1: a store written by the previous format (MANIFEST
// edits of format version 1, no commit records) opens with its data; and
// its last edit, cut off, is not taken for a torn one when the WAL it made
// obsolete is gone. The store, in testdata/.manifest-v1-store (a dot name,
// so that TestDataDriven does not take its files for test cases), was
// written by commit e8a2ea6: 20 keys flushed, then 20 in the WAL, 10 of
// them overwriting flushed ones.
func TestManifestVersion1(t *testing.T) {
	load := func(t *testing.T) *vfs.MemFS {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("db", 0o755); err != nil {
			t.Fatal(err)
		}
		src := filepath.Join("testdata", ".manifest-v1-store")
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, fs, "db/"+e.Name(), b)
		}
		return fs
	}
	t.Run("opens", func(t *testing.T) {
		db := mustOpen(t, "db", &Options{FS: load(t)})
		defer db.Close()
		want := map[string]string{}
		for i := range 30 {
			want[fmt.Sprintf("key%02d", i)] = fmt.Sprintf("flushed%02d", i)
			if i >= 10 {
				want[fmt.Sprintf("key%02d", i)] = fmt.Sprintf("logged%02d", i)
			}
		}
		wantData(t, db, want)
	})
	t.Run("last edit cut off", func(t *testing.T) {
		fs := load(t)
		// The snapshot record is 14 bytes with its 7-byte header; cut into
		// the flush edit after it. The WAL before the flush, 000001.log, is
		// long gone.
		writeFile(t, fs, "db/MANIFEST-000002", readFile(t, fs, "db/MANIFEST-000002")[:25])
		wantOpenCorruption(t, fs, "000001.log", "MANIFEST-000002")
	})
}

// tornStore returns a store whose newest WAL ends in a torn write (its
// last record cut short), as a crash leaves it, and the data it holds.
func tornStore(t *testing.T) (*vfs.MemFS, map[string]string) {
	fs := vfs.NewMem()
	// Written with write(2), so that the WAL file ends where its last
	// COMMIT does, not in zeros allocated ahead.
	db := mustOpen(t, "db", &Options{FS: fs, DisableWALMapping: true})
	want := putN(t, db, 0, 40, "flushed")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for k, v := range putN(t, db, 20, 60, "logged") {
		want[k] = v
	}
	c := fs.CrashClone()
	db.Close()
	log := newestOf(t, c, "db", fileTypeLog)
	b := readFile(t, c, log)
	writeFile(t, c, log, b[:len(b)-walCommitSize-3]) // into the last record
	want["key059"] = ""                              // its write is the torn one
	return c, want
}

// TestTornWALBeforeEmptyWAL: a torn WAL followed only by an empty one (a
// recovery's new WAL whose name a crash made durable early) recovers.
func TestTornWALBeforeEmptyWAL(t *testing.T) {
	fs, want := tornStore(t)
	writeFile(t, fs, "db/000999.log", nil)
	db := mustOpen(t, "db", &Options{FS: fs})
	defer db.Close()
	wantData(t, db, want)
}

// crashesDuringOpen opens the store in fs, checks that it holds want, and
// returns the file systems a power loss would leave after each operation
// of that Open that can change the disk, and after the Open.
func crashesDuringOpen(t *testing.T, fs *vfs.MemFS, want map[string]string) []*vfs.MemFS {
	t.Helper()
	efs := vfs.NewErrorFS(fs)
	var crashes []*vfs.MemFS
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op != vfs.OpRead && op != vfs.OpOpen && op != vfs.OpList {
			crashes = append(crashes, fs.CrashClone())
		}
		return nil
	})
	// No background work may touch the file system (and crashes) while
	// the injector is set: nothing to flush, and no compactions.
	db, err := Open("db", &Options{FS: efs, DisableAutomaticCompactions: true})
	efs.SetInjector(nil)
	if err != nil {
		t.Fatal(err)
	}
	crashes = append(crashes, fs.CrashClone())
	wantData(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return crashes
}

// TestRecoveryCrashAtEveryOp: a crash after any file-system operation of a
// recovery (one that starts from a WAL ending in a torn write and flushes
// it) leaves a directory that the next Open recovers to the same data, and
// so does a second crash at any operation of that next Open. Recovery used
// to make the new WAL durable before the new MANIFEST, so that a crash left
// the torn WAL no longer the newest, and the store could not open.
func TestRecoveryCrashAtEveryOp(t *testing.T) {
	start, want := tornStore(t)
	crashes := crashesDuringOpen(t, start, want)
	if len(crashes) < 10 {
		t.Fatalf("only %d crash points in a recovery", len(crashes))
	}
	points := 0
	for i, c := range crashes {
		t.Run(fmt.Sprintf("crash%02d", i), func(t *testing.T) {
			for _, c2 := range crashesDuringOpen(t, c, want) {
				db, err := Open("db", &Options{FS: c2})
				if err != nil {
					t.Fatalf("reopen after a second crash: %v", err)
				}
				wantData(t, db, want)
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				points++
			}
		})
	}
	t.Logf("%d crash points, %d second crash points", len(crashes), points)
}

// TestNoSyncFlushSurvivesPowerLoss: under NoSync, a power loss after a
// flush or compaction leaves a store that opens with the flushed data: the
// MANIFEST never names a table, or a WAL as its log number, whose data or
// directory entry is not durable.
func TestNoSyncFlushSurvivesPowerLoss(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: fs, NoSync: true})
	defer db.Close()
	want := putN(t, db, 0, 30, "a")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		c, err := Open("db", &Options{FS: fs.CrashClone()})
		if err != nil {
			t.Fatalf("power loss after %s: Open: %v", step, err)
		}
		wantData(t, c, want)
		c.Close()
	}
	check("a flush")
	for k, v := range putN(t, db, 10, 40, "b") {
		want[k] = v
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	check("a compaction")
}

// TestMissingWAL: a WAL that holds unflushed writes and is gone fails Open
// with ErrCorruption naming it: the one at the MANIFEST's log number, and
// one in the middle of the sequence (caught by the gap in sequence numbers,
// named by the WAL after the gap), which Check reports the same way: it
// must not call consistent a store whose writes are gone and which Open
// will not open.
func TestMissingWAL(t *testing.T) {
	t.Run("at the log number", func(t *testing.T) {
		fs := vfs.NewMem()
		db := mustOpen(t, "db", &Options{FS: fs})
		putN(t, db, 0, 10, "v")
		c := fs.CrashClone()
		db.Close()
		log := filesOf(t, c, "db", fileTypeLog)[0]
		if err := c.Remove(log); err != nil {
			t.Fatal(err)
		}
		wantOpenCorruption(t, c, log)
	})
	t.Run("in the middle", func(t *testing.T) {
		// Flushes held: one WAL per Put.
		c, logs := heldWALsImage(t, 1, 4)
		if err := c.Remove(logs[1]); err != nil {
			t.Fatal(err)
		}
		wantOpenCorruption(t, c, logs[2])
		wantCheckCorruption(t, c, logs[2])
	})
}

// TestEmptiedFirstWAL is the regression test for item 1 of issue 34. With
// flushes held, 12 synced Puts go to four WALs, three to each: the first,
// at the MANIFEST's log number, holds sequence numbers 1-3, and the
// MANIFEST's last sequence number is 0. In a power-loss image of that store
// the first WAL is truncated to 0 bytes: its writes are gone, so Open and
// Check must both return ErrCorruption naming it (the next WAL starts at
// sequence number 4). Before, they ran the continuity check only from a
// WAL with records, and Open succeeded without k0000-k0002.
func TestEmptiedFirstWAL(t *testing.T) {
	// A Put adds 102 bytes to the memtable: the fourth finds it full.
	c, logs := heldWALsImage(t, 300, 12)
	writeFile(t, c, logs[0], nil)
	wantOpenCorruption(t, c, logs[0])
	wantCheckCorruption(t, c, logs[0])
}

// heldWALsImage writes puts synced Puts k0000, k0001, ... to a store of
// memtables of memTableSize bytes whose flushes are held, so that every
// full memtable keeps its WAL, and returns a power-loss image of it, which
// must hold four WALs (returned, oldest first) and pass Check.
func heldWALsImage(t *testing.T, memTableSize, puts int) (*vfs.MemFS, []string) {
	t.Helper()
	mem := vfs.NewMem()
	efs, release := holdFlushes(mem)
	db := mustOpen(t, "db", &Options{FS: efs, MemTableSize: memTableSize, MaxImmutableMemTables: 8})
	for i := range puts {
		if err := db.Put(fmt.Appendf(nil, "k%04d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	c := mem.CrashClone()
	close(release)
	db.Close()
	logs := filesOf(t, c, "db", fileTypeLog)
	if len(logs) != 4 {
		t.Fatalf("want 4 WALs, got %v", logs)
	}
	if err := Check("db", &Options{FS: c}); err != nil {
		t.Fatalf("Check of the power-loss image: %v", err)
	}
	return c, logs
}

// wantCheckCorruption checks that Check of the store db in fs returns
// ErrCorruption naming file.
func wantCheckCorruption(t *testing.T, fs vfs.FS, file string) {
	t.Helper()
	err := Check("db", &Options{FS: fs})
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), filepath.Base(file)) {
		t.Fatalf("Check: %v, want ErrCorruption naming %s", err, filepath.Base(file))
	}
}

// TestCurrentDamaged: CURRENT naming a missing MANIFEST, CURRENT being a
// directory, and every single-bit flip in CURRENT are ErrCorruption, with
// nothing deleted.
func TestCurrentDamaged(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: fs})
	putN(t, db, 0, 10, "v")
	db.Flush()
	db.Close()
	good := readFile(t, fs, "db/CURRENT")

	writeFile(t, fs, "db/CURRENT", []byte("MANIFEST-999999\n"))
	wantOpenCorruption(t, fs, "MANIFEST-999999")

	if err := fs.Remove("db/CURRENT"); err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll("db/CURRENT", 0o755); err != nil {
		t.Fatal(err)
	}
	wantOpenCorruption(t, fs, "CURRENT")
	if err := fs.Remove("db/CURRENT"); err != nil {
		t.Fatal(err)
	}

	for i := range len(good) {
		for bit := range 8 {
			b := slices.Clone(good)
			b[i] ^= 1 << bit
			writeFile(t, fs, "db/CURRENT", b)
			wantOpenCorruption(t, fs)
		}
	}
}

// TestRotationSyncFailure: when the old WAL cannot be synced at a memtable
// rotation, no newer WAL holds any bytes (recovery allows a torn tail only
// in the newest WAL with bytes), and the writes already made are
// recovered.
func TestRotationSyncFailure(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	db := mustOpen(t, "db", &Options{FS: efs, NoSync: true, MemTableSize: 1})
	want := putN(t, db, 0, 1, "v") // fills the memtable
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") {
			return vfs.ErrInjected
		}
		return nil
	})
	if err := db.Put([]byte("key001"), []byte("x")); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Put needing a rotation: %v, want the injected error", err)
	}
	efs.SetInjector(nil)
	logs := filesOf(t, mem, "db", fileTypeLog)
	for _, name := range logs[1:] {
		if info, err := mem.Stat(name); err != nil || info.Size() != 0 {
			t.Fatalf("after a failed rotation the directory holds WALs %v, and %s is not empty (%v)", logs, name, err)
		}
	}
	db.Close()
	db = mustOpen(t, "db", &Options{FS: mem})
	defer db.Close()
	want["key001"] = ""
	wantData(t, db, want)
}

// TestFailedOpenClosesFiles: an Open that fails after its recovery flush
// closes the new table with everything else.
func TestFailedOpenClosesFiles(t *testing.T) {
	mem := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: mem})
	putN(t, db, 0, 10, "v")
	c := mem.CrashClone()
	db.Close()
	efs := vfs.NewErrorFS(c)
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpCreate && strings.Contains(path, "MANIFEST-") {
			return vfs.ErrInjected
		}
		return nil
	})
	cfs := &openFilesFS{FS: efs}
	if _, err := Open("db", &Options{FS: cfs}); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Open: %v, want the injected error", err)
	}
	if n := cfs.open.Load(); n != 0 {
		t.Fatalf("%d files left open by a failed Open", n)
	}
}

// TestFailedTableOpenRemovesTable: when a flush wrote its table but cannot
// open it, the table is removed, not left behind as an orphan.
func TestFailedTableOpenRemovesTable(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	db := mustOpen(t, "db", &Options{FS: efs})
	defer db.Close()
	putN(t, db, 0, 10, "v")
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpOpen && strings.HasSuffix(path, ".sst") {
			return vfs.ErrInjected
		}
		return nil
	})
	if err := db.Flush(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Flush: %v, want the injected error", err)
	}
	if tables := filesOf(t, mem, "db", fileTypeTable); len(tables) != 0 {
		t.Fatalf("orphan tables left: %v", tables)
	}
}

// TestObsoleteTableDeletion: a table a compaction made obsolete is deleted
// once its last reader lets go, by the DB's background work and no later
// than Close; a reader that lets go only after Close (the LOCK released)
// deletes nothing: the next Open does.
func TestObsoleteTableDeletion(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: fs})
	putN(t, db, 0, 10, "v")
	db.Flush()
	old := filesOf(t, fs, "db", fileTypeTable)

	it := db.NewIter(nil)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := filesOf(t, fs, "db", fileTypeTable); !slices.Contains(got, old[0]) {
		t.Fatalf("table %s deleted while an iterator reads it", old[0])
	}
	it.Close()
	db.Close()
	if got := filesOf(t, fs, "db", fileTypeTable); slices.Contains(got, old[0]) {
		t.Fatalf("obsolete table %s still there after Close", old[0])
	}

	db = mustOpen(t, "db", &Options{FS: fs})
	putN(t, db, 10, 20, "v")
	db.Flush()
	old = filesOf(t, fs, "db", fileTypeTable)
	it = db.NewIter(nil)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	db.Close() // with the iterator still open
	afterClose := listDir(t, fs, "db")
	it.Close()
	if got := listDir(t, fs, "db"); got != afterClose {
		t.Fatalf("files deleted after Close released the LOCK:\nbefore %s\nafter  %s", afterClose, got)
	}
	mustOpen(t, "db", &Options{FS: fs}).Close()
	if got := filesOf(t, fs, "db", fileTypeTable); slices.Contains(got, old[0]) {
		t.Fatalf("obsolete table %s not deleted by the next Open", old[0])
	}
}

// FuzzReadCurrent: whatever bytes CURRENT holds, readCurrent returns the
// number of the MANIFEST they name exactly, or ErrCorruption; it never
// panics.
func FuzzReadCurrent(f *testing.F) {
	for _, s := range []string{"MANIFEST-000007\n", "MANIFEST-000007", "MANIFEST-7\n", "MANIFEST-0000070\n\n", "", "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("db", 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, fs, "db/CURRENT", content)
		db := &DB{dir: "db", fs: fs}
		num, err := db.readCurrent()
		if err != nil {
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("CURRENT %q: %v, want ErrCorruption", content, err)
			}
			return
		}
		if want := baseFileName(fileTypeManifest, num) + "\n"; string(content) != want {
			t.Fatalf("CURRENT %q read as MANIFEST %d", content, num)
		}
	})
}

// TestOpenMakesNewDirectoryDurable: Open of a new store in a directory it
// creates makes that directory's entry durable, and the entry of every
// parent it creates, by syncing the directory holding each: otherwise a
// power loss can take the whole store away, with every write it had
// acknowledged as synced (vfs.MemFS's crash model drops a directory whose
// parent was not synced after it was made).
func TestOpenMakesNewDirectoryDurable(t *testing.T) {
	for _, dir := range []string{"db", "a/b/db"} {
		t.Run(dir, func(t *testing.T) {
			fs := vfs.NewMem()
			db := mustOpen(t, dir, &Options{FS: fs})
			if err := db.Put([]byte("k"), []byte("v")); err != nil {
				t.Fatal(err)
			}
			power := fs.CrashClone()
			db.Close()
			db = mustOpen(t, dir, &Options{FS: power})
			defer db.Close()
			if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
				t.Fatalf("after a power loss, Get(k) = %q, %v; want the synced write", v, err)
			}
		})
	}
}

// TestWALHeaderDamaged: damage to any byte of the LOG fragment (checksum,
// length, type, version, salt) of a WAL of one block, closed cleanly, fails
// Open with ErrCorruption naming it. The reader used to cut the whole log
// off as a torn tail, and Open returned the values the WAL's writes had
// replaced: first when the version was damaged (it then took no salt, so
// found no claim), then when the salt was (every seal fails, and no later
// block held a claim to find unsealed).
func TestWALHeaderDamaged(t *testing.T) {
	for b := 0; b < 19; b++ {
		fs := vfs.NewMem()
		db := mustOpen(t, "db", &Options{FS: fs})
		putN(t, db, 0, 10, "old")
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		putN(t, db, 0, 10, "new")
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		log := newestOf(t, fs, "db", fileTypeLog)
		data := readFile(t, fs, log)
		data[b] ^= 0x01
		writeFile(t, fs, log, data)
		t.Logf("byte %d flipped", b)
		wantOpenCorruption(t, fs, log)
	}
}

// TestRecoveryFailsAtEveryOp: an Open recovering a WAL with a torn tail
// that fails at any file-system operation, once or from then on, leaves a
// directory that the next Open recovers to the same data, both as the
// failed Open left it (the process lives on) and after a power loss.
func TestRecoveryFailsAtEveryOp(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		for _, persistent := range []bool{false, true} {
			n := 0
			for i := int64(0); ; i++ {
				fs, want := tornStore(t)
				efs := vfs.NewErrorFS(fs)
				ii := &vfs.IndexInjector{Index: i, Persistent: persistent}
				efs.SetInjector(ii.Inject)
				db, err := Open("db", &Options{FS: efs, DisableWALMapping: !mapped, DisableAutomaticCompactions: true})
				if err == nil {
					db.Close()
				}
				efs.SetInjector(nil)
				if !ii.Fired() {
					break
				}
				n++
				for _, c := range []*vfs.MemFS{fs.CrashClone(), fs} {
					db, err := Open("db", &Options{FS: c, DisableWALMapping: !mapped})
					if err != nil {
						t.Fatalf("mapped=%v persistent=%v: Open after an Open that failed at operation %d: %v", mapped, persistent, i, err)
					}
					wantData(t, db, want)
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n < 20 {
				t.Fatalf("mapped=%v persistent=%v: only %d operations in a recovery", mapped, persistent, n)
			}
		}
	}
}
