package shale

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/vfs"
)

// onlyFile returns the one file of dir matching pattern.
func onlyFile(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(m) != 1 {
		t.Fatalf("%s: %v", pattern, m)
	}
	return m[0]
}

// checkProblems runs Check and returns the problems it lists, failing
// unless each matches ErrCorruption.
func checkProblems(t *testing.T, dir string, opts *Options) []*base.CorruptionError {
	t.Helper()
	err := Check(dir, opts)
	if err == nil {
		return nil
	}
	if !errors.Is(err, ErrCorruption) {
		t.Fatalf("Check: %v, not corruption", err)
	}
	var ce *CheckError
	if !errors.As(err, &ce) || len(ce.Problems) == 0 {
		t.Fatalf("Check: %v lists no problem", err)
	}
	var out []*base.CorruptionError
	for _, p := range ce.Problems {
		var ce *base.CorruptionError
		if !errors.As(p, &ce) {
			t.Fatalf("Check: problem %v is not a corruption error", p)
		}
		out = append(out, ce)
	}
	return out
}

// wantKeys checks that the store in dir holds exactly want.
func wantKeys(t *testing.T, dir string, opts *Options, want map[string]string) {
	t.Helper()
	db := mustOpen(t, dir, opts)
	defer db.Close()
	got := map[string]string{}
	it := db.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
		if val, err := db.Get([]byte(k)); err != nil || string(val) != v {
			t.Errorf("Get(%s) = %q, %v; want %q", k, val, err, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s is there, and should not be", k)
		}
	}
}

// TestCheckRepairDamagedManifest: a flipped byte in a MANIFEST of one
// record. Check names the MANIFEST; Repair recovers every key and moves the
// MANIFEST to lost/; Check then finds nothing wrong.
func TestCheckRepairDamagedManifest(t *testing.T) {
	dir := t.TempDir()
	var logged []string
	opts := &Options{Logger: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }}
	db := mustOpen(t, dir, opts)
	want := putNumbered(t, db, 100)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	mustOpen(t, dir, opts).Close() // the MANIFEST is now one snapshot record
	if err := Check(dir, opts); err != nil {
		t.Fatalf("Check before the damage: %v", err)
	}
	manifest := onlyFile(t, dir, "MANIFEST-*")
	flipByte(t, manifest, -1)

	problems := checkProblems(t, dir, opts)
	if len(problems) != 1 || problems[0].File != manifest {
		t.Fatalf("Check found %v, want one problem in %s", problems, manifest)
	}
	t.Logf("Check: %v", Check(dir, opts))

	logged = nil
	repairMovesToLost(t, dir, opts, manifest)
	t.Logf("Repair logged:\n%s", strings.Join(logged, "\n"))
	wantKeys(t, dir, opts, want)
	if err := Check(dir, opts); err != nil {
		t.Fatalf("Check after Repair and Open: %v", err)
	}
}

// TestCheckRepairDamagedBlock: a damaged data block in a table. Check names
// the table and the block's offset; Repair keeps the records of the other
// blocks and moves the table to lost/.
func TestCheckRepairDamagedBlock(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{BlockSize: 256, BlockCacheSize: -1}
	db := mustOpen(t, dir, opts)
	want := putNumbered(t, db, 500)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	table := onlyFile(t, dir, "*.sst")
	flipByte(t, table, 10) // in the first data block, at offset 0

	problems := checkProblems(t, dir, opts)
	if len(problems) != 1 || problems[0].File != table || problems[0].Offset != 0 {
		t.Fatalf("Check found %v, want one problem in %s at offset 0", problems, table)
	}

	repairMovesToLost(t, dir, opts, table)
	db = mustOpen(t, dir, opts)
	defer db.Close()
	found := 0
	for k, v := range want {
		got, err := db.Get([]byte(k))
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil || string(got) != v:
			t.Fatalf("Get(%s) = %q, %v; want %q or not found", k, got, err, v)
		default:
			found++
		}
	}
	// The first block holds key000 and a few more; every other key stays.
	if _, err := db.Get([]byte("key000")); !errors.Is(err, ErrNotFound) || found < len(want)-20 {
		t.Fatalf("after Repair: key000: %v; %d of %d keys; want the first block's lost, the rest kept", err, found, len(want))
	}
}

