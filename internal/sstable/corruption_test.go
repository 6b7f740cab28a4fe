package sstable

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/vfs"
)

// readAll opens the table at name and reads everything: a full scan both
// ways, a sequential scan (NewScanIter) and a Get of every user key. It returns the first error, or nil when
// every answer matched entries; it fails t on a wrong answer.
func readAll(t *testing.T, fs vfs.FS, name string, entries []kv) error {
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(f, name, ReaderOptions{Filters: []filter.Policy{bloom.NewPolicy(10)}})
	if err != nil {
		f.Close()
		return err
	}
	defer r.Close()
	it := r.NewIter()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(entries) || base.Compare(it.Key(), entries[i].key) != 0 || !bytes.Equal(it.Value(), entries[i].value) {
			t.Fatalf("forward scan: entry %d is %s:%q", i, it.Key(), it.Value())
		}
		i++
	}
	if err := it.Close(); err != nil {
		return err
	}
	if i != len(entries) {
		t.Fatalf("forward scan saw %d of %d entries without an error", i, len(entries))
	}
	it = r.NewScanIter(ScanReadaheadMax)
	i = 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(entries) || base.Compare(it.Key(), entries[i].key) != 0 || !bytes.Equal(it.Value(), entries[i].value) {
			t.Fatalf("sequential scan: entry %d is %s:%q", i, it.Key(), it.Value())
		}
		i++
	}
	if err := it.Close(); err != nil {
		return err
	}
	if i != len(entries) {
		t.Fatalf("sequential scan saw %d of %d entries without an error", i, len(entries))
	}
	it = r.NewIter()
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		if i < 0 || base.Compare(it.Key(), entries[i].key) != 0 || !bytes.Equal(it.Value(), entries[i].value) {
			t.Fatalf("backward scan: entry %d is %s:%q", i, it.Key(), it.Value())
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	for j, e := range entries {
		if j > 0 && bytes.Equal(e.key.UserKey, entries[j-1].key.UserKey) {
			continue
		}
		v, kind, found, err := r.Get(e.key.UserKey, base.MaxSeqNum, nil)
		if err != nil {
			return err
		}
		if !found || kind != e.key.Kind() || !bytes.Equal(v, e.value) {
			t.Fatalf("Get(%s) = %q %s %v, want %s:%q", base.FormatKey(e.key.UserKey), v, kind, found, e.key, e.value)
		}
	}
	return nil
}

// TestCorruption flips one bit of a table at every offset in turn, and cuts
// the table at every length. Each checksum covers its region, so every such
// damage must be reported, as corruption naming the file, and no read may
// return wrong data or panic.
func TestCorruption(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	entries := randomEntries(rng, 60)
	for _, opts := range []WriterOptions{
		{BlockSize: 256, FilterPolicy: bloom.NewPolicy(10)},
		{BlockSize: 512, Compression: NoCompression, RestartInterval: 4},
		{BlockSize: 256, Compression: ZstdCompression, FilterPolicy: bloom.NewPolicy(10)},
	} {
		fs := vfs.NewMem()
		buildTable(t, fs, "good.sst", entries, opts)
		if err := readAll(t, fs, "good.sst", entries); err != nil {
			t.Fatal(err)
		}
		f, _ := fs.Open("good.sst")
		size, _ := f.Size()
		good := make([]byte, size)
		f.ReadAt(good, 0)
		f.Close()

		write := func(name string, b []byte) {
			f, _ := fs.Create(name)
			f.Write(b)
			f.Close()
		}
		for off := range good {
			bad := bytes.Clone(good)
			bad[off] ^= 1 << (off % 8)
			write("bad.sst", bad)
			err := readAll(t, fs, "bad.sst", entries)
			if err == nil {
				t.Fatalf("bit flip at offset %d of %d went unnoticed", off, size)
			}
			checkCorruption(t, err, "bad.sst")
		}
		for n := range good {
			write("short.sst", good[:n])
			checkCorruption(t, readAll(t, fs, "short.sst", entries), "short.sst")
		}
	}
}

// TestCorruptionErrorOffsets checks that a damaged data block is reported
// at that block's offset, found by the read that needs it.
func TestCorruptionErrorOffsets(t *testing.T) {
	fs := vfs.NewMem()
	var entries []kv
	for i := range 100 {
		entries = append(entries, kv{base.MakeInternalKey([]byte{'a' + byte(i/10), '0' + byte(i%10)}, 1, base.KindSet), []byte("value")})
	}
	buildTable(t, fs, "t.sst", entries, WriterOptions{BlockSize: 100, Compression: NoCompression})
	blockOff := damageBlockOf(t, fs, "t.sst", []byte("e5"), 3, 0x40)

	r := openTable(t, fs, "t.sst", ReaderOptions{})
	defer r.Close()
	_, _, _, err := r.Get([]byte("e5"), base.MaxSeqNum, nil)
	var ce *base.CorruptionError
	if !errors.As(err, &ce) || ce.File != "t.sst" || ce.Offset != int64(blockOff) {
		t.Fatalf("Get after damage: %v, want corruption in t.sst at %d", err, blockOff)
	}
	if _, _, _, err := r.Get([]byte("a1"), base.MaxSeqNum, nil); err != nil {
		t.Fatalf("a lookup in an undamaged block failed: %v", err)
	}
}
