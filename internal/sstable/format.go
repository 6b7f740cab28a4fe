package sstable

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/shale-db/shale/internal/base"
)

// The constants of the format described in writer.go.
const (
	// FormatVersion is the newest version this package writes; it reads
	// it and every older one. A table is written in version 1 unless it
	// holds range tombstones or is written with zstd: with tombstones in
	// version 2, which a reader from before range deletions refuses
	// ("unknown format version 2") rather than read the table without its
	// tombstones; with zstd in version 3, which a reader from before zstd
	// refuses ("unknown format version 3") rather than meet its first zstd
	// block as a damaged one.
	FormatVersion = 3
	// formatVersionNoRangeDels is version 1, which has no range-deletion
	// block.
	formatVersionNoRangeDels = 1
	// formatVersionRangeDels is version 2, which has a range-deletion
	// block.
	formatVersionRangeDels = 2

	blockTrailerLen = 5 // type byte + checksum
	blockTypeRaw    = 0
	blockTypeSnappy = 1
	blockTypeZstd   = 2

	maxHandleLen    = 2 * binary.MaxVarintLen64
	footerLen       = 2*maxHandleLen + 4 + 4 + 8
	footerVersionAt = 2 * maxHandleLen
	footerMagicAt   = footerLen - 8
	tableMagic      = 0x747373656c616873 // "shalesst", little-endian

	// maxBlockSize bounds the BlockSize option, and MaxEntryLen one entry,
	// so that every block is shorter than maxBlockLen, which in turn keeps
	// restart offsets within uint32 and bounds what a reader will allocate
	// to decompress a block.
	maxBlockSize = 1 << 28
	maxBlockLen  = 1 << 29

	// maxSnappyRatio bounds how much snappy can expand: its densest element,
	// a 3-byte copy, yields 64 bytes. A decoded length claiming more than
	// this is corrupt, and is refused before it sizes an allocation.
	maxSnappyRatio = 22
	// maxZstdRatio bounds how much zstd can expand: its densest element,
	// an RLE block of 4 bytes (a 3-byte header and the byte), yields at
	// most 128 KiB, the largest block.
	maxZstdRatio = 1 << 15
)

// MaxEntryLen bounds one entry of a table: its encoded internal key (the
// user key and base.TrailerLen) plus its value. Add refuses a longer one,
// so the DB refuses to commit a write that no table could hold.
const MaxEntryLen = 1 << 28

// blockHandle locates a block: its offset in the file and the length of its
// contents, not counting the trailer.
type blockHandle struct {
	offset, length uint64
}

func (h blockHandle) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, h.offset)
	return binary.AppendUvarint(dst, h.length)
}

// decodeHandle decodes a handle from the start of b and returns the number
// of bytes it used, 0 when b does not start with one.
func decodeHandle(b []byte) (blockHandle, int) {
	off, n1 := binary.Uvarint(b)
	if n1 <= 0 {
		return blockHandle{}, 0
	}
	length, n2 := binary.Uvarint(b[n1:])
	if n2 <= 0 {
		return blockHandle{}, 0
	}
	return blockHandle{off, length}, n1 + n2
}

// checksum32 is the checksum of blocks and the footer: xxhash64 truncated to
// its low 32 bits.
func checksum32(b []byte) uint32 { return uint32(xxhash.Sum64(b)) }

// footer is the decoded fixed-size tail of a table.
type footer struct {
	metaindex, index blockHandle
	version          uint32
}

func (f footer) encode() []byte {
	b := make([]byte, footerLen)
	f.index.append(f.metaindex.append(b[:0]))
	binary.LittleEndian.PutUint32(b[footerVersionAt:], f.version)
	binary.LittleEndian.PutUint32(b[footerVersionAt+4:], checksum32(b[:footerVersionAt+4]))
	binary.LittleEndian.PutUint64(b[footerMagicAt:], tableMagic)
	return b
}

// decodeFooter decodes the footer bytes b (footerLen of them) found at
// offset off of file.
func decodeFooter(file string, off int64, b []byte) (footer, error) {
	if m := binary.LittleEndian.Uint64(b[footerMagicAt:]); m != tableMagic {
		return footer{}, base.CorruptionErrorf(file, off, "bad magic %#x: not an sstable", m)
	}
	if got, want := checksum32(b[:footerVersionAt+4]), binary.LittleEndian.Uint32(b[footerVersionAt+4:]); got != want {
		return footer{}, base.CorruptionErrorf(file, off, "footer checksum mismatch (%#x, want %#x)", got, want)
	}
	v := binary.LittleEndian.Uint32(b[footerVersionAt:])
	if v < formatVersionNoRangeDels || v > FormatVersion {
		return footer{}, base.CorruptionErrorf(file, off, "unknown format version %d", v)
	}
	f := footer{version: v}
	var n1, n2 int
	f.metaindex, n1 = decodeHandle(b[:maxHandleLen])
	if n1 > 0 {
		f.index, n2 = decodeHandle(b[n1:footerVersionAt])
	}
	if n1 == 0 || n2 == 0 {
		return footer{}, base.CorruptionErrorf(file, off, "bad block handle in footer")
	}
	return f, nil
}

// decodeBlock checks a block as stored (contents and trailer) read from
// offset off of file, and returns its contents, decompressed. Raw contents
// alias buf; decompressed ones are a new slice.
func decodeBlock(file string, off int64, buf []byte) ([]byte, error) {
	return decodeBlockInto(file, off, buf, nil)
}