// TestRepairInterleavedVersions: versions of the same keys in L6, in L0
// tables and in the WAL, with deletions, and sequence numbers interleaved
// across levels: an L6 table holds newer writes than an L0 table above it,
// which holds newer versions of some of its keys. So no order of the tables
// alone gives the newest version of every key. With the MANIFEST and
// CURRENT gone, Repair brings back the newest version of every key.
func TestRepairInterleavedVersions(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{DisableAutomaticCompactions: true}
	db := mustOpen(t, dir, opts)
	want := map[string]string{}
	put := func(lo, hi int, round string) {
		for i := lo; i < hi; i++ {
			k := fmt.Sprintf("key%03d", i)
			want[k] = round
			if err := db.Put([]byte(k), []byte(round)); err != nil {
				t.Fatal(err)
			}
		}
	}
	del := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			k := fmt.Sprintf("key%03d", i)
			delete(want, k)
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	flush := func() {
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 100, "r1")
	if err := db.Compact(); err != nil { // L6: A
		t.Fatal(err)
	}
	put(0, 50, "r2")
	del(0, 10)
	flush() // L0: G, newer than A for key000-key049
	put(90, 100, "r3")
	flush() // L0: H, disjoint from G
	// Compact H alone into L6: A's successor holds key000-key049 at r1 and
	// key090-key099 at r3, newer than anything in G.
	db.mu.Lock()
	v := db.current
	v.ref()
	db.mu.Unlock()
	g, h := v.Levels[0][1], v.Levels[0][0]
	job := compactionJob{outputLevel: 6, inputs: []levelFile{{0, h}, {6, v.Levels[6][0]}}}
	if err := db.runCompaction(v, job); err != nil {
		t.Fatal(err)
	}
	v.unref()
	db.mu.Lock()
	l6 := db.current.Levels[6][0]
	db.mu.Unlock()
	if l6.LargestSeq <= g.LargestSeq || !l6.ContainsKey([]byte("key020")) || !g.ContainsKey([]byte("key020")) {
		t.Fatalf("want an L6 table newer than the L0 table %s, with a key in common: L6 holds %s", g, l6)
	}
	put(5, 8, "r4")
	del(55, 58)
	put(95, 110, "r4") // in the WAL only
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(onlyFile(t, dir, "MANIFEST-*")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "CURRENT")); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir, opts); !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "CURRENT") {
		t.Fatalf("Check without CURRENT: %v", err)
	}
	if err := Repair(dir, opts); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir, opts); err != nil {
		t.Fatalf("Check after Repair: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, lostDir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("nothing was damaged, yet lost/ is there: %v", err)
	}
	wantKeys(t, dir, opts, want)
}

// TestCheckTables: a table the MANIFEST names is missing, or one it does
// not name is left over: the first is a problem naming the table, the
// second is not.
func TestCheckTables(t *testing.T) {
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	for i := range 3 {
		if err := db.Put([]byte{byte('a' + i)}, []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) != 3 {
		t.Fatalf("tables: %v", tables)
	}
	leftover := filepath.Join(dir, "999999.sst")
	b, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(leftover, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir, nil); err != nil {
		t.Fatalf("Check with a leftover table: %v", err)
	}
	if err := os.Remove(tables[1]); err != nil {
		t.Fatal(err)
	}
	problems := checkProblems(t, dir, nil)
	if len(problems) != 1 || problems[0].File != tables[1] {
		t.Fatalf("Check found %v, want %s missing", problems, tables[1])
	}
}

// TestCheckRepairOpenStore: neither Check nor Repair touches a store that
// is open, in this process or another.
func TestCheckRepairOpenStore(t *testing.T) {
	if dir := os.Getenv("SHALE_CHECK_CHILD"); dir != "" {
		fmt.Printf("check: %v\nrepair: %v\n", Check(dir, nil), Repair(dir, nil))
		return
	}
	dir := t.TempDir()
	osDB := mustOpen(t, dir, nil)
	defer osDB.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckRepairOpenStore$")
	cmd.Env = append(os.Environ(), "SHALE_CHECK_CHILD="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(out), vfs.ErrLocked.Error()) != 2 {
		t.Fatalf("Check and Repair from another process:\n%s", out)
	}

	fs := vfs.NewMem()
	opts := &Options{FS: fs}
	db := mustOpen(t, "db", opts)
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(string, *Options) error{"Check": Check, "Repair": Repair} {
		if err := f("db", opts); !errors.Is(err, vfs.ErrLocked) || errors.Is(err, ErrCorruption) {
			t.Fatalf("%s of an open store: %v, want a lock error", name, err)
		}
	}
	if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("Get after Check and Repair were refused: %q, %v", v, err)
	}
}

