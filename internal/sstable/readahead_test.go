package sstable

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/vfs"
)

// readaheadEntries returns scanTestEntries, one of them with a value of 50
// KiB: a block larger than the first reads ahead, smaller than the
// largest.
func readaheadEntries() []kv {
	entries := scanTestEntries(3000, -1)
	entries[1700].value = bytes.Repeat(entries[1700].value, 256)
	return entries
}

// walk reads entries from it after a seek that returned ok, forward or
// backward, and returns their keys and values; the values are kept as the
// iterator handed them out, unmodified (they must stay valid after it
// moves).
func walk(it base.InternalIterator, ok, forward bool) (keys []base.InternalKey, values [][]byte) {
	for ; ok; ok = map[bool]func() bool{true: it.Next, false: it.Prev}[forward]() {
		k := it.Key()
		keys = append(keys, base.InternalKey{UserKey: bytes.Clone(k.UserKey), Trailer: k.Trailer})
		values = append(values, it.Value())
	}
	return keys, values
}

// TestReadahead checks that an iterator walking a table block by block,
// forward or backward, from either end or from a seek, reads the file in
// far fewer reads than one per block, counts one disk read per block,
// yields exactly the table's entries, and that the values it handed out
// stay valid (and unchanged) after it moves on: the readahead's buffer is
// reused, the blocks it serves must not alias it. The block cache keeps
// the blocks it served, as it does those read one at a time.
func TestReadahead(t *testing.T) {
	entries := readaheadEntries()
	fs := &readCountFS{FS: vfs.NewMem()}
	props := buildTable(t, fs, "t.sst", entries, WriterOptions{})
	for _, tc := range []struct {
		name    string
		from    int // the first entry, or len(entries) for Last, -1 for First
		forward bool
	}{
		{"First+Next", -1, true},
		{"Last+Prev", len(entries), false},
		{"SeekGE+Next", 1234, true},
		{"SeekLT+Prev", 2345, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cache.New(64 << 20)
			stats := &Stats{}
			r := openTable(t, fs, "t.sst", ReaderOptions{Cache: c, Stats: stats})
			defer r.Close()
			fs.reads, fs.largest = 0, 0
			opened := stats.BlockReads.Load() // Open's reads of the index and filter
			it := r.NewIter()
			var ok bool
			var want []kv
			switch {
			case tc.from < 0:
				ok, want = it.First(), entries
			case tc.from == len(entries):
				ok, want = it.Last(), entries
			case tc.forward:
				ok, want = it.SeekGE(entries[tc.from].key.UserKey), entries[tc.from:]
			default:
				ok, want = it.SeekLT(entries[tc.from].key.UserKey), entries[:tc.from]
			}
			keys, values := walk(it, ok, tc.forward)
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			if len(keys) != len(want) {
				t.Fatalf("%d entries, want %d", len(keys), len(want))
			}
			for j := range keys {
				w := want[j]
				if !tc.forward {
					w = want[len(want)-1-j]
				}
				if base.Compare(keys[j], w.key) != 0 || !bytes.Equal(values[j], w.value) {
					t.Fatalf("entry %d: %s, want %s (or its value differs)", j, keys[j], w.key)
				}
			}
			blocks := int(props.NumDataBlocks) * len(want) / len(entries)
			t.Logf("%d entries in about %d blocks: %d reads, the largest %d bytes", len(want), blocks, fs.reads, fs.largest)
			if fs.reads > blocks/4 || fs.largest > iterReadaheadMax {
				t.Errorf("%d reads (the largest %d bytes) for about %d blocks, want at most a quarter, of at most %d bytes",
					fs.reads, fs.largest, blocks, iterReadaheadMax)
			}
			if n := int(stats.BlockReads.Load() - opened); n < blocks-2 || n > blocks+2 {
				t.Errorf("%d disk reads counted, want one per block (about %d)", n, blocks)
			}
			// Every block came from the file once, and went to the
			// cache: a second walk reads nothing.
			fs.reads = 0
			it = r.NewIter()
			if tc.forward {
				walk(it, it.SeekGE(want[0].key.UserKey), true)
			} else {
				walk(it, it.SeekLT(append(bytes.Clone(want[len(want)-1].key.UserKey), 0)), false)
			}
			if err := it.Close(); err != nil || fs.reads != 0 {
				t.Errorf("the second walk made %d reads (error %v), want none: the cache holds the blocks", fs.reads, err)
			}
		})
	}
}

