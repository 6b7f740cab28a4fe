package shale

import (
	"bytes"
	"errors"
	"fmt"
	iofs "io/fs"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// TestTableCacheBound: a store of many tables with MaxOpenFiles 4 serves
// concurrent writes, Gets and iterations correctly while never holding more
// than 4 table files open, reopens evicted ones, and Close leaves no file
// open.
func TestTableCacheBound(t *testing.T) {
	const maxOpen = 4
	fs := &openFilesFS{FS: vfs.NewMem()}
	db := mustOpen(t, "db", &Options{FS: fs, MaxOpenFiles: maxOpen, MemTableSize: 32 << 10,
		TargetFileSize: 8 << 10, BlockSize: 1 << 10, BlockCacheSize: 16 << 10, NoSync: true})

	// Every value names its key, so a concurrent reader can tell a wrong
	// answer without knowing which write it races with.
	const keys = 2000
	key := func(i int) []byte { return fmt.Appendf(nil, "key%05d", i) }
	rng := rand.New(rand.NewPCG(99, 0))
	value := func(i int) []byte { // incompressible past the key
		return fmt.Appendf(nil, "%s-%016x%016x%016x", key(i), rng.Uint64(), rng.Uint64(), rng.Uint64())
	}
	checkValue := func(k, v []byte) error {
		if !bytes.HasPrefix(v, append(k[:len(k):len(k)], '-')) {
			return fmt.Errorf("key %q has value %q", k, v)
		}
		return nil
	}

	var (
		model   = make(map[string][]byte) // written by the writer alone
		stop    atomic.Bool
		wg      sync.WaitGroup
		readErr = make(chan error, 4)
	)
	reader := func(seed uint64) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 0))
		for !stop.Load() {
			if rng.IntN(8) == 0 {
				lo := rng.IntN(keys)
				it := db.NewIter(&IterOptions{LowerBound: key(lo), UpperBound: key(lo + 200)})
				n := 0
				for ok := it.First(); ok && n < 200; ok = it.Next() {
					if err := checkValue(it.Key(), it.Value()); err != nil {
						readErr <- err
						it.Close()
						return
					}
					n++
				}
				if err := it.Close(); err != nil {
					readErr <- err
					return
				}
				continue
			}
			k := key(rng.IntN(keys))
			v, err := db.Get(k)
			if err == ErrNotFound {
				continue
			}
			if err == nil {
				err = checkValue(k, v)
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}
	for i := range 3 {
		wg.Add(1)
		go reader(uint64(i))
	}
	for range 12_000 {
		i := rng.IntN(keys)
		k := key(i)
		if rng.IntN(10) == 0 {
			if err := db.Delete(k); err != nil {
				t.Fatal(err)
			}
			delete(model, string(k))
			continue
		}
		v := value(i)
		if err := db.Put(k, v); err != nil {
			t.Fatal(err)
		}
		model[string(k)] = v
	}
	stop.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case err := <-readErr:
		t.Fatal(err)
	case <-time.After(time.Minute):
		t.Fatal("readers did not stop within a minute")
	}
	select {
	case err := <-readErr:
		t.Fatal(err)
	default:
	}

	// The store holds what the writer wrote, read by Get and by a scan.
	for i := range keys {
		k := key(i)
		v, err := db.Get(k)
		want, ok := model[string(k)]
		switch {
		case !ok && err != ErrNotFound:
			t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", k, v, err)
		case ok && (err != nil || !bytes.Equal(v, want)):
			t.Fatalf("Get(%q) = %q, %v; want %q", k, v, err, want)
		}
	}
	it := db.NewIter(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if want := model[string(it.Key())]; !bytes.Equal(it.Value(), want) {
			t.Fatalf("iterator: %q = %q; want %q", it.Key(), it.Value(), want)
		}
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n != len(model) {
		t.Fatalf("iterator saw %d keys; want %d", n, len(model))
	}

	// The count of files open is compared once nothing opens or closes
	// one: background compactions, and the deleter closing the tables
	// they replaced, would otherwise change it between the two reads.
	resume := quiesce(t, db)
	m := db.Metrics()
	fsTablesOpen := fs.tablesOpen.Load()
	resume()
	tables := 0
	for _, l := range m.Levels {
		tables += l.Files
	}
	t.Logf("%d tables; at most %d table files open at once; %d reopens, %d hits",
		tables, fs.maxTables.Load(), m.TableCacheReopens, m.TableCacheHits)
	if tables < 3*maxOpen {
		t.Fatalf("only %d tables: the test needs many more than %d", tables, maxOpen)
	}
	if got := fs.maxTables.Load(); got > maxOpen {
		t.Errorf("%d table files open at once; MaxOpenFiles is %d", got, maxOpen)
	}
	if m.TableFilesOpen > maxOpen || int64(m.TableFilesOpen) != fsTablesOpen {
		t.Errorf("Metrics: %d table files open; the file system has %d (MaxOpenFiles %d)", m.TableFilesOpen, fsTablesOpen, maxOpen)
	}
	if m.TableCacheReopens == 0 {
		t.Errorf("no table was reopened: the cache never closed a file")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fs.open.Load(); n != 0 {
		t.Errorf("%d files open after Close", n)
	}
	if n := fs.readsClosed.Load(); n != 0 {
		t.Errorf("%d reads of a closed file", n)
	}
}

// quiesce stops the DB's background work on tables until resume is
// called: it flushes the memtable, holds the compaction lock (a compaction
// under way finishes first, and none starts) and releases the tables
// retired so far. With no read running either, no table file opens or
// closes until resume.
func quiesce(t *testing.T, db *DB) (resume func()) {
	t.Helper()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.compactMu.Lock()
	db.releaseRetired(false)
	return db.compactMu.Unlock
}

// TestTableCacheCountAfterClose: the count of open files the metrics
// report (openFiles) is the file system's after every open, eviction and
// Close of a table file, whether its descriptor was open or evicted.
func TestTableCacheCountAfterClose(t *testing.T) {
	fs := &openFilesFS{FS: vfs.NewMem()}
	var names []string
	for i := range 4 {
		name := fmt.Sprintf("%06d.sst", i)
		writeFile(t, fs, name, []byte(name))
		names = append(names, name)
	}
	c := newTableCache(fs, 2, false)
	check := func(step string) {
		t.Helper()
		if got, want := c.openFiles(), fs.tablesOpen.Load(); int64(got) != want {
			t.Fatalf("%s: openFiles says %d, the file system has %d open", step, got, want)
		}
	}
	var files []*tableFile
	for _, name := range names { // the last two evict the first two
		f, err := c.openFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f.tableOpened()
		files = append(files, f)
		check("open " + name)
	}
	for i, f := range files {
		if _, err := f.ReadAt(make([]byte, 1), 0); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("read of file %d", i))
	}
	for i, f := range files {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("close of file %d", i))
	}
	if n := c.openFiles(); n != 0 {
		t.Fatalf("%d files open after every Close", n)
	}
}

