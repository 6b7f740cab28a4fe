package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/vfs"
)

// readCountFS counts the ReadAt calls made on the files it opens, and
// keeps the length of the largest.
type readCountFS struct {
	vfs.FS
	reads, largest int
}

type readCountFile struct {
	vfs.File
	fs *readCountFS
}

func (fs *readCountFS) Open(name string) (vfs.File, error) {
	f, err := fs.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &readCountFile{File: f, fs: fs}, nil
}

func (f *readCountFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.reads++
	f.fs.largest = max(f.fs.largest, len(p))
	return f.File.ReadAt(p, off)
}

// scanTestEntries returns n entries with random, incompressible values of
// 200 bytes, and at index big (when in range) one value of 600 KiB: a block
// larger than any readahead.
func scanTestEntries(n, big int) []kv {
	rng := rand.New(rand.NewPCG(5, 5))
	entries := make([]kv, n)
	for i := range entries {
		v := make([]byte, 200)
		if i == big {
			v = make([]byte, 600<<10)
		}
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		entries[i] = kv{base.MakeInternalKey(fmt.Appendf(nil, "key%06d", i), base.SeqNum(i+1), base.KindSet), v}
	}
	return entries
}

// TestScanIter checks that a scan yields exactly the table's entries and
// values, in far fewer reads than one per block, and without touching the
// block cache. (A value is valid until the scan moves: its buffers are
// reused.)
func TestScanIter(t *testing.T) {
	entries := scanTestEntries(5000, 2500)
	fs := &readCountFS{FS: vfs.NewMem()}
	props := buildTable(t, fs, "t.sst", entries, WriterOptions{})
	c := cache.New(8 << 20)
	r := openTable(t, fs, "t.sst", ReaderOptions{Cache: c})
	defer r.Close()
	fs.reads = 0

	it := r.NewScanIter(ScanReadaheadMax)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(entries) || base.Compare(it.Key(), entries[i].key) != 0 {
			t.Fatalf("entry %d is %s", i, it.Key())
		}
		if !bytes.Equal(it.Value(), entries[i].value) {
			t.Fatalf("value %d differs", i)
		}
		i++
	}
	if s := it.(*tableIter).scan; s.buf != nil || s.decoded != nil {
		t.Errorf("the scan holds %d bytes read and %d decoded after its end", len(s.buf), len(s.decoded))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if i != len(entries) {
		t.Fatalf("scan saw %d of %d entries", i, len(entries))
	}
	// Readahead grows from 32 KiB to 256 KiB: 32+64+128 KiB, then 256 KiB
	// reads, and one for the block larger than that.
	maxReads := 3 + int(props.DataSize/(256<<10)) + 2
	t.Logf("%d data blocks, %d bytes, in %d reads", props.NumDataBlocks, props.DataSize, fs.reads)
	if fs.reads > maxReads {
		t.Errorf("scan of %d data blocks (%d bytes) took %d reads, want at most %d", props.NumDataBlocks, props.DataSize, fs.reads, maxReads)
	}
	if hits, misses := c.Stats(); hits != 0 || misses != 0 || c.Size() != 0 {
		t.Errorf("scan used the block cache: %d hits, %d misses, %d bytes", hits, misses, c.Size())
	}

	// Seeks and backward moves work too, if not sequentially.
	it = r.NewScanIter(ScanReadaheadMax)
	defer it.Close()
	for _, j := range []int{4000, 10, 2500, 2501, 4999} {
		if !it.SeekGE(entries[j].key.UserKey) || base.Compare(it.Key(), entries[j].key) != 0 {
			t.Fatalf("SeekGE(%s): valid %v", entries[j].key, it.Valid())
		}
		if !it.Prev() || base.Compare(it.Key(), entries[j-1].key) != 0 || !bytes.Equal(it.Value(), entries[j-1].value) {
			t.Fatalf("Prev after SeekGE(%s): valid %v", entries[j].key, it.Valid())
		}
	}
}

// TestScanReadaheadBound checks that a scan given a smaller bound reads
// ahead no further than it: the inputs of one compaction share a budget.
func TestScanReadaheadBound(t *testing.T) {
	entries := scanTestEntries(5000, -1)
	fs := &readCountFS{FS: vfs.NewMem()}
	props := buildTable(t, fs, "t.sst", entries, WriterOptions{})
	r := openTable(t, fs, "t.sst", ReaderOptions{})
	defer r.Close()
	for _, bound := range []int{ScanReadaheadMin, 64 << 10, 100 << 10} {
		fs.reads, fs.largest = 0, 0
		it := r.NewScanIter(bound)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil || n != len(entries) {
			t.Fatalf("bound %d: scanned %d of %d entries, error %v", bound, n, len(entries), err)
		}
		if fs.largest > bound || fs.reads < int(props.DataSize)/bound {
			t.Errorf("bound %d: %d reads of %d data bytes, the largest %d bytes; want none above the bound",
				bound, fs.reads, props.DataSize, fs.largest)
		}
	}
}

// TestScanCorruption damages one data block in the middle of a readahead
// chunk: the scan must stop there with a corruption error naming the file
// and the block's offset, having returned only the entries before it.
func TestScanCorruption(t *testing.T) {
	entries := scanTestEntries(2000, -1)
	fs := vfs.NewMem()
	buildTable(t, fs, "t.sst", entries, WriterOptions{})
	blockOff := damageBlockOf(t, fs, "t.sst", entries[1000].key.UserKey, 10, 0x04)

	r := openTable(t, fs, "t.sst", ReaderOptions{})
	defer r.Close()
	it := r.NewScanIter(ScanReadaheadMax)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if base.Compare(it.Key(), entries[n].key) != 0 || !bytes.Equal(it.Value(), entries[n].value) {
			t.Fatalf("entry %d is %s, want %s", n, it.Key(), entries[n].key)
		}
		n++
	}
	err := it.Close()
	var ce *base.CorruptionError
	if !errors.Is(err, base.ErrCorruption) || !errors.As(err, &ce) || ce.File != "t.sst" || ce.Offset != int64(blockOff) {
		t.Fatalf("scan over a damaged block: %v, want corruption in t.sst at offset %d", err, blockOff)
	}
	if n == 0 || n > 1000 {
		t.Fatalf("scan returned %d entries before the damaged block, which holds entry 1000", n)
	}
}
