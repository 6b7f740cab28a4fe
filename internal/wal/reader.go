package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/shale-db/shale/internal/base"
)

// Reader reads the records of a log in order. It is for one goroutine.
//
// # Torn tails and corruption
//
// A crash during a write leaves the log ending in part of that write: a
// prefix of it, or, on file systems that write pages out of order, some of
// its pages and zeros or stale bytes in place of others. Such a tail is not
// an error; the log ends before it. Damage anywhere else is corruption. The
// Reader tells them apart as follows.
//
// A fragment is bad when its header is cut off by the end of the file, is all
// zeros, or gives a length that overruns the block or the file, or when its
// checksum does not match; and also when it is an intact MIDDLE or LAST
// fragment with no FIRST before it. A record is cut off when the file ends
// after its FIRST fragment and before its LAST.
//
//   - A bad fragment at offset o is a torn tail if no intact FULL or FIRST
//     fragment starts anywhere after o, at any byte position: nothing written
//     after the damage survived, so the damage is the last write. Next then
//     returns io.EOF. If an intact record start does follow, Next returns a
//     *base.CorruptionError for offset o.
//   - A record cut off by the end of the file is a torn tail: Next returns
//     io.EOF.
//   - An intact FULL or FIRST fragment in place of a record's next MIDDLE or
//     LAST fragment is corruption at the interrupted record's start (the
//     Writer never abandons a record and then writes another), and so is an
//     intact fragment of an unknown type.
//
// Only record starts count as surviving later writes: the pages of a single
// torn write can survive out of order, so intact MIDDLE and LAST fragments of
// the torn record itself may follow its damaged start. Every byte position is
// searched, not only block starts, because damage to a length field loses
// the fragment boundaries up to the end of the block, and records written
// after the damage may lie in that same block.
//
// What the rule cannot tell apart: damage to the last record of a log looks
// exactly like a torn write of it, so a log whose last record was synced and
// later damaged loses that record without an error. And a torn tail whose
// surviving bytes contain an intact FULL or FIRST fragment, as part of a
// payload or as stale bytes left by an earlier log, reads as corruption (a
// false alarm, never lost data).
//
// After Next returns io.EOF, TornTail says whether the log ended in a torn
// tail and where the intact log ends, for the DB to report.
//
// The Reader reads the file a block at a time with ReadAt, never allocates
// by a length read from the file, and never returns a record that did not
// pass its checksums.
type Reader struct {
	r    io.ReaderAt
	file string

	block    [blockSize]byte
	blockOff int64 // file offset of block
	n        int   // bytes of block read from the file
	last     bool  // nothing in the file after block[:n]
	pos      int   // block offset of the next fragment

	rec    []byte // reassembles a record of several fragments
	recOff int64  // file offset of the record Next returned last
	end    int64  // file offset just past the record Next returned last
	torn   bool
	err    error // sticky: io.EOF, corruption or an I/O error
}

// NewReader returns a Reader of the log in r (a vfs.File, for one), which it
// reads from offset 0 to the end. fileName is used in errors.
func NewReader(r io.ReaderAt, fileName string) *Reader {
	// Stand at the end of a full block before offset 0, so that the first
	// fragment read loads block 0.
	return &Reader{r: r, file: fileName, blockOff: -blockSize, n: blockSize, pos: blockSize}
}

// Next returns the next record. The record is valid until the next call. At
// the end of the log, clean or torn, it returns io.EOF; damage in the middle
// of the log gives a *base.CorruptionError; an error reading the file is
// returned wrapped. After an error Next returns the same error again.
func (r *Reader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	return rec, nil
}

// Offset returns the file offset of the record Next returned last: the offset
// Writer.WriteRecord returned for it. Errors about the record's contents
// name it.
func (r *Reader) Offset() int64 { return r.recOff }

// TornTail reports whether the log ended in a torn tail and, if so, the
// offset at which the intact log ends: just after the last record Next
// returned, or 0. It reports false until Next has returned io.EOF.
func (r *Reader) TornTail() (offset int64, ok bool) {
	if !r.torn {
		return 0, false
	}
	return r.end, true
}

// fragment is an intact fragment.
type fragment struct {
	off     int64 // file offset of its header
	typ     byte
	payload []byte // aliases Reader.block
}

