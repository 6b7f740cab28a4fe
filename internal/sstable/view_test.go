package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/manual"
	"github.com/shale-db/shale/vfs"
)

// scribblingView is a ViewFile over a file's bytes in memory that, after
// each view, overwrites the bytes it showed, as a mapping unmapped and
// reused would; fail, when set, is returned instead of a view.
type scribblingView struct {
	vfs.File
	data  []byte
	views int
	fail  error
}

func (v *scribblingView) ViewAt(off int64, n int, fn func(b []byte) error) (bool, error) {
	if v.fail != nil {
		return true, v.fail
	}
	v.views++
	b := bytes.Clone(v.data[off : off+int64(n)])
	err := fn(b)
	for i := range b {
		b[i] = 0xee
	}
	return true, err
}

// TestViewBlocks: a Reader over a ViewFile reads data blocks through views,
// of every compression, and keeps nothing that aliases them; a damaged
// block viewed is a corruption error naming the file; a view's own error
// comes back naming the file.
func TestViewBlocks(t *testing.T) {
	for _, c := range []Compression{SnappyCompression, NoCompression, ZstdCompression} {
		t.Run(c.String(), func(t *testing.T) {
			fs := vfs.NewMem()
			var entries []kv
			value := func(i int) []byte { return bytes.Repeat(fmt.Appendf(nil, "value %d ", i), 8) }
			for i := range 500 {
				entries = append(entries, kv{base.MakeInternalKey(fmt.Appendf(nil, "key%05d", i), 1, base.KindSet), value(i)})
			}
			buildTable(t, fs, "t.sst", entries, WriterOptions{Compression: c, BlockSize: 512})
			f, err := fs.Open("t.sst")
			if err != nil {
				t.Fatal(err)
			}
			size, _ := f.Size()
			data := make([]byte, size)
			if _, err := f.ReadAt(data, 0); err != nil {
				t.Fatal(err)
			}
			v := &scribblingView{File: f, data: data}
			r, err := Open(v, "t.sst", ReaderOptions{Cache: cache.New(64 << 10)})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var values [][]byte
			for i := range entries {
				got, _, found, err := r.Get(entries[i].key.UserKey, base.MaxSeqNum, nil)
				if err != nil || !found {
					t.Fatalf("Get(%s): %v, found %v", entries[i].key.UserKey, err, found)
				}
				values = append(values, got)
			}
			it := r.NewIter()
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				if !bytes.Equal(it.Value(), value(n)) {
					t.Fatalf("iterator at %d: %q", n, it.Value())
				}
				n++
			}
			if err := it.Close(); err != nil || n != len(entries) {
				t.Fatalf("iterator: %d entries, %v", n, err)
			}
			for i, got := range values { // after every view's scribbling
				if !bytes.Equal(got, value(i)) {
					t.Fatalf("Get(%s)'s value is now %q: it aliased a view", entries[i].key.UserKey, got)
				}
			}
			if v.views == 0 {
				t.Fatal("no data block was read through a view")
			}

			// A block damaged in the view, read past the cache.
			r2, err := Open(v, "t.sst", ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer manual.Free(r2.pinned) // r2 shares r's file, which r closes
			var trace GetTrace
			if _, _, _, err := r2.Get(entries[0].key.UserKey, base.MaxSeqNum, &trace); err != nil {
				t.Fatal(err)
			}
			v.data[trace.BlockOffsets[0]+3] ^= 0x10
			_, _, _, err = r2.Get(entries[0].key.UserKey, base.MaxSeqNum, nil)
			checkCorruption(t, err, "t.sst")
			v.data[trace.BlockOffsets[0]+3] ^= 0x10

			v.fail = fmt.Errorf("viewing: %w", vfs.ErrReadFault)
			_, _, _, err = r2.Get(entries[0].key.UserKey, base.MaxSeqNum, nil)
			if !errors.Is(err, vfs.ErrReadFault) || !bytes.Contains([]byte(err.Error()), []byte("t.sst")) {
				t.Fatalf("Get through a failing view: %v", err)
			}
			v.fail = nil
		})
	}
}