// TestTableCacheNeverClosesInUse: with one slot, a file in a read keeps
// its descriptor; a read of another file waits for the slot and gets it
// once that read is done, and the first file is then reopened.
func TestTableCacheNeverClosesInUse(t *testing.T) {
	fs := &openFilesFS{FS: vfs.NewMem()}
	for _, name := range []string{"a.sst", "b.sst"} {
		f, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(name)); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	c := newTableCache(fs, 1, false)
	a, err := c.openFile("a.sst")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.openFile("b.sst") // closes a's descriptor, idle
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.acquire(true); err != nil { // reopens a, closing b's
		t.Fatal(err)
	}
	c.mu.Lock()
	evicted := c.evictIdle()
	c.mu.Unlock()
	if evicted || a.fd == nil {
		t.Fatal("the cache closed a descriptor in use")
	}
	got := make(chan error, 1)
	go func() {
		buf := make([]byte, 5)
		_, err := b.ReadAt(buf, 0)
		if err == nil && string(buf) != "b.sst" {
			err = fmt.Errorf("read %q", buf)
		}
		got <- err
	}()
	a.release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read waiting for the only slot never got it")
	}
	if n := c.reopens.Load(); n != 2 {
		t.Errorf("%d reopens; want 2 (a, then b)", n)
	}
	if fs.maxTables.Load() != 1 || fs.readsClosed.Load() != 0 {
		t.Errorf("%d files open at once, %d reads of a closed file", fs.maxTables.Load(), fs.readsClosed.Load())
	}
	// A live table whose file went missing is damage, reported as such.
	if err := fs.Remove("a.sst"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ReadAt(make([]byte, 1), 0); !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "a.sst") {
		t.Errorf("read of a table whose file is gone: %v", err)
	}
	a.Close()
	b.Close()
	if _, err := a.ReadAt(make([]byte, 1), 0); err == nil {
		t.Error("a read after Close succeeded")
	}
	if n := fs.open.Load(); n != 0 {
		t.Errorf("%d files open after Close", n)
	}
}