func (r *Reader) next() ([]byte, error) {
	r.rec = r.rec[:0]
	var start int64 = -1 // offset of the record being reassembled, if any
	for {
		f, bad, err := r.fragment()
		switch {
		case err == io.EOF && start >= 0:
			r.torn = true // the record is cut off
			return nil, io.EOF
		case err != nil:
			return nil, err
		case bad != "":
			return nil, r.tornOrCorrupt(f.off, bad)
		}
		switch f.typ {
		case typeFull, typeFirst:
			if start >= 0 {
				return nil, base.CorruptionErrorf(r.file, start,
					"record has no LAST fragment: a new record starts at offset %d", f.off)
			}
			start = f.off
			if f.typ == typeFull {
				return r.done(start, f.payload), nil
			}
			r.rec = append(r.rec, f.payload...)
		case typeMiddle, typeLast:
			if start < 0 {
				return nil, r.tornOrCorrupt(f.off, fmt.Sprintf("%s fragment outside a record", typeName(f.typ)))
			}
			r.rec = append(r.rec, f.payload...)
			if f.typ == typeLast {
				return r.done(start, r.rec), nil
			}
		default:
			return nil, base.CorruptionErrorf(r.file, f.off, "unknown fragment type %d", f.typ)
		}
	}
}

// done notes that the record rec, starting at start, is complete: its last
// fragment is the one just read. It returns rec.
func (r *Reader) done(start int64, rec []byte) []byte {
	r.recOff = start
	r.end = r.blockOff + int64(r.pos)
	return rec
}

// fragment reads the fragment at the read position and moves past it. At the
// end of the file it returns io.EOF. If the bytes there are not an intact
// fragment it returns bad, saying why, with f.off set and the read position
// left where it was.
func (r *Reader) fragment() (f fragment, bad string, err error) {
	for blockSize-r.pos < headerSize { // the rest of the block is padding
		if r.last {
			return f, "", io.EOF
		}
		if err := r.nextBlock(); err != nil {
			return f, "", err
		}
	}
	f.off = r.blockOff + int64(r.pos)
	rest := r.block[r.pos:r.n]
	if len(rest) == 0 {
		return f, "", io.EOF
	}
	if len(rest) < headerSize {
		return f, "fragment header cut off by the end of the file", nil
	}
	length := int(binary.LittleEndian.Uint16(rest[4:]))
	end := headerSize + length
	switch {
	case bytes.Equal(rest[:headerSize], zeroHeader[:]):
		return f, "zeroed fragment header", nil
	case r.pos+end > blockSize:
		return f, fmt.Sprintf("fragment length %d overruns its block", length), nil
	case end > len(rest):
		return f, fmt.Sprintf("fragment length %d overruns the end of the file", length), nil
	case checksum(rest[4:end]) != binary.LittleEndian.Uint32(rest):
		return f, "fragment checksum mismatch", nil
	}
	r.pos += end
	f.typ = rest[6]
	f.payload = rest[headerSize:end]
	return f, "", nil
}

var zeroHeader [headerSize]byte

// nextBlock reads the block after the current one.
func (r *Reader) nextBlock() error {
	r.blockOff += blockSize
	r.pos = 0
	n, err := r.r.ReadAt(r.block[:], r.blockOff)
	if err != nil && err != io.EOF {
		return fmt.Errorf("wal: reading %s at offset %d: %w", r.file, r.blockOff, err)
	}
	r.n = n
	r.last = n < blockSize || err == io.EOF
	return nil
}

// tornOrCorrupt decides, by the rule on Reader, what the bad fragment at off
// in the current block is: a torn tail (io.EOF) or corruption. It reads the
// rest of the file.
func (r *Reader) tornOrCorrupt(off int64, reason string) error {
	p := int(off-r.blockOff) + 1
	for {
		for ; p+headerSize <= r.n; p++ {
			if r.intactStart(p) {
				return base.CorruptionErrorf(r.file, off,
					"%s, and an intact record starts at offset %d", reason, r.blockOff+int64(p))
			}
		}
		if r.last {
			r.torn = true
			return io.EOF
		}
		if err := r.nextBlock(); err != nil {
			return err
		}
		p = 0
	}
}

// intactStart reports whether an intact FULL or FIRST fragment starts at
// block offset p, with at least a header's bytes there.
func (r *Reader) intactStart(p int) bool {
	h := r.block[p:r.n]
	if h[6] != typeFull && h[6] != typeFirst {
		return false
	}
	end := headerSize + int(binary.LittleEndian.Uint16(h[4:]))
	return end <= len(h) && checksum(h[4:end]) == binary.LittleEndian.Uint32(h)
}

func typeName(t byte) string {
	switch t {
	case typeFull:
		return "FULL"
	case typeFirst:
		return "FIRST"
	case typeMiddle:
		return "MIDDLE"
	case typeLast:
		return "LAST"
	}
	return fmt.Sprintf("type %d", t)
}
