package shale

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/vfs"
)

// mustOK fails the test at once if err is not nil.
func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustOpen(t *testing.T, dir string, opts *Options) *DB {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestLock: a second Open of an open store fails at once, in this process
// and in another, and succeeds once the first is closed.
func TestLock(t *testing.T) {
	if dir := os.Getenv("SHALE_LOCK_CHILD"); dir != "" {
		if _, err := Open(dir, nil); err != nil {
			fmt.Println("open failed:", err)
			return
		}
		fmt.Println("open succeeded")
		return
	}
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	if _, err := Open(dir, nil); err == nil || !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second Open in this process: %v, want a lock error", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLock$")
	cmd.Env = append(os.Environ(), "SHALE_LOCK_CHILD="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "open failed:") || !strings.Contains(string(out), "lock") {
		t.Fatalf("Open from another process: %s", out)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, dir, nil).Close()
}

// TestClosed: after Close, every call returns ErrClosed.
func TestClosed(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem()})
	snap := db.NewSnapshot()
	openSnap := db.NewSnapshot()
	openIter := db.NewIter(nil)
	if err := db.Close(); err == nil || !strings.Contains(err.Error(), "iterators 1, snapshots 2") {
		t.Fatalf("Close with an iterator and two snapshots open: %v", err)
	}
	b := db.NewBatch()
	b.Put([]byte("k"), []byte("v"))
	_, getErr := db.Get([]byte("k"))
	_, snapErr := snap.Get([]byte("k"))
	_, traceErr := db.TraceGet([]byte("k"))
	_, snapTraceErr := snap.TraceGet([]byte("k"))
	it := db.NewIter(nil)
	it.First()
	for name, err := range map[string]error{
		"Put":               db.Put([]byte("k"), []byte("v")),
		"Delete":            db.Delete([]byte("k")),
		"Apply":             db.Apply(b),
		"Get":               getErr,
		"Snapshot.Get":      snapErr,
		"TraceGet":          traceErr,
		"Snapshot.TraceGet": snapTraceErr,
		"Flush":             db.Flush(),
		"Compact":           db.Compact(),
		"Close":             db.Close(),
		"Iterator":          it.Error(),
		"Snapshot.Close of a snapshot taken before": openSnap.Close(),
		"Iterator.Close of an iterator made before": openIter.Close(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestFlushError: a flush that fails is reported to Flush, to later writers
// and to Close, and the data it could not write is still recovered from the
// WAL on the next Open.
func TestFlushError(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	db := mustOpen(t, "db", &Options{FS: efs})
	if err := db.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".sst") {
			return vfs.ErrInjected
		}
		return nil
	})
	if err := db.Flush(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Flush: %v, want the injected error", err)
	}
	if err := db.Put([]byte("b"), []byte("2")); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Put after a failed flush: %v, want the injected error", err)
	}
	if err := db.Close(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Close: %v, want the injected error", err)
	}
	efs.SetInjector(nil)
	db = mustOpen(t, "db", &Options{FS: mem})
	defer db.Close()
	if v, err := db.Get([]byte("a")); err != nil || string(v) != "1" {
		t.Fatalf("a after recovery = %q, %v", v, err)
	}
}

// TestWALWriteError: a write whose WAL append fails is not acknowledged and
// not visible.
func TestWALWriteError(t *testing.T) {
	efs := vfs.NewErrorFS(vfs.NewMem())
	db := mustOpen(t, "db", &Options{FS: efs})
	defer db.Close()
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") {
			return vfs.ErrInjected
		}
		return nil
	})
	if err := db.Put([]byte("a"), []byte("1")); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Put: %v, want the injected error", err)
	}
	if _, err := db.Get([]byte("a")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a write that failed: %v, want ErrNotFound", err)
	}
}

