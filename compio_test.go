package shale

// Tests of compaction I/O: compactions read their inputs in large
// sequential chunks without going through the block cache, and sync their
// output as they write it.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/vfs"
)

// ioCountFS counts the ReadAt and Sync calls made on table files.
type ioCountFS struct {
	vfs.FS
	mu                sync.Mutex
	tableReads        int
	largestTableRead  int
	tableBytesRead    int64
	tableSyncs        int
	countTableSyncsOf map[string]int // Sync calls per table file created
}

func newIOCountFS(fs vfs.FS) *ioCountFS {
	return &ioCountFS{FS: fs, countTableSyncsOf: map[string]int{}}
}

type ioCountFile struct {
	vfs.File
	fs    *ioCountFS
	name  string
	table bool
}

func (fs *ioCountFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &ioCountFile{File: f, fs: fs, name: name, table: strings.HasSuffix(name, ".sst")}, nil
}

func (fs *ioCountFS) Open(name string) (vfs.File, error) {
	f, err := fs.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &ioCountFile{File: f, fs: fs, name: name, table: strings.HasSuffix(name, ".sst")}, nil
}

func (f *ioCountFile) ReadAt(p []byte, off int64) (int, error) {
	if f.table {
		f.fs.mu.Lock()
		f.fs.tableReads++
		f.fs.tableBytesRead += int64(len(p))
		f.fs.largestTableRead = max(f.fs.largestTableRead, len(p))
		f.fs.mu.Unlock()
	}
	return f.File.ReadAt(p, off)
}

func (f *ioCountFile) Sync() error {
	if f.table {
		f.fs.mu.Lock()
		f.fs.tableSyncs++
		f.fs.countTableSyncsOf[f.name]++
		f.fs.mu.Unlock()
	}
	return f.File.Sync()
}

// reset zeroes the counts.
func (fs *ioCountFS) reset() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.tableReads, fs.tableBytesRead, fs.tableSyncs, fs.largestTableRead = 0, 0, 0, 0
	fs.countTableSyncsOf = map[string]int{}
}