// TestTableCacheConcurrentReads: reads of 8 files from 4 goroutines
// through a cache of 3 slots, one file closed midway, each read checked
// against the file's bytes. No descriptor is closed while a read uses it
// (checkedFS sees every close during a read), never more than 3 are open,
// every read of an open table succeeds, and Close leaves none open. With
// mapped reads, the reads are views of the files' mappings, and no
// mapping is unmapped (its descriptor closed) during a view.
func TestTableCacheConcurrentReads(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		t.Run(fmt.Sprintf("mapped=%v", mapped), func(t *testing.T) { testTableCacheConcurrentReads(t, mapped) })
	}
}

func testTableCacheConcurrentReads(t *testing.T, mapped bool) {
	const files, maxOpen, readers, reads = 8, 3, 4, 2_000
	fs := &checkedFS{FS: vfs.NewMem()}
	content := func(i int) []byte { return bytes.Repeat(fmt.Appendf(nil, "file %d;", i), 64) }
	tf := make([]*tableFile, files)
	c := newTableCache(fs, maxOpen, mapped)
	for i := range tf {
		name := fmt.Sprintf("%d.sst", i)
		w, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(content(i)); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if tf[i], err = c.openFile(name); err != nil {
			t.Fatal(err)
		}
		tf[i].tableOpened()
	}
	const closedMidway = 0
	var closing sync.Once
	errs := make(chan error, readers)
	for r := range readers {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			buf := make([]byte, 16)
			for n := range reads {
				if r == 0 && n == reads/2 {
					closing.Do(func() { tf[closedMidway].Close() })
				}
				i := rng.IntN(files)
				off := rng.IntN(len(content(i)) - len(buf))
				var err error
				if mapped {
					var ok bool
					ok, err = tf[i].ViewAt(int64(off), len(buf), func(b []byte) error {
						copy(buf, b)
						return nil
					})
					if !ok {
						err = errors.New("ViewAt did not view a mapped file")
					}
				} else {
					_, err = tf[i].ReadAt(buf, int64(off))
				}
				switch {
				case i == closedMidway && errors.Is(err, iofs.ErrClosed):
				case err != nil:
					errs <- fmt.Errorf("read of file %d: %w", i, err)
					return
				case !bytes.Equal(buf, content(i)[off:off+len(buf)]):
					errs <- fmt.Errorf("file %d at %d: read %q", i, off, buf)
					return
				}
			}
			errs <- nil
		}()
	}
	for range readers {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("readers did not finish within a minute")
		}
	}
	for _, f := range tf {
		f.Close()
	}
	t.Logf("%d hits, %d reopens", c.hits.Load(), c.reopens.Load())
	if n := fs.closedInUse.Load(); n != 0 {
		t.Errorf("%d descriptors closed during a read or read after their close", n)
	}
	if n := fs.maxOpen.Load(); n > maxOpen {
		t.Errorf("%d files open at once; the cache has %d slots", n, maxOpen)
	}
	if c.reopens.Load() == 0 {
		t.Error("no reopens: the cache never closed a file, so the test tested nothing")
	}
	if n := fs.open.Load(); n != 0 || c.openFiles() != 0 {
		t.Errorf("%d files open after Close (the cache counts %d)", n, c.openFiles())
	}
	if mapped && fs.views.Load() == 0 {
		t.Error("no views: the reads did not go through the mappings")
	}
}