// TestCorruption flips bytes in each kind of file and checks that the
// damage is reported as ErrCorruption naming the file, never returned as
// data.
func TestCorruption(t *testing.T) {
	build := func(t *testing.T) string {
		dir := t.TempDir()
		db := mustOpen(t, dir, &Options{BlockCacheSize: -1})
		for i := 0; i < 500; i++ {
			if err := db.Put(fmt.Appendf(nil, "key%04d", i), fmt.Appendf(nil, "value%04d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		for i := 500; i < 600; i++ {
			if err := db.Put(fmt.Appendf(nil, "key%04d", i), []byte("in the WAL")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	only := func(t *testing.T, dir, pattern string) string {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		if len(m) != 1 {
			t.Fatalf("%s: %v", pattern, m)
		}
		return m[0]
	}
	wantCorruption := func(t *testing.T, err error, file string) {
		t.Helper()
		if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), filepath.Base(file)) {
			t.Fatalf("got %v, want ErrCorruption naming %s", err, filepath.Base(file))
		}
	}

	t.Run("sstable data block", func(t *testing.T) {
		dir := build(t)
		// Recovery wrote the WAL's 100 keys to a second table; damage the
		// first, which holds key0000-key0499, near its start.
		tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
		flipByte(t, tables[0], 10)
		db := mustOpen(t, dir, &Options{BlockCacheSize: -1})
		defer db.Close()
		_, err := db.Get([]byte("key0000"))
		wantCorruption(t, err, tables[0])
		it := db.NewIter(nil)
		for it.First(); it.Valid(); it.Next() {
		}
		wantCorruption(t, it.Close(), tables[0])
	})
	t.Run("sstable footer", func(t *testing.T) {
		dir := build(t)
		tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
		flipByte(t, tables[0], -3)
		_, err := Open(dir, nil)
		wantCorruption(t, err, tables[0])
	})
	t.Run("WAL middle", func(t *testing.T) {
		dir := t.TempDir()
		db := mustOpen(t, dir, nil)
		for i := 0; i < 100; i++ {
			db.Put(fmt.Appendf(nil, "key%04d", i), []byte("value"))
		}
		// Crash without Close: the WAL is not flushed.
		log := only(t, dir, "*.log")
		b, _ := os.ReadFile(log)
		crashed := t.TempDir()
		for _, name := range []string{"CURRENT", filepath.Base(only(t, dir, "MANIFEST-*"))} {
			data, _ := os.ReadFile(filepath.Join(dir, name))
			os.WriteFile(filepath.Join(crashed, name), data, 0o644)
		}
		// A mapped WAL ends in zeros allocated ahead until it is closed:
		// flip a byte in the middle of the log, not of the file.
		b[len(bytes.TrimRight(b, "\x00"))/2] ^= 0x40
		os.WriteFile(filepath.Join(crashed, filepath.Base(log)), b, 0o644)
		db.Close()
		_, err := Open(crashed, nil)
		wantCorruption(t, err, log)
	})
	t.Run("MANIFEST", func(t *testing.T) {
		dir := build(t)
		m := only(t, dir, "MANIFEST-*")
		flipByte(t, m, 10)
		_, err := Open(dir, nil)
		wantCorruption(t, err, m)
	})
	t.Run("CURRENT", func(t *testing.T) {
		dir := build(t)
		os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("garbage\n"), 0o644)
		_, err := Open(dir, nil)
		wantCorruption(t, err, "CURRENT")
	})
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{{MemTableSize: -1}, {BloomBitsPerKey: -2}, {BloomBitsPerKey: 65}, {BlockSize: -4096},
		{L0CompactionThreshold: 8, L0StopWritesThreshold: 8}} {
		o.FS = vfs.NewMem()
		if db, err := Open("db", &o); err == nil {
			db.Close()
			t.Errorf("Open with %+v succeeded", o)
		}
	}
}

// TestReadSeqAfterState: a key that always exists is never missing from a
// read, however flushes race with it. A read must take its sequence number
// with its memtables and version: had Get read the sequence number first,
// an overwrite and a flush in between would drop the version it needs
// (shadowed by a newer one it cannot see) and it would find nothing.
func TestReadSeqAfterState(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), NoSync: true})
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var misses atomic.Int64
	for r := 0; r < 4; r++ {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := db.Get([]byte("k")); err != nil {
					misses.Add(1)
				}
				it := db.NewIter(nil)
				if !it.First() {
					misses.Add(1)
				}
				it.Close()
			}
		})
	}
	deadline := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		db.Put([]byte("k"), fmt.Appendf(nil, "v%d", i))
		db.Put([]byte("k"), fmt.Appendf(nil, "w%d", i))
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := misses.Load(); n > 0 {
		t.Fatalf("a key that always exists was missing from %d reads", n)
	}
}

