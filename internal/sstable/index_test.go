package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/vfs"
)

// TestIndexRestartInterval writes the same entries twice, with the index
// block at restart interval 1, as every table was written before
// indexRestartInterval, and at indexRestartInterval. The two files must
// differ in their index block alone (and the offsets after it), whose
// entries are the same but take fewer bytes; and the reader, whose index
// search is the one earlier binaries have (see the format), must answer
// every Get, seek and walk in both directions on the new table as the
// model says, verify it clean and scan it whole.
func TestIndexRestartInterval(t *testing.T) {
	for run := range 12 {
		rng := rand.New(rand.NewPCG(uint64(run), 11))
		entries := randomEntries(rng, 100+rng.IntN(300))
		opts := WriterOptions{
			BlockSize:       []int{1, 64, 256}[run%3],
			RestartInterval: []int{1, 16}[rng.IntN(2)],
			Compression:     []Compression{SnappyCompression, NoCompression}[rng.IntN(2)],
		}
		if run%2 == 0 {
			opts.FilterPolicy = bloom.NewPolicy(10)
		}
		name := fmt.Sprintf("entries=%d/block=%d/restart=%d/compression=%d/filter=%v", len(entries), opts.BlockSize, opts.RestartInterval, opts.Compression, opts.FilterPolicy != nil)
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			oldProps := buildTableIndexInterval(t, fs, "old.sst", entries, opts, 1)
			newProps := buildTable(t, fs, "new.sst", entries, opts)
			oldFile, newFile := readWhole(t, fs, "old.sst"), readWhole(t, fs, "new.sst")
			if oldProps.DataSize != newProps.DataSize || !bytes.Equal(oldFile[:oldProps.DataSize], newFile[:newProps.DataSize]) {
				t.Fatalf("the data blocks differ: %d and %d bytes", oldProps.DataSize, newProps.DataSize)
			}
			sameButIndex := *oldProps
			sameButIndex.IndexSize = newProps.IndexSize
			if sameButIndex.String() != newProps.String() {
				t.Fatalf("properties differ beyond the index size:\n%s\nand\n%s", oldProps, newProps)
			}

			ropts := ReaderOptions{FileNum: 1, Filters: []filter.Policy{bloom.NewPolicy(10)}}
			oldR := openTable(t, fs, "old.sst", ropts)
			defer oldR.Close()
			r := openTable(t, fs, "new.sst", ropts)
			defer r.Close()
			blocks := compareIndexes(t, oldR, r)
			if blocks != int(newProps.NumDataBlocks) || blocks < 2*indexRestartInterval {
				t.Fatalf("%d index entries for %d data blocks; the test wants at least %d", blocks, newProps.NumDataBlocks, 2*indexRestartInterval)
			}
			if r.IndexSize() >= oldR.IndexSize() {
				t.Fatalf("index of %d bytes at interval %d, %d at interval 1", r.IndexSize(), indexRestartInterval, oldR.IndexSize())
			}

			checkGets(t, rng, r, entries)
			checkIter(t, rng, r.NewIter(), entries, nil, nil)
			for range 5 {
				lo, hi := randomProbe(rng, entries), randomProbe(rng, entries)
				checkIter(t, rng, r.NewIterBounds(lo, hi), entries, lo, hi)
			}
			checkWalks(t, r.NewIter(), entries)
			checkWalks(t, r.NewScanIter(ScanReadaheadMax), entries)
			var kept int
			problems, err := r.Verify(func(k base.InternalKey, v []byte) {
				if kept < len(entries) && (base.Compare(k, entries[kept].key) != 0 || !bytes.Equal(v, entries[kept].value)) {
					t.Errorf("Verify kept %s=%q at %d, want %s=%q", k, v, kept, entries[kept].key, entries[kept].value)
				}
				kept++
			})
			if err != nil || len(problems) != 0 || kept != len(entries) {
				t.Fatalf("Verify: problems %v, err %v, kept %d of %d entries", problems, err, kept, len(entries))
			}
		})
	}
}

// compareIndexes checks that two readers' index blocks hold the same
// entries, the first at restart interval 1 and the second at
// indexRestartInterval, and returns the number of entries.
func compareIndexes(t *testing.T, old, r *Reader) int {
	t.Helper()
	var oi, ni blockIter
	if err := oi.init(old.name, old.indexOffset, old.index); err != nil {
		t.Fatal(err)
	}
	if err := ni.init(r.name, r.indexOffset, r.index); err != nil {
		t.Fatal(err)
	}
	n, more := 0, ni.First()
	for ok := oi.First(); ok; ok = oi.Next() {
		if !more {
			t.Fatalf("index entry %d (%x) is missing: %v", n, oi.key, ni.err)
		}
		if !bytes.Equal(oi.key, ni.key) || !bytes.Equal(oi.val, ni.val) {
			t.Fatalf("index entry %d: %x=%x, at interval 1 %x=%x", n, ni.key, ni.val, oi.key, oi.val)
		}
		n++
		more = ni.Next()
	}
	if oi.err != nil || more || ni.err != nil {
		t.Fatalf("after %d index entries: errors %v, %v, or one more entry at interval %d", n, oi.err, ni.err, indexRestartInterval)
	}
	if want := (n + indexRestartInterval - 1) / indexRestartInterval; oi.numRestarts != n || ni.numRestarts != want {
		t.Fatalf("%d index entries: %d and %d restarts, want %d and %d", n, oi.numRestarts, ni.numRestarts, n, want)
	}
	return n
}

// checkWalks walks it forward from First and backward from Last and checks
// that it visits entries, in order, and nothing else.
func checkWalks(t *testing.T, it base.InternalIterator, entries []kv) {
	t.Helper()
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(entries) || base.Compare(it.Key(), entries[i].key) != 0 || !bytes.Equal(it.Value(), entries[i].value) {
			t.Fatalf("forward walk, entry %d: %s=%q", i, it.Key(), it.Value())
		}
		i++
	}
	if it.Error() != nil || i != len(entries) {
		t.Fatalf("forward walk: %d of %d entries, err %v", i, len(entries), it.Error())
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		if i < 0 || base.Compare(it.Key(), entries[i].key) != 0 || !bytes.Equal(it.Value(), entries[i].value) {
			t.Fatalf("backward walk, entry %d: %s=%q", i, it.Key(), it.Value())
		}
	}
	if it.Error() != nil || i != 0 {
		t.Fatalf("backward walk stopped at entry %d, err %v", i, it.Error())
	}
}

// readWhole returns the contents of the file name in fs.
func readWhole(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}