// TestTableCacheKeepsHotFile: with 2 slots, a file read between reads of
// 10 others, each read once a turn, keeps its descriptor: the cache
// closes the files read once, not the one read again and again. The hits
// and reopens are counted exactly.
func TestTableCacheKeepsHotFile(t *testing.T) {
	fs := vfs.NewMem()
	c := newTableCache(fs, 2, false)
	open := func(name string) *tableFile {
		w, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		f, err := c.openFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f.tableOpened()
		return f
	}
	// The hot file is opened last, so that it stays open only if reads
	// promote it: opened first, it would sit at the back, where each file
	// opened after it goes in front of it.
	var cold []*tableFile
	for i := range 10 {
		cold = append(cold, open(fmt.Sprintf("%d.sst", i)))
	}
	hot := open("hot.sst")
	read := func(f *tableFile) {
		if _, err := f.acquire(true); err != nil {
			t.Fatal(err)
		}
		f.release()
	}
	// Each file opened went last, displacing the one opened before it, so
	// the first cold file and the hot one are open. Reading the hot file
	// is a hit, and so is the first cold read.
	read(hot)
	for turn := range 3 {
		for i, f := range cold {
			read(hot)
			read(f)
			if hot.fd == nil {
				t.Fatalf("turn %d: reading file %d closed the hot file", turn, i)
			}
		}
	}
	if want := int64(3*len(cold) - 1); c.reopens.Load() != want {
		t.Errorf("%d reopens; want %d (every cold read but the first)", c.reopens.Load(), want)
	}
	// Every read of the hot file was a hit.
	if n := c.hits.Load(); n != 2+3*int64(len(cold)) {
		t.Errorf("%d hits; want %d", n, 2+3*len(cold))
	}
	hot.Close()
	for _, f := range cold {
		f.Close()
	}
}

// checkedFS counts the files open, and the reads of a closed file and
// closes of a file in a ReadAt (a read yields midway to widen that
// window).
type checkedFS struct {
	vfs.FS
	open, maxOpen atomic.Int64
	closedInUse   atomic.Int64
	views         atomic.Int64
}

func (fs *checkedFS) Open(name string) (vfs.File, error) {
	f, err := fs.FS.Open(name)
	if err != nil {
		return nil, err
	}
	n := fs.open.Add(1)
	for m := fs.maxOpen.Load(); n > m && !fs.maxOpen.CompareAndSwap(m, n); m = fs.maxOpen.Load() {
	}
	return &checkedFile{File: f, fs: fs}, nil
}

type checkedFile struct {
	vfs.File
	fs     *checkedFS
	reads  atomic.Int32
	closed atomic.Bool
}

func (f *checkedFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	defer f.reads.Add(-1)
	if f.closed.Load() {
		f.fs.closedInUse.Add(1)
	}
	runtime.Gosched()
	return f.File.ReadAt(p, off)
}

func (f *checkedFile) MapForReads() error { return f.File.(vfs.ReadMapper).MapForReads() }

func (f *checkedFile) ViewAt(off int64, n int, fn func([]byte) error) error {
	f.reads.Add(1)
	defer f.reads.Add(-1)
	if f.closed.Load() {
		f.fs.closedInUse.Add(1)
	}
	f.fs.views.Add(1)
	runtime.Gosched()
	return f.File.(vfs.ReadMapper).ViewAt(off, n, fn)
}

func (f *checkedFile) Close() error {
	if f.closed.Swap(true) {
		return iofs.ErrClosed
	}
	if f.reads.Load() != 0 {
		f.fs.closedInUse.Add(1)
	}
	f.fs.open.Add(-1)
	return f.File.Close()
}

