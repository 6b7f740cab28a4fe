package shale

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// mmapTestValue is key i's value: 100 bytes that name the key.
func mmapTestValue(i int) []byte {
	return bytes.Repeat(fmt.Appendf(nil, "v%05d-", i), 15)[:100]
}

// TestMmapReadsTableCutShort: a table file cut short under its mapping
// (by another process, or a bad repair) makes the Gets and the iterator
// that read past the cut return an error naming the file, instead of
// killing the process with SIGBUS: one matching vfs.ErrReadFault for the
// pages past the cut, or ErrCorruption for a block in the page the cut
// falls in, which reads as zeros past it (its checksum then fails). The
// blocks before the cut still read, and the store closes.
func TestMmapReadsTableCutShort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("tables are read through mappings on Linux only")
	}
	for _, c := range []struct {
		name        string
		compression CompressionPolicy
	}{{"snappy", nil}, {"none", NoCompression}, {"zstd", ZstdCompression}} {
		t.Run(c.name, func(t *testing.T) { testMmapReadsTableCutShort(t, c.compression) })
	}
}

func testMmapReadsTableCutShort(t *testing.T, compression CompressionPolicy) {
	dir := t.TempDir()
	db := mustOpen(t, dir, &Options{BlockCacheSize: -1, NoSync: true, Compression: compression,
		DisableAutomaticCompactions: true, DisableReadCompactions: true})
	const keys = 2000
	key := func(i int) []byte { return fmt.Appendf(nil, "key%05d", i) }
	for i := range keys {
		if err := db.Put(key(i), mmapTestValue(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range keys { // maps the table
		if v, err := db.Get(key(i)); err != nil || !bytes.Equal(v, mmapTestValue(i)) {
			t.Fatalf("Get(%s) = %q, %v", key(i), v, err)
		}
	}
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(tables) != 1 {
		t.Fatalf("tables %v, %v; want one", tables, err)
	}
	fi, err := os.Stat(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(tables[0], fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	faults := 0
	checkErr := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, vfs.ErrReadFault) && !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), filepath.Base(tables[0])) {
			t.Fatalf("%s: %v, want an error matching vfs.ErrReadFault or ErrCorruption naming %s", what, err, filepath.Base(tables[0]))
		}
		if errors.Is(err, vfs.ErrReadFault) {
			faults++
		}
	}
	var answered, failed int
	for i := range keys {
		v, err := db.Get(key(i))
		if err != nil {
			checkErr(fmt.Sprintf("Get(%s)", key(i)), err)
			failed++
			continue
		}
		if !bytes.Equal(v, mmapTestValue(i)) {
			t.Fatalf("Get(%s) = %q after the cut", key(i), v)
		}
		answered++
	}
	if answered == 0 || faults == 0 {
		t.Fatalf("after cutting the table in half, %d Gets answered and %d failed, %d of them faults; want some answers and faults", answered, failed, faults)
	}
	it := db.NewIter(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Key(), key(n)) || !bytes.Equal(it.Value(), mmapTestValue(n)) {
			t.Fatalf("iterator at %d: %q = %q", n, it.Key(), it.Value())
		}
		n++
	}
	checkErr("iterator", it.Error())
	if n == 0 || n >= keys {
		t.Fatalf("the iterator read %d entries before the cut's error", n)
	}
	it.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMmapReadsNoReadAt: by default, Gets and iterators read data blocks
// through the mapping, with no ReadAt once the tables are open; with
// DisableMmapReads, through ReadAt. The answers are the same.
func TestMmapReadsNoReadAt(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		t.Run(fmt.Sprintf("mmap=%v", mapped), func(t *testing.T) {
			fs := &readCountFS{FS: vfs.NewMem()}
			db := mustOpen(t, "db", &Options{FS: fs, DisableMmapReads: !mapped, BlockCacheSize: -1, MemTableSize: 16 << 10,
				TargetFileSize: 32 << 10, DisableReadCompactions: true})
			defer db.Close()
			const keys = 3000
			key := func(i int) []byte { return fmt.Appendf(nil, "key%05d", i) }
			for i := range keys {
				if err := db.Put(key(i), mmapTestValue(i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			if m := db.Metrics(); m.Levels[6].Files < 2 {
				t.Fatalf("%d tables in L6; want several", m.Levels[6].Files)
			}
			fs.readAts.Store(0)
			for i := range keys {
				if v, err := db.Get(key(i)); err != nil || !bytes.Equal(v, mmapTestValue(i)) {
					t.Fatalf("Get(%s) = %q, %v", key(i), v, err)
				}
			}
			it := db.NewIter(nil)
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if err := it.Close(); err != nil || n != keys {
				t.Fatalf("iterator: %d entries, %v", n, err)
			}
			reads, views := fs.readAts.Load(), fs.views.Load()
			t.Logf("%d ReadAt calls, %d views", reads, views)
			if mapped && (reads != 0 || views == 0) || !mapped && (reads == 0 || views != 0) {
				t.Fatalf("mapped reads %v: %d ReadAt calls and %d views by Gets and an iterator", mapped, reads, views)
			}
		})
	}
}

// readCountFS counts its files' ReadAt and ViewAt calls.
type readCountFS struct {
	vfs.FS
	readAts, views atomic.Int64
}

func (fs *readCountFS) Open(name string) (vfs.File, error) {
	f, err := fs.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &readCountFile{File: f, fs: fs}, nil
}

type readCountFile struct {
	vfs.File
	fs *readCountFS
}

func (f *readCountFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.readAts.Add(1)
	return f.File.ReadAt(p, off)
}

func (f *readCountFile) MapForReads() error { return f.File.(vfs.ReadMapper).MapForReads() }

func (f *readCountFile) ViewAt(off int64, n int, fn func([]byte) error) error {
	f.fs.views.Add(1)
	return f.File.(vfs.ReadMapper).ViewAt(off, n, fn)
}