// TestHighCompactionThreshold: raising only the compaction threshold raises
// the write thresholds with it, so writes never wait for a compaction the
// picker will not start.
func TestHighCompactionThreshold(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), L0CompactionThreshold: 16})
	defer db.Close()
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 20; i++ {
			db.Put([]byte(fmt.Sprint(i)), []byte("v"))
			if err := db.Flush(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("writes hang with L0CompactionThreshold 16")
	}
}

// TestCrashDuringFirstOpen: a first Open that dies before writing CURRENT
// leaves files that hold no acknowledged write; the next Open starts over.
// A directory whose CURRENT is lost while tables remain is refused.
func TestCrashDuringFirstOpen(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpRename {
			return vfs.ErrInjected
		}
		return nil
	})
	if _, err := Open("db", &Options{FS: efs}); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("first Open: %v, want the injected error", err)
	}
	db := mustOpen(t, "db", &Options{FS: mem})
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := mem.Remove("db/CURRENT"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("db", &Options{FS: mem}); !errors.Is(err, ErrCorruption) {
		t.Fatalf("Open without CURRENT but with tables: %v, want ErrCorruption", err)
	}
}

// TestPerLevelFilters: each level's new tables get that level's filter, and
// a level given none writes tables without one.
func TestPerLevelFilters(t *testing.T) {
	var byLevel [7]TableFilter
	for l := range 6 {
		byLevel[l] = BloomFilter(10)
	}
	byLevel[6] = FuseFilter()
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), FilterPolicy: PerLevelFilters(byLevel)})
	defer func() { db.Close() }()
	db.Put([]byte("a"), []byte("1"))
	db.Flush()
	filters := func() (names []string) {
		rs, _ := db.loadReadState(readLatest)
		defer rs.unref()
		v := rs.v
		for level, files := range v.Levels {
			for _, f := range files {
				names = append(names, fmt.Sprintf("L%d:%s", level, v.tables[f.FileNum].reader.Properties().FilterPolicy))
			}
		}
		return names
	}
	if got := fmt.Sprint(filters()); got != "[L0:shale.bloom.v1]" {
		t.Fatalf("after a flush: %s", got)
	}
	db.Compact()
	if got := fmt.Sprint(filters()); got != "[L6:shale.fuse8.v1]" {
		t.Fatalf("after Compact: %s", got)
	}
	byLevel[6] = nil
	db.Close()
	db = mustOpen(t, "db", &Options{FS: db.opts.FS, FilterPolicy: PerLevelFilters(byLevel)})
	db.Compact()
	if got := fmt.Sprint(filters()); got != "[L6:]" {
		t.Fatalf("after Compact with no L6 filter: %s", got)
	}
	if v, err := db.Get([]byte("a")); err != nil || string(v) != "1" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}

// TestOpenRemovesObsoleteFiles: Open deletes what nothing refers to (an
// orphan table, an old MANIFEST, replayed WALs, a temp file) and keeps the
// live files.
func TestOpenRemovesObsoleteFiles(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: fs})
	db.Put([]byte("a"), []byte("1"))
	db.Flush()
	db.Put([]byte("b"), []byte("2")) // in the WAL only
	db.Close()
	for _, name := range []string{"db/000999.sst", "db/MANIFEST-000998", "db/CURRENT.000997.dbtmp"} {
		f, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	db = mustOpen(t, "db", &Options{FS: fs})
	defer db.Close()
	names, _ := fs.List("db")
	var kinds []string
	for _, name := range names {
		typ, _, ok := parseFileName(name)
		if !ok {
			t.Fatalf("unexpected file %s", name)
		}
		kinds = append(kinds, [...]string{"log", "sst", "MANIFEST", "CURRENT", "LOCK", "tmp"}[typ])
	}
	// Sorted by name: the flushed table, the new WAL, the table recovery
	// wrote from the old WAL, and one each of the rest.
	if got := strings.Join(kinds, " "); got != "sst log sst CURRENT LOCK MANIFEST" {
		t.Fatalf("after Open the directory holds %v (%s)", names, got)
	}
	for k, want := range map[string]string{"a": "1", "b": "2"} {
		if v, err := db.Get([]byte(k)); err != nil || string(v) != want {
			t.Fatalf("Get(%s) = %q, %v", k, v, err)
		}
	}
}