// TestReadaheadCorruption damages a data block that a readahead reads
// along with the blocks before it (forward) or after it (backward): the
// walk must stop on it with a corruption error naming the file and the
// block's offset, having returned only the entries on its side of it.
func TestReadaheadCorruption(t *testing.T) {
	entries := readaheadEntries()
	fs := vfs.NewMem()
	buildTable(t, fs, "t.sst", entries, WriterOptions{})
	blockOff := damageBlockOf(t, fs, "t.sst", entries[1500].key.UserKey, 10, 0x04)
	for _, forward := range []bool{true, false} {
		r := openTable(t, fs, "t.sst", ReaderOptions{})
		it := r.NewIter()
		var keys []base.InternalKey
		if forward {
			keys, _ = walk(it, it.First(), true)
		} else {
			keys, _ = walk(it, it.Last(), false)
		}
		err := it.Close()
		r.Close()
		var ce *base.CorruptionError
		if !errors.Is(err, base.ErrCorruption) || !errors.As(err, &ce) || ce.File != "t.sst" || ce.Offset != int64(blockOff) {
			t.Fatalf("forward %v: walk over a damaged block: %v, want corruption in t.sst at offset %d", forward, err, blockOff)
		}
		for j, k := range keys {
			w := entries[j]
			if !forward {
				w = entries[len(entries)-1-j]
			}
			if base.Compare(k, w.key) != 0 {
				t.Fatalf("forward %v: entry %d is %s, want %s", forward, j, k, w.key)
			}
		}
		if forward && (len(keys) == 0 || len(keys) > 1500) || !forward && (len(keys) == 0 || len(keys) >= 1500) {
			t.Fatalf("forward %v: %d entries before the damaged block, which holds entry 1500", forward, len(keys))
		}
	}
}

// failReadsFile fails every read that reaches past off.
type failReadsFile struct {
	File
	off int64
}

var errRead = errors.New("read failed")

func (f *failReadsFile) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.off {
		return 0, errRead
	}
	return f.File.ReadAt(p, off)
}

// TestReadaheadReadError checks that a failed readahead stops the walk with
// the read's error, not as if the table had ended.
func TestReadaheadReadError(t *testing.T) {
	entries := readaheadEntries()
	fs := vfs.NewMem()
	props := buildTable(t, fs, "t.sst", entries, WriterOptions{})
	f, err := fs.Open("t.sst")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(f, "t.sst", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.f = &failReadsFile{File: f, off: int64(props.DataSize / 2)}
	it := r.NewIter()
	keys, _ := walk(it, it.First(), true)
	if err := it.Close(); !errors.Is(err, errRead) {
		t.Fatalf("walk over a failing read: %v, want %v", err, errRead)
	}
	if len(keys) == 0 || len(keys) >= len(entries) {
		t.Fatalf("%d entries before the failed read", len(keys))
	}
}

// TestReadaheadTurns walks a table without a block cache, so that every
// step into another block goes through the readahead, with random moves:
// runs of Next and Prev that turn around inside a read's span and outside
// it, seeks between them, and bounds. Every position must match the
// entries, and every value handed out must stay as it was after the
// iterator moves on.
func TestReadaheadTurns(t *testing.T) {
	entries := readaheadEntries()
	fs := vfs.NewMem()
	buildTable(t, fs, "t.sst", entries, WriterOptions{})
	r := openTable(t, fs, "t.sst", ReaderOptions{})
	defer r.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	type seen struct {
		value []byte
		want  int
	}
	for round := range 20 {
		lo, hi := 0, len(entries)
		var lower, upper []byte
		if round%2 == 1 {
			lo, hi = rng.IntN(len(entries)/2), len(entries)/2+rng.IntN(len(entries)/2)
			lower, upper = entries[lo].key.UserKey, entries[hi].key.UserKey
		}
		it := r.NewIterBounds(lower, upper)
		pos := lo + rng.IntN(hi-lo)
		if !it.SeekGE(entries[pos].key.UserKey) {
			t.Fatalf("round %d: SeekGE(%s) found nothing", round, entries[pos].key)
		}
		var kept []seen
		for range 200 {
			switch n := rng.IntN(100); {
			case n < 3:
				pos = lo + rng.IntN(hi-lo)
				it.SeekGE(entries[pos].key.UserKey)
			case n < 6:
				pos = lo + 1 + rng.IntN(hi-lo-1)
				it.SeekLT(entries[pos].key.UserKey)
				pos--
			default:
				// A run of steps one way: up to about 8 blocks.
				forward := rng.IntN(2) == 0
				for range rng.IntN(160) {
					if forward && pos+1 < hi {
						pos++
						it.Next()
					} else if !forward && pos > lo {
						pos--
						it.Prev()
					}
				}
			}
			if !it.Valid() || base.Compare(it.Key(), entries[pos].key) != 0 {
				t.Fatalf("round %d: at %s (valid %v, error %v), want %s", round, it.Key(), it.Valid(), it.Error(), entries[pos].key)
			}
			kept = append(kept, seen{it.Value(), pos})
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		for _, s := range kept {
			if !bytes.Equal(s.value, entries[s.want].value) {
				t.Fatalf("round %d: the value of %s changed after the iterator moved on", round, entries[s.want].key)
			}
		}
	}
}