// flipMem flips one bit of the byte at off of the file name in fs, durably.
func flipMem(t *testing.T, fs *vfs.MemFS, name string, off int64) {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	size, _ := f.Size()
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if off < 0 {
		off += size
	}
	b[off] ^= 0x40
	if f, err = fs.Create(name); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := fs.SyncDir(path.Dir(name)); err != nil {
		t.Fatal(err)
	}
}

// memKeys returns what the store in fs holds, opening it.
func memKeys(t *testing.T, fs vfs.FS) map[string]string {
	t.Helper()
	db, err := Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := map[string]string{}
	it := db.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestRepairCrash: a power loss after any file-system operation of Repair
// leaves a store that Repair, run again, repairs to the same data as an
// uninterrupted Repair. The store has a damaged MANIFEST, a damaged table
// block and a WAL, so that every step of Repair runs.
func TestRepairCrash(t *testing.T) {
	mem := vfs.NewMem()
	opts := &Options{FS: mem, BlockSize: 256, DisableAutomaticCompactions: true}
	db := mustOpen(t, "db", opts)
	for round := range 3 {
		for i := range 100 {
			if err := db.Put(fmt.Appendf(nil, "key%03d", i*(round+1)), fmt.Appendf(nil, "r%d", round)); err != nil {
				t.Fatal(err)
			}
		}
		if round < 2 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := mem.List("db")
	for _, name := range names {
		switch typ, _, _ := parseFileName(name); typ {
		case fileTypeManifest:
			flipMem(t, mem, "db/"+name, -1)
		case fileTypeTable:
			flipMem(t, mem, "db/"+name, 10)
		}
	}

	ref := mem.CrashClone()
	if err := Repair("db", &Options{FS: ref}); err != nil {
		t.Fatal(err)
	}
	want := memKeys(t, ref)
	if lost, _ := ref.List("db/lost"); len(lost) != 3 || len(want) < 100 {
		t.Fatalf("the reference Repair kept %d keys and moved %v to lost/; want 2 tables and the MANIFEST moved", len(want), lost)
	}

	for n := 0; ; n++ {
		fs := mem.CrashClone()
		efs := vfs.NewErrorFS(fs)
		ops := 0
		efs.SetInjector(func(vfs.Op, string) error {
			ops++
			if ops > n {
				return vfs.ErrInjected
			}
			return nil
		})
		err := Repair("db", &Options{FS: efs})
		if err == nil {
			if n < 10 {
				t.Fatalf("Repair succeeded with its first %d operations", n)
			}
			t.Logf("Repair takes %d operations; crashed after each", n)
			break
		}
		if !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("crash after %d operations: Repair: %v", n, err)
		}
		crashed := fs.CrashClone()
		if err := Repair("db", &Options{FS: crashed}); err != nil {
			t.Fatalf("crash after %d operations: Repair again: %v", n, err)
		}
		got := memKeys(t, crashed)
		if len(got) != len(want) {
			t.Fatalf("crash after %d operations: %d keys, want %d", n, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("crash after %d operations: %s = %q, want %q", n, k, got[k], v)
			}
		}
		if n > 10000 {
			t.Fatal("Repair never succeeded")
		}
	}
}

// TestCheckRepairWAL: a WAL cut short (a torn tail, what a crash leaves) is
// no problem for Check; a damaged record in its middle is, named with the
// WAL, and Repair keeps the batches before it and moves the WAL to lost/.
func TestCheckRepairWAL(t *testing.T) {
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	const n = 200
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "key%03d", i), fmt.Appendf(nil, "value%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wal := onlyFile(t, dir, "*.log")
	b, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wal, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir, nil); err != nil {
		t.Fatalf("Check of a WAL with a torn tail: %v", err)
	}
	// A log closed cleanly ends with an END marker that claims every byte
	// before it as synced, so damage anywhere before it is reported.
	if err := os.WriteFile(wal, b, 0o644); err != nil {
		t.Fatal(err)
	}
	flipByte(t, wal, int64(len(b)/2))
	problems := checkProblems(t, dir, nil)
	if len(problems) != 1 || problems[0].File != wal {
		t.Fatalf("Check found %v, want one problem in %s", problems, wal)
	}

	repairMovesToLost(t, dir, nil, wal)
	db = mustOpen(t, dir, nil)
	defer db.Close()
	kept := 0
	for ; kept < n; kept++ {
		v, err := db.Get(fmt.Appendf(nil, "key%03d", kept))
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil || string(v) != fmt.Sprintf("value%03d", kept) {
			t.Fatalf("key%03d = %q, %v", kept, v, err)
		}
	}
	for i := kept; i < n; i++ {
		if _, err := db.Get(fmt.Appendf(nil, "key%03d", i)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("key%03d, after the damage, is there: %v", i, err)
		}
	}
	if kept < n/4 || kept >= n {
		t.Fatalf("Repair kept the first %d of %d batches; want those before the damage in the middle", kept, n)
	}
}