// failingFilter is a table filter that is never built, as a binary fuse
// filter is not when no seed peels its keys.
type failingFilter struct{}

func (failingFilter) Name() string                         { return "test.failing" }
func (failingFilter) NewWriter() filter.Writer             { return failingFilter{} }
func (failingFilter) Decode([]byte) (filter.Filter, error) { return nil, errors.New("no filter") }
func (failingFilter) AddHash(uint64)                       {}
func (failingFilter) Finish() ([]byte, error)              { return nil, errors.New("no filter for these keys") }

// TestFilterBuildFails: a filter that cannot be built fails neither the
// flush nor the compaction writing the table (nor panics in them): the table
// is written without a filter, its properties say why, and lookups say it
// has none.
func TestFilterBuildFails(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), FilterPolicy: UniformFilter(tableFilter{failingFilter{}})})
	defer db.Close()
	for i := range 100 {
		if err := db.Put(fmt.Appendf(nil, "k%03d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, level int) {
		t.Helper()
		rs, _ := db.loadReadState(readLatest)
		defer rs.unref()
		v := rs.v
		if len(v.Levels[level]) != 1 {
			t.Fatalf("after %s: want one table in L%d", when, level)
		}
		props := v.tables[v.Levels[level][0].FileNum].reader.Properties()
		if props.FilterPolicy != "" || props.FilterError != "test.failing: no filter for these keys" {
			t.Fatalf("after %s: table has filter %q, filter error %q", when, props.FilterPolicy, props.FilterError)
		}
		trace, err := db.TraceGet([]byte("k042"))
		if err != nil || string(trace.Value) != "v" {
			t.Fatalf("after %s: Get = %q, %v", when, trace.Value, err)
		}
		if s := trace.Steps[len(trace.Steps)-1]; s.FilterChecked || s.Outcome != "found" || s.FilterError == "" {
			t.Fatalf("after %s: lookup trace\n%s", when, trace)
		}
		trace, err = db.TraceGet([]byte("k042x"))
		if err != nil || !strings.Contains(trace.String(), "no filter (test.failing: no filter for these keys); not in the table") {
			t.Fatalf("after %s: lookup of an absent key: %v\n%s", when, err, trace)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("a flush", 0)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	check("a compaction", 6)
}

// TestCloseWithOpenIterators: Close with iterators and snapshots still open
// releases everything (the LOCK too: the store opens again) and says how
// many were left open; those iterators and snapshots then return ErrClosed
// without touching what Close released. Under -race, iterators moving in
// other goroutines while Close runs check that no state is shared without
// synchronization.
func TestCloseWithOpenIterators(t *testing.T) {
	fs := &openFilesFS{FS: vfs.NewMem()}
	opts := &Options{FS: fs, BlockCacheSize: -1}
	db := mustOpen(t, "db", opts)
	for i := range 200 {
		db.Put(fmt.Appendf(nil, "k%03d", i), []byte("v"))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	snaps := []*Snapshot{db.NewSnapshot(), db.NewSnapshot()}
	idle := db.NewIter(nil)
	idle.First()
	closedBefore := db.NewIter(nil)
	if err := closedBefore.Close(); err != nil {
		t.Fatal(err)
	}
	const movers = 3
	var wg sync.WaitGroup
	var errs goErrors
	started := make(chan struct{}, movers)
	for g := range movers {
		it := db.NewIter(nil)
		wg.Go(func() {
			started <- struct{}{}
			// Walk back and forth until Close stops the iterator; a
			// bounded number of walks, in case it never does.
			for walk := 0; walk < 100_000; walk++ {
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				if err := it.Error(); err != nil {
					if !errors.Is(err, ErrClosed) {
						errs.report(fmt.Errorf("mover %d: %v, want ErrClosed", g, err))
					}
					if err := it.Close(); !errors.Is(err, ErrClosed) {
						errs.report(fmt.Errorf("mover %d: Close: %v, want ErrClosed", g, err))
					}
					return
				}
				if n != 200 {
					errs.report(fmt.Errorf("mover %d saw %d keys, want 200", g, n))
					return
				}
			}
			errs.report(fmt.Errorf("mover %d: Close never stopped the iterator", g))
		})
	}
	for range movers {
		select {
		case <-started:
		case <-time.After(time.Minute):
			t.Fatal("the iterators' goroutines did not start")
		}
	}
	err := db.Close()
	if err == nil || errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "iterators 4, snapshots 2") {
		t.Fatalf("Close with 4 iterators and 2 snapshots open: %v", err)
	}
	// Close released everything: no file is held open, although the
	// iterators are not closed yet.
	if n := fs.open.Load(); n != 0 {
		t.Fatalf("%d files still open after Close", n)
	}
	wg.Wait()
	errs.check(t)
	if idle.Next() || !errors.Is(idle.Error(), ErrClosed) || !errors.Is(idle.Close(), ErrClosed) {
		t.Fatalf("an iterator left open: Next, Error %v", idle.Error())
	}
	for _, s := range snaps {
		if _, err := s.Get([]byte("k001")); !errors.Is(err, ErrClosed) {
			t.Fatalf("Get of a snapshot left open: %v", err)
		}
		if it := s.NewIter(nil); it.First() || !errors.Is(it.Error(), ErrClosed) {
			t.Fatalf("iterator of a snapshot left open: %v", it.Error())
		}
		if err := s.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Close of a snapshot left open: %v", err)
		}
	}
	// The LOCK was released: the store opens again.
	db = mustOpen(t, "db", opts)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// openFilesFS counts the files open through it: all of them (written,
// read, and the LOCK), and the table files open for reading, with the most
// of those ever open at once. It also counts reads of a closed file.
type openFilesFS struct {
	vfs.FS
	open        atomic.Int64
	tablesOpen  atomic.Int64
	maxTables   atomic.Int64
	readsClosed atomic.Int64
}

func (fs *openFilesFS) Create(name string) (vfs.File, error) { return fs.opened(fs.FS.Create(name)) }

func (fs *openFilesFS) Open(name string) (vfs.File, error) {
	f, err := fs.opened(fs.FS.Open(name))
	if err == nil && strings.HasSuffix(name, ".sst") {
		f.(*countedFile).table = true
		n := fs.tablesOpen.Add(1)
		for m := fs.maxTables.Load(); n > m && !fs.maxTables.CompareAndSwap(m, n); m = fs.maxTables.Load() {
		}
	}
	return f, err
}

func (fs *openFilesFS) Lock(name string) (io.Closer, error) {
	l, err := fs.FS.Lock(name)
	if err != nil {
		return nil, err
	}
	fs.open.Add(1)
	return countedLock{l, fs}, nil
}

func (fs *openFilesFS) opened(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	fs.open.Add(1)
	return &countedFile{File: f, fs: fs}, nil
}

type countedFile struct {
	vfs.File
	fs     *openFilesFS
	table  bool // an .sst open for reading
	closed atomic.Bool
}

func (f *countedFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed.Load() {
		f.fs.readsClosed.Add(1)
	}
	return f.File.ReadAt(p, off)
}

func (f *countedFile) Close() error {
	if !f.closed.Swap(true) {
		f.fs.open.Add(-1)
		if f.table {
			f.fs.tablesOpen.Add(-1)
		}
	}
	return f.File.Close()
}

type countedLock struct {
	io.Closer
	fs *openFilesFS
}

func (l countedLock) Close() error {
	l.fs.open.Add(-1)
	return l.Closer.Close()
}