// fillForCompaction writes n keys of 100-byte random values (which snappy
// cannot shrink), in the given number of L0 tables.
func fillForCompaction(t *testing.T, db *DB, n, tables int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 100)
	for i := range n {
		for j := range val {
			val[j] = byte(rng.Uint32())
		}
		// Interleave the keys across flushes so that every L0 table spans
		// the key space and the compaction has to merge them.
		k := (i * 7919) % n
		if err := db.Put(fmt.Appendf(nil, "key%08d", k), val); err != nil {
			t.Fatal(err)
		}
		if i%(n/tables) == n/tables-1 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCompactionBypassesBlockCache checks that a compaction neither looks
// blocks up in the block cache nor inserts them, and that it reads its
// inputs in chunks far larger than a block.
func TestCompactionBypassesBlockCache(t *testing.T) {
	mem := vfs.NewMem()
	fs := newIOCountFS(mem)
	opts := &Options{FS: fs, DisableAutomaticCompactions: true, NoSync: true, BloomBitsPerKey: NoFilter}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40000 // about 4.6 MiB of entries, in 4 L0 tables
	fillForCompaction(t, db, n, 4)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopen so that the cache starts empty and untouched.
	if db, err = Open("db", opts); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := db.Metrics()
	var inBytes int64
	for _, l := range before.Levels {
		inBytes += l.Bytes
	}
	fs.reset()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	after := db.Metrics()
	if after.BlockCacheHits != before.BlockCacheHits || after.BlockCacheMiss != before.BlockCacheMiss {
		t.Errorf("compaction used the block cache: hits %d -> %d, misses %d -> %d",
			before.BlockCacheHits, after.BlockCacheHits, before.BlockCacheMiss, after.BlockCacheMiss)
	}
	if after.BlockCacheBytes != 0 {
		t.Errorf("compaction left %d bytes in the block cache", after.BlockCacheBytes)
	}
	fs.mu.Lock()
	reads, bytesRead := fs.tableReads, fs.tableBytesRead
	fs.mu.Unlock()
	mib := float64(inBytes) / (1 << 20)
	t.Logf("compacted %.2f MiB with %d table reads (%.1f per MiB), %d bytes read", mib, reads, float64(reads)/mib, bytesRead)
	// Block by block, the inputs take one read per 4 KiB block, about 256
	// per MiB; the readahead makes that a handful.
	if perMiB := float64(reads) / mib; perMiB > 16 {
		t.Errorf("%.1f table reads per compacted MiB, want at most 16", perMiB)
	}
	if bytesRead > inBytes+inBytes/4 {
		t.Errorf("compaction read %d bytes of %d bytes of input", bytesRead, inBytes)
	}
	// Every key is still there, once.
	it := db.NewIter(nil)
	count := 0
	for ok := it.First(); ok; ok = it.Next() {
		count++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("%d keys after the compaction, want %d", count, n)
	}
}

// TestCompactionSharesReadahead checks that the inputs of a compaction
// share one budget of read-ahead: a compaction of 8 L0 tables reads each
// at most an eighth of scanBudget at a time, where alone each would read
// up to 256 KiB (on the Go heap, which doubles it).
func TestCompactionSharesReadahead(t *testing.T) {
	fs := newIOCountFS(vfs.NewMem())
	db := mustOpen(t, "db", &Options{FS: fs, DisableAutomaticCompactions: true, NoSync: true})
	defer db.Close()
	const tables = 8
	fillForCompaction(t, db, 80000, tables) // about 1.2 MiB per table
	if l0 := db.Metrics().Levels[0].Files; l0 != tables {
		t.Fatalf("%d L0 tables, want %d", l0, tables)
	}
	fs.reset()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	fs.mu.Lock()
	largest, reads := fs.largestTableRead, fs.tableReads
	fs.mu.Unlock()
	if share := scanBudget / tables; largest > share || reads == 0 {
		t.Fatalf("%d table reads, the largest %d bytes; want none above %d", reads, largest, share)
	}
}

// TestCompactionSyncsIncrementally checks that an output table is pushed
// out as it is written, once per outputSyncBytes, not only when it is
// complete: on MemFS, whose files cannot start writeback, by syncs.
func TestCompactionSyncsIncrementally(t *testing.T) {
	fs := newIOCountFS(vfs.NewMem())
	db, err := Open("db", &Options{FS: fs, DisableAutomaticCompactions: true, NoSync: true, BloomBitsPerKey: NoFilter})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillForCompaction(t, db, 40000, 4)
	fs.reset()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	fs.mu.Lock()
	syncs := fs.countTableSyncsOf
	fs.mu.Unlock()
	m := db.Metrics()
	bottom := m.Levels[len(m.Levels)-1]
	if bottom.Files < 2 {
		t.Fatalf("compaction wrote %d tables, want several", bottom.Files)
	}
	checked := 0
	for name, got := range syncs {
		info, err := fs.Stat(name)
		if errors.Is(err, os.ErrNotExist) {
			continue // a table of the flush Compact began with, since compacted
		}
		if err != nil {
			t.Fatal(err)
		}
		checked++
		// At least one sync per full outputSyncBytes, plus the final one.
		if want := int(info.Size()/outputSyncBytes) + 1; got < want {
			t.Errorf("%s (%d bytes) was synced %d times, want at least %d", name, info.Size(), got, want)
		}
	}
	if checked != bottom.Files {
		t.Fatalf("checked the syncs of %d tables, want the %d the compaction wrote", checked, bottom.Files)
	}
}

// TestCompactionInputCorruption damages a data block in the middle of a
// compaction input, where the compaction's large reads take it in with
// undamaged blocks: the compaction must fail with a corruption error
// naming that file at an offset just before the damage, and leave every
// input in place.
func TestCompactionInputCorruption(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, DisableAutomaticCompactions: true, NoSync: true, BloomBitsPerKey: NoFilter}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	fillForCompaction(t, db, 40000, 4)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for _, name := range names {
		if strings.HasSuffix(name, ".sst") {
			tables = append(tables, fs.PathJoin("db", name))
		}
	}
	if len(tables) != 4 {
		t.Fatalf("tables %v, want 4", tables)
	}
	victim := tables[2]
	b := readFile(t, fs, victim)
	damageAt := int64(len(b) / 2) // well inside the data blocks
	b[damageAt] ^= 0x10
	writeFile(t, fs, victim, b)

	if db, err = Open("db", opts); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Compact()
	var ce *base.CorruptionError
	if !errors.Is(err, ErrCorruption) || !errors.As(err, &ce) || ce.File != victim {
		t.Fatalf("Compact over a damaged input: %v, want a corruption error naming %s", err, victim)
	}
	// The offset is that of the damaged block, which starts at most a block
	// (4 KiB and its trailer) before the damage.
	if ce.Offset > damageAt || ce.Offset < damageAt-(4<<10)-64 {
		t.Fatalf("corruption reported at offset %d, the damage is at %d", ce.Offset, damageAt)
	}
	after, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, name := range after {
		if strings.HasSuffix(name, ".sst") {
			left = append(left, fs.PathJoin("db", name))
		}
	}
	if !slices.Equal(left, tables) {
		t.Fatalf("tables after the failed compaction: %v, want the inputs %v alone", left, tables)
	}
}
