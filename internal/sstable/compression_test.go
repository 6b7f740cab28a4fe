package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/vfs"
)

// blockTypes returns the type byte of each data block of table name, in
// order, read from the blocks' trailers.
func blockTypes(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	r := openTable(t, fs, name, ReaderOptions{})
	defer r.Close()
	var index blockIter
	if err := index.init(r.name, r.indexOffset, r.index); err != nil {
		t.Fatal(err)
	}
	var types []byte
	for ok := index.First(); ok; ok = index.Next() {
		h, _ := decodeHandle(index.val)
		var typ [1]byte
		if _, err := r.f.ReadAt(typ[:], int64(h.offset+h.length)); err != nil {
			t.Fatal(err)
		}
		types = append(types, typ[0])
	}
	return types
}

// TestCompressionRoundTrip writes the same compressible entries with each
// compression, with and without range tombstones, and reads them back
// whole: every data block is stored as the compression says, the table
// records its compression and has the format version it needs, and zstd
// stores the data in fewer bytes than snappy.
func TestCompressionRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var entries []kv
	for i := range 400 {
		v := fmt.Appendf(nil, `{"id": %d, "name": "user%d", "city": "%s"}`, i, rng.IntN(50), []string{"Lisbon", "Oslo", "Quito"}[rng.IntN(3)])
		entries = append(entries, kv{ikey(fmt.Sprintf("key%05d", i), base.SeqNum(i+1), base.KindSet), v})
	}
	// The tombstone covers no entry, so that readAll's Gets find them all.
	spans := rangedel.Fragment([]rangedel.Tombstone{{Start: []byte("zz"), End: []byte("zzz"), Seq: 1000}})
	dataSize := map[Compression]uint64{}
	for _, c := range []Compression{SnappyCompression, NoCompression, ZstdCompression} {
		for _, withRangeDels := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/rangedels=%v", c, withRangeDels), func(t *testing.T) {
				fs := vfs.NewMem()
				f, _ := fs.Create("t.sst")
				w := NewWriter(f, WriterOptions{BlockSize: 1024, Compression: c, FilterPolicy: bloom.NewPolicy(10)})
				for _, e := range entries {
					if err := w.Add(e.key, e.value); err != nil {
						t.Fatal(err)
					}
				}
				if withRangeDels {
					w.SetRangeDels(spans)
				}
				props, err := w.Close()
				if err != nil {
					t.Fatal(err)
				}
				if err := readAll(t, fs, "t.sst", entries); err != nil {
					t.Fatal(err)
				}
				wantType := map[Compression]byte{SnappyCompression: blockTypeSnappy, NoCompression: blockTypeRaw, ZstdCompression: blockTypeZstd}[c]
				types := blockTypes(t, fs, "t.sst")
				if len(types) < 10 || bytes.Count(types, []byte{wantType}) != len(types) {
					t.Fatalf("data block types %v, want all %d", types, wantType)
				}
				wantVersion := uint32(formatVersionNoRangeDels)
				if c == ZstdCompression {
					wantVersion = FormatVersion
				} else if withRangeDels {
					wantVersion = formatVersionRangeDels
				}
				r := openTable(t, fs, "t.sst", ReaderOptions{})
				defer r.Close()
				got := r.Properties()
				if got.Compression != c.String() || got.FormatVersion != wantVersion || props.FormatVersion != wantVersion {
					t.Fatalf("compression %q, format version %d (writer %d); want %q, %d", got.Compression, got.FormatVersion, props.FormatVersion, c, wantVersion)
				}
				if n := uint64(r.RangeDels().Count()); n != got.NumRangeDels || (n > 0) != withRangeDels {
					t.Fatalf("%d range tombstones, properties say %d", n, got.NumRangeDels)
				}
				dataSize[c] = got.DataSize
			})
		}
	}
	if !(dataSize[ZstdCompression] < dataSize[SnappyCompression] && dataSize[SnappyCompression] < dataSize[NoCompression]) {
		t.Fatalf("data bytes: zstd %d, snappy %d, none %d; want each smaller than the next", dataSize[ZstdCompression], dataSize[SnappyCompression], dataSize[NoCompression])
	}
}

