package sstable

import (
	"fmt"
	"os"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manual"
	"github.com/shale-db/shale/vfs"
)

// Every test of the package runs with freed manual memory inaccessible, so
// that a Reader used after Close crashes the test binary.
func init() { manual.CheckUseAfterFree() }

// TestMain fails the package when its tests, which run one at a time, end
// with manual memory still allocated: a Reader that some path opened and
// never closed, or an Open that failed without freeing what it read.
func TestMain(m *testing.M) {
	code := m.Run()
	if n := manual.InUse(); code == 0 && n != 0 {
		fmt.Fprintf(os.Stderr, "manual memory leaked: %d bytes still allocated after the tests\n", n)
		code = 1
	}
	os.Exit(code)
}

// TestPinnedMemory checks that a Reader holds its index and filter in one
// manual buffer, read straight into it when both are stored raw and
// decompressed into one of their decompressed size otherwise, that every
// key reads back through them, and that Close frees the buffer.
func TestPinnedMemory(t *testing.T) {
	var entries []kv
	for i := range 2000 {
		key := fmt.Appendf(nil, "a-long-common-prefix-that-snappy-finds/%06d", i)
		entries = append(entries, kv{base.MakeInternalKey(key, base.SeqNum(i+1), base.KindSet), []byte("value")})
	}
	for _, tc := range []struct {
		name            string
		compression     Compression
		indexCompressed bool
	}{
		{"raw", NoCompression, false},
		{"snappy", SnappyCompression, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			buildTable(t, fs, "t", entries, WriterOptions{BlockSize: 256, Compression: tc.compression, FilterPolicy: bloom.NewPolicy(10)})
			before := manual.InUse()
			r := openTable(t, fs, "t", ReaderOptions{Filters: []filter.Policy{bloom.NewPolicy(10)}})
			if got := storedCompressed(t, r); got != tc.indexCompressed {
				t.Fatalf("index stored compressed: %v, want %v", got, tc.indexCompressed)
			}
			want := int64(r.IndexSize() + r.FilterSize())
			if !tc.indexCompressed {
				want += 2 * blockTrailerLen // read as stored, trailers included
			}
			if got := manual.InUse() - before; got != want {
				t.Fatalf("the open Reader holds %d bytes of manual memory, want %d (index %d, filter %d)", got, want, r.IndexSize(), r.FilterSize())
			}
			for _, e := range entries {
				if _, _, found, err := r.Get(e.key.UserKey, base.MaxSeqNum, nil); err != nil || !found {
					t.Fatalf("Get(%q): found %v, %v", e.key.UserKey, found, err)
				}
			}
			n := 0
			it := r.NewIter()
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if err := it.Close(); err != nil || n != len(entries) {
				t.Fatalf("scan: %d of %d entries, %v", n, len(entries), err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if got := manual.InUse(); got != before {
				t.Fatalf("after Close %d bytes of manual memory are allocated, want %d", got, before)
			}
		})
	}
}

// storedCompressed reports whether r's table stores its index block
// snappy-compressed.
func storedCompressed(t *testing.T, r *Reader) bool {
	t.Helper()
	size, err := r.f.Size()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, footerLen)
	if _, err := r.f.ReadAt(buf, size-footerLen); err != nil {
		t.Fatal(err)
	}
	ft, err := decodeFooter(r.name, size-footerLen, buf)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, ft.index.length+blockTrailerLen)
	if _, err := r.f.ReadAt(block, int64(ft.index.offset)); err != nil {
		t.Fatal(err)
	}
	return block[ft.index.length] == blockTypeSnappy
}
