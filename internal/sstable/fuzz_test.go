package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/golang/snappy"
	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/vfs"
)

// FuzzBlock feeds arbitrary bytes to every decoder of a single region:
// block trailers and decompression, block iteration in both directions and
// seeks, properties, the footer; and, past the checksum that would refuse
// nearly all of them, to the snappy and zstd decompression of a block's
// contents. None may panic or loop; errors must be corruption errors.
func FuzzBlock(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, interval := range []int{1, 3, 16} {
		w := blockWriter{restartInterval: interval}
		for _, e := range randomEntries(rng, 20) {
			w.add(e.key.Append(nil), e.value)
		}
		f.Add(w.finish())
	}
	f.Add((&blockWriter{restartInterval: 1}).finish())
	f.Add((&Properties{NumEntries: 3, Smallest: base.MakeInternalKey([]byte("a"), 1, base.KindSet), FilterPolicy: "x"}).encode())
	f.Add(footer{metaindex: blockHandle{100, 20}, index: blockHandle{5, 90}, version: FormatVersion}.encode())
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0})
	for _, contents := range [][]byte{nil, []byte("a"), bytes.Repeat([]byte("zstd seed "), 100)} {
		z := zstdEncoder().EncodeAll(contents, nil)
		f.Add(z)
		f.Add(storedBlock(z, blockTypeZstd))
		f.Add(storedBlock(snappy.Encode(nil, contents), blockTypeSnappy))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(err error) {
			if err != nil {
				checkCorruption(t, err, "f")
			}
		}
		_, err := decodeBlock("f", 0, data)
		check(err)
		for _, typ := range []byte{blockTypeSnappy, blockTypeZstd} {
			dlen, err := decodedLen("f", 0, typ, data)
			if err != nil {
				check(err)
				continue
			}
			out, err := decompress("f", 0, typ, make([]byte, dlen), data)
			check(err)
			if err == nil && len(out) != dlen {
				t.Fatalf("block type %d: decoded %d bytes, the header said %d", typ, len(out), dlen)
			}
		}
		_, err = decodeProperties("f", 0, data)
		check(err)
		if len(data) >= footerLen {
			_, err = decodeFooter("f", 0, data[len(data)-footerLen:])
			check(err)
		}

		var it blockIter
		if err := it.init("f", 0, data); err != nil {
			check(err)
			return
		}
		// Every entry takes at least 3 bytes, so a walk longer than the
		// block means a loop.
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			if n++; n > len(data) {
				t.Fatal("forward walk does not end")
			}
		}
		check(it.err)
		n = 0
		for ok := it.Last(); ok; ok = it.Prev() {
			if n++; n > len(data) {
				t.Fatal("backward walk does not end")
			}
		}
		check(it.err)
		for _, k := range []string{"", "a", "key0100", "\xff\xff"} {
			var it blockIter
			it.init("f", 0, data)
			if it.SeekGE(base.MakeSearchKey([]byte(k), base.MaxSeqNum)) {
				it.Prev()
			}
			check(it.err)
		}
	})
}

// FuzzOpen opens arbitrary bytes as a table and reads what it can. Open and
// every read must succeed or fail with a corruption error naming the file,
// never panic, loop, or allocate by an unchecked length. Seeds are real
// tables, so mutations explore near-valid files.
func FuzzOpen(f *testing.F) {
	rng := rand.New(rand.NewPCG(2, 2))
	for i, opts := range []WriterOptions{
		{},
		{BlockSize: 64, FilterPolicy: bloom.NewPolicy(10)},
		{BlockSize: 128, Compression: NoCompression, RestartInterval: 2},
		{BlockSize: 256, Compression: ZstdCompression, FilterPolicy: bloom.NewPolicy(10)},
	} {
		fs := vfs.NewMem()
		buildTable(f, fs, "t", randomEntries(rng, 10*i), opts)
		file, _ := fs.Open("t")
		size, _ := file.Size()
		b := make([]byte, size)
		file.ReadAt(b, 0)
		f.Add(b)
	}
	// A version 2 table: entries and range tombstones.
	fs := vfs.NewMem()
	writeWithRangeDels(f, fs, "t", randomEntries(rng, 5), rangedel.Fragment([]rangedel.Tombstone{
		{Start: []byte("key0003"), End: []byte("key0010"), Seq: 3}, {Start: []byte("key0005"), End: []byte("key0020"), Seq: 7}}))
	file, _ := fs.Open("t")
	size, _ := file.Size()
	b := make([]byte, size)
	file.ReadAt(b, 0)
	f.Add(b)

	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		file, _ := fs.Create("t.sst")
		file.Write(data)
		file.Close()
		file, _ = fs.Open("t.sst")
		r, err := Open(file, "t.sst", ReaderOptions{Filters: []filter.Policy{bloom.NewPolicy(10)}})
		if err != nil {
			file.Close()
			checkCorruption(t, err, "t.sst")
			return
		}
		defer r.Close()
		walk := func(it base.InternalIterator, start func() bool, step func() bool) {
			n := 0
			for ok := start(); ok; ok = step() {
				// Blocks hold at most one entry per 3 bytes, and
				// decompress to at most maxZstdRatio times their size.
				if n++; n > maxZstdRatio*len(data) {
					t.Fatal("walk does not end")
				}
			}
			if err := it.Close(); err != nil {
				checkCorruption(t, err, "t.sst")
			}
		}
		it := r.NewIter()
		walk(it, it.First, it.Next)
		it = r.NewIter()
		walk(it, it.Last, it.Prev)
		for i := range 4 {
			k := fmt.Appendf(nil, "key%04d", i*7)
			if _, _, _, err := r.Get(k, base.MaxSeqNum, nil); err != nil {
				checkCorruption(t, err, "t.sst")
			}
			it = r.NewIterBounds(nil, k)
			walk(it, func() bool { return it.SeekLT(k) }, it.Prev)
		}
	})
}