// repairMovesToLost repairs the store in dir and checks that the damaged
// file went to lost/ and that the repaired store checks clean.
func repairMovesToLost(t *testing.T, dir string, opts *Options, damaged string) {
	t.Helper()
	if err := Repair(dir, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, lostDir, filepath.Base(damaged))); err != nil {
		t.Fatalf("the damaged %s is not in lost/: %v", filepath.Base(damaged), err)
	}
	if err := Check(dir, opts); err != nil {
		t.Fatalf("Check after Repair: %v", err)
	}
}

// putNumbered puts key000 = value000 and so on, n of them, and returns
// them.
func putNumbered(t *testing.T, db *DB, n int) map[string]string {
	t.Helper()
	want := map[string]string{}
	for i := range n {
		k, v := fmt.Sprintf("key%03d", i), fmt.Sprintf("value%03d", i)
		want[k] = v
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

// processCrash returns a copy of fs as a process crash leaves it: every
// byte written, synced or not, under every name (the kernel keeps what a
// process wrote; only a power loss loses it).
func processCrash(t *testing.T, fs *vfs.MemFS, dir string) *vfs.MemFS {
	t.Helper()
	c := vfs.NewMem()
	if err := c.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := dir; d != "." && d != "/"; d = filepath.Dir(d) { // a process crash keeps the directories
		if err := c.SyncDir(filepath.Dir(d)); err != nil {
			t.Fatal(err)
		}
	}
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if info, err := fs.Stat(fs.PathJoin(dir, n)); err == nil && !info.IsDir() && n != "LOCK" {
			writeFile(t, c, c.PathJoin(dir, n), readFile(t, fs, fs.PathJoin(dir, n)))
		}
	}
	return c
}

// TestCheckRepairAfterNoSyncCrash: after a process crash under NoSync, the
// newest WAL ends in whole records that no COMMIT counts yet (internal/wal
// writes one only when due), which the WAL reader reports as a torn tail
// that cuts nothing. Check must not call that damage when an empty newer
// WAL follows (a recovery that created its WAL, then failed), since Open
// allows a torn tail in the newest WAL with bytes; and Repair must keep the
// WAL as used, not move it to lost/.
func TestCheckRepairAfterNoSyncCrash(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: fs, NoSync: true})
	want := putN(t, db, 0, 10, "v")
	crashed := processCrash(t, fs, "db")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	c := processCrash(t, crashed, "db")
	writeFile(t, c, "db/000999.log", nil)
	if err := Check("db", &Options{FS: c}); err != nil {
		t.Fatalf("Check after a NoSync crash and an empty newer WAL: %v", err)
	}
	db = mustOpen(t, "db", &Options{FS: c})
	wantData(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	c = processCrash(t, crashed, "db")
	if err := Repair("db", &Options{FS: c}); err != nil {
		t.Fatal(err)
	}
	if lost, err := c.List("db/" + lostDir); err == nil && len(lost) > 0 {
		t.Fatalf("Repair after a NoSync crash moved %v to lost/; nothing was damaged", lost)
	}
	db = mustOpen(t, "db", &Options{FS: c})
	wantData(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckAfterFailedFirstOpen: a first Open that fails before it writes
// CURRENT leaves an empty WAL and a MANIFEST, which the next Open removes
// before it starts afresh. Check used to call that a store that lost its
// CURRENT; it must find no store there, not corruption.
func TestCheckAfterFailedFirstOpen(t *testing.T) {
	leftovers := 0
	for i := int64(0); ; i++ {
		mem := vfs.NewMem()
		efs := vfs.NewErrorFS(mem)
		efs.SetInjector((&vfs.IndexInjector{Index: i, Persistent: true}).Inject)
		db, err := Open("db", &Options{FS: efs})
		if err == nil {
			db.Close()
			break
		}
		if _, err := mem.Stat("db"); err != nil {
			continue // failed before it made the directory
		}
		names, err := mem.List("db")
		if err != nil {
			t.Fatal(err)
		}
		if len(names) > 0 {
			leftovers++
		}
		cerr := Check("db", &Options{FS: processCrash(t, mem, "db")})
		db, oerr := Open("db", &Options{FS: processCrash(t, mem, "db")})
		if oerr != nil {
			t.Fatalf("operation %d failed, leaving %v: Open: %v", i, names, oerr)
		}
		db.Close()
		switch created := slices.Contains(names, "CURRENT"); {
		case created && cerr != nil:
			t.Errorf("operation %d failed after CURRENT was written, leaving %v: Check: %v", i, names, cerr)
		case !created && (cerr == nil || errors.Is(cerr, ErrCorruption)):
			t.Errorf("operation %d failed, leaving %v, which Open takes for a new store: Check: %v; want no store found", i, names, cerr)
		}
	}
	if leftovers == 0 {
		t.Fatal("no failed first Open left a file")
	}
}

// dirImage returns every file and directory under dir: its mode, time of
// last change, and bytes.
func dirImage(t *testing.T, dir string) map[string]string {
	t.Helper()
	img := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		var b []byte
		if !info.IsDir() {
			if b, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		img[p] = fmt.Sprintf("%v %d %x", info.Mode(), info.ModTime().UnixNano(), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestCheckChangesNothing: Check leaves a store that a process crash left
// (mapped WAL with its zero tail, tables of flushes and compactions, files
// not yet deleted) byte for byte as it was, consistent or damaged.
func TestCheckChangesNothing(t *testing.T) {
	if dir := os.Getenv("SHALE_CHECK_CRASH_CHILD"); dir != "" {
		db, err := Open(dir, &Options{MemTableSize: 64 << 10, NoSync: true})
		if err != nil {
			panic(err)
		}
		putNumbered(t, db, 5000)
		os.Exit(0) // without Close: a process crash
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckChangesNothing$")
	cmd.Env = append(os.Environ(), "SHALE_CHECK_CRASH_CHILD="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	check := func(wantProblems bool) {
		t.Helper()
		before := dirImage(t, dir)
		err := Check(dir, nil)
		if (err != nil) != wantProblems {
			t.Fatalf("Check: %v", err)
		}
		after := dirImage(t, dir)
		for name, img := range before {
			if after[name] != img {
				t.Errorf("Check changed %s", name)
			}
		}
		for name := range after {
			if _, ok := before[name]; !ok {
				t.Errorf("Check created %s", name)
			}
		}
	}
	check(false)
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	for _, table := range tables { // live or left over, each damaged
		b, err := os.ReadFile(table)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			continue // a table the crash cut off before its first write
		}
		b[len(b)/2] ^= 0x40
		if err := os.WriteFile(table, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check(true)
}

// TestCheckRepairLeaveOtherDirectories: Check and Repair of a directory
// that holds no store (a mistyped path, say a home directory) refuse it
// without leaving a LOCK file behind, as they used to.
func TestCheckRepairLeaveOtherDirectories(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(string, *Options) error{"Check": Check, "Repair": Repair} {
		if err := f(dir, nil); err == nil || errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "no store here") {
			t.Errorf("%s of a directory with no store: %v, want no store found", name, err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Errorf("%s left %v in a directory that held notes.txt alone", name, entries)
		}
	}
}

// readsWhole opens the store in fs, reads every entry, looks up every key
// putNumbered writes, compacts and closes it, and returns the first error.
func readsWhole(fs vfs.FS, keys int) (err error) {
	db, err := Open("db", &Options{FS: fs})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	it := db.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	if err := it.Close(); err != nil {
		return err
	}
	for i := range keys {
		if _, err := db.Get(fmt.Appendf(nil, "key%03d", i)); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return db.Compact()
}

// TestCheckFindsWhatOpenMeets flips one bit at a time at random offsets of
// every file of a store, closed cleanly or crashed with writes in its WAL.
// Whenever Open, a full scan, Gets or a compaction then fail, Check must
// have reported a problem; when Check reports none and all of those
// succeed, the store must hold what it held.
func TestCheckFindsWhatOpenMeets(t *testing.T) {
	const keys = 1500
	for _, crash := range []bool{false, true} {
		mem := vfs.NewMem()
		db := mustOpen(t, "db", &Options{FS: mem, MemTableSize: 32 << 10})
		putNumbered(t, db, keys)
		for i := range keys / 10 {
			if err := db.Delete(fmt.Appendf(nil, "key%03d", i*3)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.DeleteRange([]byte("key1000"), []byte("key1100")); err != nil {
			t.Fatal(err)
		}
		var image *vfs.MemFS
		if crash {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			putNumbered(t, db, 100) // in the WAL only
			image = processCrash(t, mem, "db")
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if !crash {
			image = processCrash(t, mem, "db")
		}
		if err := Check("db", &Options{FS: image}); err != nil {
			t.Fatalf("crash %v: Check before any damage: %v", crash, err)
		}
		want := memKeys(t, processCrash(t, image, "db"))
		names, err := image.List("db")
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(len(names)), 7))
		caught := 0
		for _, name := range names {
			info, err := image.Stat("db/" + name)
			if err != nil {
				t.Fatal(err)
			}
			if name == "LOCK" || info.Size() == 0 {
				continue
			}
			for range 20 {
				off := rng.Int64N(info.Size())
				fs := processCrash(t, image, "db")
				flipMem(t, fs, "db/"+name, off)
				cerr := Check("db", &Options{FS: fs})
				rerr := readsWhole(processCrash(t, fs, "db"), keys)
				switch {
				case cerr != nil:
					caught++
				case rerr != nil:
					t.Errorf("crash %v, %s bit flipped at %d: Check found nothing, but %v", crash, name, off, rerr)
				case !maps.Equal(memKeys(t, processCrash(t, fs, "db")), want):
					t.Errorf("crash %v, %s bit flipped at %d: Check found nothing, and the store's data changed", crash, name, off)
				}
			}
		}
		if caught == 0 {
			t.Errorf("crash %v: Check found none of the flipped bits", crash)
		}
	}
}

// TestRepairReport: Repair's report says, per file, what it recovered and
// what it set aside, with the entries those files held where they can be
// counted, and a summary; the logger gets the same lines. The store has a
// table with a damaged block, an intact table and a WAL damaged in the
// middle.
func TestRepairReport(t *testing.T) {
	dir := t.TempDir()
	var logged []string
	opts := &Options{BlockSize: 256, BlockCacheSize: -1,
		Logger: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }}
	db := mustOpen(t, dir, opts)
	put := func(from, to int) {
		for i := from; i < to; i++ {
			if err := db.Put(fmt.Appendf(nil, "key%04d", i), []byte("value")); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 500)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	put(500, 600)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	put(600, 800)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) != 2 {
		t.Fatalf("tables: %v", tables)
	}
	damagedTable, intactTable, wal := tables[0], tables[1], onlyFile(t, dir, "*.log")
	flipByte(t, damagedTable, 10) // the first data block
	walSize := fileSize(t, wal)
	flipByte(t, wal, walSize/2)

	logged = nil
	report, err := RepairWithReport(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]RepairedFile{}
	var recovered uint64
	for _, f := range report.Files {
		byName[f.Name] = f
		recovered += f.Recovered
	}
	name := filepath.Base
	dt, it, w := byName[name(damagedTable)], byName[name(intactTable)], byName[name(wal)]
	if dt.LostTo != "lost/"+name(damagedTable) || dt.Held != 500 || dt.Recovered == 0 || dt.Recovered >= 500 || len(dt.Problems) != 1 {
		t.Errorf("damaged table: %+v; want 500 held, some recovered, one problem, moved to lost/", dt)
	}
	if it.Damaged || !dt.Damaged || !w.Damaged || it.Held != 100 || it.Recovered != 100 || len(it.Problems) != 0 {
		t.Errorf("intact table: %+v; want its 100 entries recovered", it)
	}
	var ce *base.CorruptionError
	if len(w.Problems) != 1 || !errors.As(w.Problems[0], &ce) || w.LostTo != "lost/"+name(wal) || w.Held != -1 ||
		w.Recovered == 0 || w.Recovered >= 200 || w.UnreadBytes != walSize-ce.Offset {
		t.Errorf("WAL: %+v; want some of 200 recovered, the rest uncounted, bytes past the damage unread, moved to lost/", w)
	}
	if len(report.Files) != 4 || report.Manifest == "" || report.Tables == 0 || report.Entries != recovered || report.Err != nil {
		t.Errorf("report: %+v; want 4 files (a MANIFEST, 2 tables, a WAL), new tables of every entry recovered", report)
	}
	s := report.String()
	for _, want := range []string{
		fmt.Sprintf("%s: damaged: %d entries recovered of 500, %d lost; moved to lost/%s\n  shale: corruption in %s at offset 0: ",
			name(damagedTable), dt.Recovered, 500-dt.Recovered, name(damagedTable), damagedTable),
		fmt.Sprintf("%s: 100 entries, intact\n", name(intactTable)),
		fmt.Sprintf("%s: damaged: %d entries recovered, then %d bytes unread (the entries lost cannot be counted); moved to lost/%s\n",
			name(wal), w.Recovered, w.UnreadBytes, name(wal)),
		fmt.Sprintf("recovered %d entries from 2 tables and 1 WAL into %s (%s, last sequence number %d); 2 files moved to lost/; entries lost: %d counted, and more that cannot be\n",
			recovered, plural(report.Tables, "new table")+fmt.Sprintf(" of %d entries in L6", recovered), report.Manifest, report.LastSeqNum, 500-dt.Recovered),
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the report lacks %q:\n%s", want, s)
		}
	}
	if got := strings.Join(logged, "\n") + "\n"; got != "repair: "+strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\nrepair: ")+"\n" {
		t.Errorf("logged:\n%s\nwant the report's lines:\n%s", got, s)
	}
	t.Logf("report:\n%s", s)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}