// storedBlock returns contents stored as a block of type typ: contents,
// type byte and a valid checksum, so that only the decompression can find
// fault with it.
func storedBlock(contents []byte, typ byte) []byte {
	b := append(bytes.Clone(contents), typ)
	return binary.LittleEndian.AppendUint32(b, checksum32(b))
}

// TestCorruptCompressedBlocks decodes snappy and zstd blocks whose
// checksums are right but whose contents are not what the writer makes:
// each must be refused as corruption naming the file, without a panic and
// without allocating what a lying header claims.
func TestCorruptCompressedBlocks(t *testing.T) {
	raw := bytes.Repeat([]byte("shale zstd block "), 300) // 5100 bytes
	good := zstdEncoder().EncodeAll(raw, nil)
	if got, err := decodeBlock("f", 0, storedBlock(good, blockTypeZstd)); err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("intact block: %v", err)
	}
	// A frame header claiming size n: single segment, 8-byte content size,
	// then a last raw block of 4 bytes.
	claim := func(n uint64) []byte {
		b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}
		b = binary.LittleEndian.AppendUint64(b, n)
		return append(b, 0x21, 0, 0, 'a', 'b', 'c', 'd')
	}
	random := make([]byte, 5000)
	for i := range random {
		random[i] = byte(rand.Uint32())
	}
	noFCS, err := zstd.NewWriter(nil, zstd.WithSingleSegment(false), zstd.WithEncoderCRC(false))
	if err != nil {
		t.Fatal(err)
	}
	twoFrames := append(bytes.Clone(good), good...)
	lessThanSaid := bytes.Clone(good)
	lessThanSaid[5]-- // the 2-byte content size (offset 256), one less
	for _, tc := range []struct {
		name     string
		typ      byte
		contents []byte
		want     string
	}{
		{"zstd empty", blockTypeZstd, nil, "bad zstd block header"},
		{"zstd not a frame", blockTypeZstd, []byte("not a zstd frame at all"), "bad zstd block header"},
		{"zstd truncated header", blockTypeZstd, good[:5], "bad zstd block header"},
		{"zstd without content size", blockTypeZstd, noFCS.EncodeAll([]byte("small"), nil), "not one frame of known size"},
		{"zstd skippable frame", blockTypeZstd, []byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}, "not one frame of known size"},
		{"zstd claims past maxBlockLen", blockTypeZstd, claim(maxBlockLen + 1), "decoded length"},
		{"zstd claims past its ratio", blockTypeZstd, claim(1 << 24), "decoded length"},
		{"zstd claims more than it holds", blockTypeZstd, claim(100), "zstd:"},
		{"zstd truncated blocks", blockTypeZstd, good[:len(good)-3], "zstd:"},
		{"zstd two frames", blockTypeZstd, twoFrames, "zstd:"},
		{"zstd decodes more than said", blockTypeZstd, lessThanSaid, "zstd:"},
		{"snappy claims past its ratio", blockTypeSnappy, binary.AppendUvarint(nil, 1<<20), "bad snappy block header"},
		{"snappy truncated", blockTypeSnappy, snappy.Encode(nil, random)[:3000], "snappy:"},
		{"unknown type", 3, good, "unknown block type 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := decodeBlock("f", 0, storedBlock(tc.contents, tc.typ))
			runtime.ReadMemStats(&after)
			checkCorruption(t, err, "f")
			// A lying header must not size an allocation: the decoder's
			// own buffers are made once, and are far below this.
			if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
				t.Fatalf("decoding allocated %d bytes", n)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestFormatVersionRefused checks that a footer of a version newer than
// this reader knows is refused by its number, as readers from before zstd
// refuse version 3.
func TestFormatVersionRefused(t *testing.T) {
	b := footer{metaindex: blockHandle{100, 20}, index: blockHandle{5, 90}, version: FormatVersion + 1}.encode()
	_, err := decodeFooter("f", 0, b)
	checkCorruption(t, err, "f")
	if want := fmt.Sprintf("unknown format version %d", FormatVersion+1); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}