// BenchmarkTableCacheHit measures what the cache alone adds to a read of
// a file whose descriptor is open (borrowing and returning it), from every
// core at once over 16 files; -cpu 1,2,... shows how it scales.
func BenchmarkTableCacheHit(b *testing.B) {
	const files = 16
	fs := vfs.NewMem()
	c := newTableCache(fs, files, false)
	tf := make([]*tableFile, files)
	for i := range tf {
		name := fmt.Sprintf("%d.sst", i)
		w, err := fs.Create(name)
		if err != nil {
			b.Fatal(err)
		}
		w.Close()
		if tf[i], err = c.openFile(name); err != nil {
			b.Fatal(err)
		}
		tf[i].tableOpened()
	}
	var seed atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(seed.Add(1), 0))
		for pb.Next() {
			f := tf[rng.IntN(files)]
			if _, err := f.acquire(true); err != nil {
				b.Error(err)
				return
			}
			f.release()
		}
	})
	if c.reopens.Load() != 0 {
		b.Errorf("%d reopens: the benchmark measures hits", c.reopens.Load())
	}
}

// TestTableCacheCompactionKeepsHotFile: with 3 slots, a compaction that
// merges 6 tables into more than 3, none of them the table Gets keep
// reading, leaves that table's descriptor open: neither a scan's reads
// nor the reads that open a new table count as uses, so the compaction's
// files displace each other, not the hot table.
func TestTableCacheCompactionKeepsHotFile(t *testing.T) {
	fs := &tableOpensFS{FS: vfs.NewMem(), opens: map[string]int{}}
	db := mustOpen(t, "db", &Options{FS: fs, MaxOpenFiles: 3, BlockCacheSize: -1, TargetFileSize: 4 << 10,
		DisableAutomaticCompactions: true, NoSync: true})
	defer db.Close()
	rng := rand.New(rand.NewPCG(5, 5))
	// putKeys writes prefix and i for i = from, from+step, ... below to,
	// with incompressible values, in a table of its own.
	putKeys := func(prefix string, from, to, step int) {
		for i := from; i < to; i += step {
			v := fmt.Appendf(nil, "%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64())
			if err := db.Put(fmt.Appendf(nil, "%s%04d", prefix, i), v); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	putKeys("hot", 0, 20, 1)
	if err := db.Compact(); err != nil { // the hot table goes to L6
		t.Fatal(err)
	}
	for r := range 6 { // 6 overlapping L0 tables, below the hot table's key range
		putKeys("cold", r, 600, 6)
	}
	levels := db.Tables()
	if len(levels[0]) != 6 || len(levels[6]) != 1 {
		t.Fatalf("want 6 tables in L0 and the hot one in L6: %s", db.Metrics().Shape())
	}
	hotNum := levels[6][0].FileNum
	hot := db.fileName(fileTypeTable, hotNum)
	get := func() {
		if _, err := db.Get([]byte("hot0012")); err != nil {
			t.Fatal(err)
		}
	}
	get() // reopens the hot table, which the flushes' tables displaced
	opens := fs.count(hot)
	if ran, err := db.compactOnce(); err != nil || !ran {
		t.Fatalf("compaction: ran %v, %v", ran, err)
	}
	levels = db.Tables()
	if n := len(levels[6]); len(levels[0]) != 0 || n <= 4 || levels[6][n-1].FileNum != hotNum {
		t.Fatalf("want the L0 tables merged into more than 3 beside the hot table: %s", db.Metrics().Shape())
	}
	get()
	if n := fs.count(hot) - opens; n != 0 {
		t.Errorf("the hot table was opened %d times more during the compaction and the Get after it", n)
	}
}

// tableOpensFS counts the opens of each file.
type tableOpensFS struct {
	vfs.FS
	mu    sync.Mutex
	opens map[string]int
}

func (fs *tableOpensFS) Open(name string) (vfs.File, error) {
	fs.mu.Lock()
	fs.opens[name]++
	fs.mu.Unlock()
	return fs.FS.Open(name)
}

func (fs *tableOpensFS) count(name string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.opens[name]
}