// decodeBlockInto is decodeBlock decompressing into dst when it is large
// enough, instead of a new slice.
func decodeBlockInto(file string, off int64, buf, dst []byte) ([]byte, error) {
	contents, typ, dlen, err := checkBlock(file, off, buf)
	if err != nil || typ == blockTypeRaw {
		return contents, err
	}
	if cap(dst) < dlen {
		dst = make([]byte, dlen)
	}
	return decompress(file, off, typ, dst[:dlen], contents)
}

// copyOf returns a copy of b of its length and capacity. (The compiler
// makes this make and copy one allocation that is not zeroed first, where
// slices.Clone rounds the capacity up to a size class and zeroes the rest.)
func copyOf(b []byte) []byte {
	c := make([]byte, len(b))
	copy(c, b)
	return c
}

// checkBlock checks a block as stored (contents and trailer) read from
// offset off of file, and returns its stored contents, aliasing buf, its
// type, and the length of its contents decompressed.
func checkBlock(file string, off int64, buf []byte) (contents []byte, typ byte, dlen int, err error) {
	if len(buf) < blockTrailerLen {
		return nil, 0, 0, base.CorruptionErrorf(file, off, "block of %d bytes has no trailer", len(buf))
	}
	n := len(buf) - blockTrailerLen
	if got, want := checksum32(buf[:n+1]), binary.LittleEndian.Uint32(buf[n+1:]); got != want {
		return nil, 0, 0, base.CorruptionErrorf(file, off, "block checksum mismatch (%#x, want %#x)", got, want)
	}
	contents, typ = buf[:n:n], buf[n]
	if dlen, err = decodedLen(file, off, typ, contents); err != nil {
		return nil, 0, 0, err
	}
	return contents, typ, dlen, nil
}

// decodedLen returns the length that contents, stored as a block of type
// typ at offset off of file, decompress to, as their header says. A
// length beyond what the type can expand to, or beyond maxBlockLen, is
// refused before it sizes an allocation.
func decodedLen(file string, off int64, typ byte, contents []byte) (int, error) {
	n := len(contents)
	switch typ {
	case blockTypeRaw:
		return n, nil
	case blockTypeSnappy:
		dlen, err := snappy.DecodedLen(contents)
		if err != nil || dlen > maxBlockLen || dlen > maxSnappyRatio*n {
			return 0, base.CorruptionErrorf(file, off, "bad snappy block header (decoded length %d, %d bytes stored)", dlen, n)
		}
		return dlen, nil
	case blockTypeZstd:
		var h zstd.Header
		err := h.Decode(contents)
		switch {
		case err != nil:
			return 0, base.CorruptionErrorf(file, off, "bad zstd block header (%d bytes stored): %v", n, err)
		case h.Skippable || !h.HasFCS || h.DictionaryID != 0:
			return 0, base.CorruptionErrorf(file, off, "bad zstd block header (%d bytes stored): not one frame of known size without a dictionary", n)
		case h.FrameContentSize > maxBlockLen || h.FrameContentSize > maxZstdRatio*uint64(n):
			return 0, base.CorruptionErrorf(file, off, "bad zstd block header (decoded length %d, %d bytes stored)", h.FrameContentSize, n)
		}
		return int(h.FrameContentSize), nil
	}
	return 0, base.CorruptionErrorf(file, off, "unknown block type %d", typ)
}

// decompress decodes the contents of the block of type typ (snappy or
// zstd) at offset off of file into dst, whose length is their decompressed
// length as decodedLen returned it, and returns dst.
func decompress(file string, off int64, typ byte, dst, contents []byte) ([]byte, error) {
	if typ == blockTypeSnappy {
		out, err := snappy.Decode(dst, contents)
		if err != nil {
			return nil, base.CorruptionErrorf(file, off, "snappy: %v", err)
		}
		return out, nil
	}
	// The decoder decodes no further than dst's capacity (a second frame,
	// or a frame longer than its header says, is an error), in place.
	out, err := zstdDecoder().DecodeAll(contents, dst[:0:len(dst)])
	if err == nil && len(out) != len(dst) {
		err = fmt.Errorf("decoded %d bytes, the header says %d", len(out), len(dst))
	}
	if err != nil {
		return nil, base.CorruptionErrorf(file, off, "zstd: %v", err)
	}
	return out, nil
}

// zstdEncoder and zstdDecoder are the process's one zstd encoder and
// decoder, made on first use (each holds tables and buffers worth reusing)
// and shared: EncodeAll and DecodeAll may be called concurrently, each call
// taking one of GOMAXPROCS internal coders.
var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			// Huffman-code the literals of a block without matches too,
			// as the reference zstd does: text of random words or
			// characters has few matches and a skewed alphabet.
			zstd.WithAllLitEntropyCompression(true),
			// The block trailer's checksum covers the block already.
			zstd.WithEncoderCRC(false),
			// An empty block gets a frame too, not zero bytes.
			zstd.WithZeroFrames(true),
			// A single-segment frame's header always holds its content
			// size, which decodedLen needs; others omit it below 256.
			zstd.WithSingleSegment(true),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
		if err != nil {
			panic(err) // the options are constants
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(maxBlockLen),
			zstd.WithDecoderMaxWindow(maxBlockLen),
			zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			panic(err) // the options are constants
		}
		return d
	})
)
