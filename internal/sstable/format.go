package sstable

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
	"github.com/golang/snappy"
	"github.com/shale-db/shale/internal/base"
)

// The constants of the format described in writer.go.
const (
	// FormatVersion is the newest version this package writes; it reads
	// it and every older one. A table is written in version 1 unless it
	// holds range tombstones: then in version 2, which a reader from before
	// range deletions refuses ("unknown format version 2") rather than
	// read the table without its tombstones.
	FormatVersion = 2
	// formatVersionNoRangeDels is version 1, which has no range-deletion
	// block.
	formatVersionNoRangeDels = 1

	blockTrailerLen = 5 // type byte + checksum
	blockTypeRaw    = 0
	blockTypeSnappy = 1

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
	if v != formatVersionNoRangeDels && v != FormatVersion {
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
	contents, compressed, dlen, err := checkBlock(file, off, buf)
	if err != nil || !compressed {
		return contents, err
	}
	if cap(dst) < dlen {
		dst = make([]byte, dlen)
	}
	return decompress(file, off, dst[:dlen], contents)
}

// checkBlock checks a block as stored (contents and trailer) read from
// offset off of file, and returns its stored contents, aliasing buf,
// whether they are snappy-compressed, and their length decompressed.
func checkBlock(file string, off int64, buf []byte) (contents []byte, compressed bool, dlen int, err error) {
	if len(buf) < blockTrailerLen {
		return nil, false, 0, base.CorruptionErrorf(file, off, "block of %d bytes has no trailer", len(buf))
	}
	n := len(buf) - blockTrailerLen
	if got, want := checksum32(buf[:n+1]), binary.LittleEndian.Uint32(buf[n+1:]); got != want {
		return nil, false, 0, base.CorruptionErrorf(file, off, "block checksum mismatch (%#x, want %#x)", got, want)
	}
	contents = buf[:n:n]
	switch buf[n] {
	case blockTypeRaw:
		return contents, false, n, nil
	case blockTypeSnappy:
		dlen, err := snappy.DecodedLen(contents)
		if err != nil || dlen > maxBlockLen || dlen > maxSnappyRatio*n {
			return nil, false, 0, base.CorruptionErrorf(file, off, "bad snappy block header (decoded length %d, %d bytes stored)", dlen, n)
		}
		return contents, true, dlen, nil
	}
	return nil, false, 0, base.CorruptionErrorf(file, off, "unknown block type %d", buf[n])
}

// decompress decodes the snappy-compressed contents of the block at offset
// off of file into dst, whose length is their decompressed length as
// checkBlock returned it.
func decompress(file string, off int64, dst, contents []byte) ([]byte, error) {
	out, err := snappy.Decode(dst, contents)
	if err != nil {
		return nil, base.CorruptionErrorf(file, off, "snappy: %v", err)
	}
	return out, nil
}
