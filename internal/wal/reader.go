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
// A crash during a write leaves the log ending in part of the writes since
// the last sync. Such a tail is not an error; the log ends before it. Damage
// anywhere else is corruption. The Reader tells them apart as follows.
//
// A fragment is bad when its header is cut off by the end of the file, is all
// zeros, or gives a length that overruns the block or the file, or when its
// checksum does not match; and also when it is an intact MIDDLE or LAST
// fragment with no FIRST before it. In both versions a record cut off by the
// end of the file (after its FIRST fragment, before its LAST) is a torn
// tail, and an intact FULL or FIRST fragment in place of a record's next
// MIDDLE or LAST is corruption at the interrupted record's start: the Writer
// never abandons a record and then writes another.
//
// In a version 2 log (see the package doc):
//
//   - A COMMIT or END whose seal does not match is a bad fragment.
//   - A bad fragment at offset o is corruption if a COMMIT or END at any
//     byte offset after o, whose checksum and seal match there, records a
//     synced offset greater than o. Otherwise it is a torn tail: Next
//     returns io.EOF.
//   - The file ending inside a group (after the LOG fragment or a record
//     fragment, before the COMMIT) is a torn tail. That is also how a log
//     reads whose last groups carry no COMMIT yet (see the package doc):
//     TornTail then gives the end of the last record, and every whole
//     record is returned either way.
//   - An END ends the log: Next returns io.EOF and Ended reports true.
//     Whatever follows an END is not read.
//   - Any intact fragment the Writer would never have written where it
//     stands is corruption: a COMMIT counting other than the records before
//     it, a record abandoned for another, an END inside a group, a COMMIT or
//     END whose synced offset lies past itself or before the previous one's,
//     a LOG fragment after offset 0, a fragment of version 1 or of an
//     unknown type.
//
// A version 1 log keeps the version 1 rule: a bad fragment at offset o is a
// torn tail if no intact FULL or FIRST fragment of version 1 starts anywhere
// after o, at any byte position; otherwise it is corruption. (That rule
// searches payload bytes, which a value can imitate, and calls pages written
// back out of order corruption: version 2 replaced it.)
//
// When the first fragment of a log is bad, its version and salt are
// unknown. Its salt field is taken as the salt, whatever its version field
// reads (damage to the version leaves the salt intact), and sealed COMMIT
// or END fragments are looked for as above: a seal made with another salt
// never matches, so a damaged salt, or the zeros of a page never written,
// finds none. Failing that, the claims are the COMMIT and END fragments on
// the chains of intact fragments that start at offset 19 (after a LOG
// fragment) and at the later block starts, seals unchecked (the package
// doc says why that is sound). The log is taken as version 2 if a sealed
// claim, a claim on the chain from offset 19, or an intact fragment of a
// version 2 type on the chains from block starts is found, else as version
// 1. (In a version 1 log, the first payload bytes could pass for a version
// field and a salt, and a value could then hold a claim sealed with them,
// or an intact COMMIT at offset 19: a damaged first record of a version 1
// log could read as corruption rather than a torn tail, a false alarm in a
// format no longer written, never lost data.)
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

	version int    // 0 until the first fragment is read, then 1 or 2
	salt    uint64 // version 2: from the LOG fragment
	open    bool   // version 2: inside a group: read part of it, not its COMMIT
	pending int    // version 2: records read since the last COMMIT
	synced  int64  // version 2: the synced offset of the last COMMIT read

	rec    []byte // reassembles a record of several fragments
	recOff int64  // file offset of the record Next returned last
	end    int64  // file offset just past the record Next returned last
	torn   bool
	cut    bool // torn, and bytes past end were cut off (see CutOff)
	ended  bool
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
// the end of the log, clean, torn or at an end marker, it returns io.EOF;
// damage in the middle of the log gives a *base.CorruptionError; an error
// reading the file is returned wrapped. After an error Next returns the same
// error again.
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

// CutOff reports whether the torn tail cut bytes off: a record cut short,
// or a bad fragment and whatever followed it. It is false for a log that
// ends in whole records that no COMMIT counts yet, as a Writer leaves one
// between COMMITs (see the package doc): such a tail is reported as torn,
// since the reader cannot tell a crash before the next COMMIT was due from
// a write cut at a record boundary, but nothing in the file is dropped.
// It is false too when only zeros follow the last whole record, as in a
// mapped log that was not closed (see NewMappedWriter).
// It reports false until Next has returned io.EOF.
func (r *Reader) CutOff() bool { return r.cut }

// Ended reports whether the log ended at an end marker (Writer.MarkEnd): it
// was closed cleanly. It reports false until Next has returned io.EOF.
func (r *Reader) Ended() bool { return r.ended }

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
		case err == io.EOF && (start >= 0 || r.open):
			r.torn = true // a record or a group is cut off
			r.cut = start >= 0
			return nil, io.EOF
		case err != nil:
			return nil, err
		case bad != "":
			err := r.damaged(f.off, bad)
			if err == io.EOF && start >= 0 {
				r.cut = true // a record cut short, even if only zeros follow
			}
			return nil, err
		}
		typ := f.typ
		if r.version == 0 {
			if typ == typeLog {
				if err := r.readVersion(f); err != nil {
					return nil, err
				}
				continue
			}
			r.version = 1
		}
		if r.version == 2 {
			switch typ {
			case typeCommit, typeEnd:
				if _, _, ok := parseCommit(f.typ, f.payload); ok && !sealed(r.salt, f) {
					return nil, r.damaged(f.off, fmt.Sprintf("%s seal mismatch", typeName(typ)))
				}
				if err := r.commit(f, start); err != nil {
					return nil, err
				}
				continue
			case typeFull, typeFirst, typeMiddle, typeLast:
				typ -= typeFull - typeFull1 // the record rules are version 1's
				r.open = true
			default:
				return nil, base.CorruptionErrorf(r.file, f.off, "unexpected %s fragment in a version 2 log", typeName(typ))
			}
		}
		switch typ {
		case typeFull1, typeFirst1:
			if start >= 0 {
				return nil, base.CorruptionErrorf(r.file, start,
					"record has no LAST fragment: a new record starts at offset %d", f.off)
			}
			start = f.off
			if typ == typeFull1 {
				return r.done(start, f.payload), nil
			}
			r.rec = append(r.rec, f.payload...)
		case typeMiddle1, typeLast1:
			if start < 0 {
				return nil, r.damaged(f.off, fmt.Sprintf("%s fragment outside a record", typeName(f.typ)))
			}
			r.rec = append(r.rec, f.payload...)
			if typ == typeLast1 {
				return r.done(start, r.rec), nil
			}
		default:
			return nil, base.CorruptionErrorf(r.file, f.off, "unknown fragment type %d", f.typ)
		}
	}
}

// readVersion reads the LOG fragment f at offset 0.
func (r *Reader) readVersion(f fragment) error {
	if len(f.payload) >= 4 {
		if v := binary.LittleEndian.Uint32(f.payload); v != version {
			return base.CorruptionErrorf(r.file, f.off, "unknown log format version %d (this build reads versions 1 and 2)", v)
		}
	}
	if len(f.payload) != logSize-headerSize {
		return base.CorruptionErrorf(r.file, f.off, "version %d LOG fragment of %d bytes, want %d", version, len(f.payload), logSize-headerSize)
	}
	r.version = 2
	r.salt = binary.LittleEndian.Uint64(f.payload[4:])
	r.open = true // the LOG fragment is written with the first group
	return nil
}

// commit checks the COMMIT or END fragment f, read while the record that
// starts at start (or none, -1) was being reassembled, and takes it in. At
// an END it returns io.EOF.
func (r *Reader) commit(f fragment, start int64) error {
	what := typeName(f.typ)
	synced, n, ok := parseCommit(f.typ, f.payload)
	switch {
	case !ok:
		return base.CorruptionErrorf(r.file, f.off, "%s fragment of %d bytes", what, len(f.payload))
	case start >= 0:
		return base.CorruptionErrorf(r.file, start, "record has no LAST fragment: a %s starts at offset %d", what, f.off)
	case n != r.pending:
		return base.CorruptionErrorf(r.file, f.off, "%s counts %d records, but %d precede it", what, n, r.pending)
	case synced > f.off || synced < r.synced || f.typ == typeEnd && synced != f.off:
		return base.CorruptionErrorf(r.file, f.off, "%s records synced offset %d (the one before recorded %d)", what, synced, r.synced)
	}
	r.synced, r.pending, r.open = synced, 0, false
	if f.typ == typeEnd {
		r.ended = true
		return io.EOF
	}
	return nil
}

// parseCommit decodes the payload of a COMMIT or END fragment: the synced
// offset and, for a COMMIT, the record count (an END's is 0). ok is false if
// the payload has the wrong size. It does not check the seal.
func parseCommit(typ byte, p []byte) (synced int64, n int, ok bool) {
	switch {
	case typ == typeCommit && len(p) == commitSize-headerSize:
		n = int(binary.LittleEndian.Uint32(p[8:]))
	case typ == typeEnd && len(p) == endSize-headerSize:
	default:
		return 0, 0, false
	}
	synced = int64(binary.LittleEndian.Uint64(p))
	return synced, n, synced >= 0
}

// sealed reports whether f, a COMMIT or END fragment of the right size,
// carries the seal of a log salted with salt at its offset.
func sealed(salt uint64, f fragment) bool {
	n := len(f.payload) - sealSize
	var b [3 + commitSize - headerSize - sealSize]byte
	binary.LittleEndian.PutUint16(b[:], uint16(len(f.payload)))
	b[2] = f.typ
	copy(b[3:], f.payload[:n])
	return sealOf(salt, f.off, b[:3+n]) == binary.LittleEndian.Uint64(f.payload[n:])
}

// done notes that the record rec, starting at start, is complete: its last
// fragment is the one just read. It returns rec.
func (r *Reader) done(start int64, rec []byte) []byte {
	r.recOff = start
	r.end = r.blockOff + int64(r.pos)
	r.pending++
	return rec
}

// fragment reads the fragment at the read position and moves past it. At the
// end of the file it returns io.EOF. If the bytes there are not an intact
// fragment it returns bad, saying why, with f.off set and the read position
// left where it was.
func (r *Reader) fragment() (f fragment, bad string, err error) {
	for blockSize-r.pos < minRoom(r.version) { // the rest of the block is padding
		if r.last {
			return f, "", io.EOF
		}
		if err := r.nextBlock(); err != nil {
			return f, "", err
		}
	}
	f.off = r.blockOff + int64(r.pos)
	if r.pos == r.n {
		return f, "", io.EOF
	}
	f.typ, f.payload, bad = parse(r.block[:r.n], r.pos)
	if bad == "" {
		r.pos += headerSize + len(f.payload)
	}
	return f, bad, nil
}

// parse checks the fragment at offset p of b, the bytes of a block read from
// the file (p < len(b)), and returns its type and payload, or why it is not
// intact.
func parse(b []byte, p int) (typ byte, payload []byte, bad string) {
	rest := b[p:]
	if len(rest) < headerSize {
		return 0, nil, "fragment header cut off by the end of the file"
	}
	length := int(binary.LittleEndian.Uint16(rest[4:]))
	end := headerSize + length
	switch {
	case bytes.Equal(rest[:headerSize], zeroHeader[:]):
		return 0, nil, "zeroed fragment header"
	case p+end > blockSize:
		return 0, nil, fmt.Sprintf("fragment length %d overruns its block", length)
	case end > len(rest):
		return 0, nil, fmt.Sprintf("fragment length %d overruns the end of the file", length)
	case checksum(rest[4:end]) != binary.LittleEndian.Uint32(rest):
		return 0, nil, "fragment checksum mismatch"
	}
	return rest[6], rest[headerSize:end], ""
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

// claim is a COMMIT or END found after damage.
type claim struct {
	off    int64 // its offset
	typ    byte
	synced int64
}

// damaged decides, by the rule on Reader, what the bad fragment at off in
// the current block is: a torn tail (io.EOF) or corruption. It reads on
// until the verdict is decided, at most to the end of the file.
func (r *Reader) damaged(off int64, reason string) error {
	salt, salted := r.salt, r.version == 2
	if r.version == 0 {
		salt, salted = r.saltField()
	}
	var found *claim                               // the first sealed COMMIT or END after off that claims a sync past it
	var chained *claim                             // version 0: the same on the chains from fixed headers, unsealed
	sawV2 := false                                 // version 0: a version 2 fragment follows off
	var v1Start int64 = -1                         // version 0 or 1: the first intact version 1 record start after off
	zeros := isZero(r.block[off-r.blockOff : r.n]) // so far, only zeros from off on
	if r.version == 0 && off == 0 {
		// The first fragment is bad: in a version 2 log that is the LOG
		// fragment, whose fixed size puts a header the writer wrote at
		// offset logSize. Its chain is not counted as sign of version 2:
		// in a version 1 log it starts in payload bytes.
		r.chain(logSize, func(c claim) {
			if chained == nil && c.synced > off {
				chained = &c
			}
		})
	}
	for p := int(off-r.blockOff) + 1; ; p = 0 {
		if salted {
			found = r.sealedClaim(p, off, salt)
		}
		if r.version != 2 && v1Start < 0 {
			v1Start = r.v1RecordStart(p)
		}
		if r.version == 0 && p == 0 {
			r.chain(0, func(c claim) {
				sawV2 = true
				if chained == nil && c.off > off && c.synced > off {
					chained = &c
				}
			})
		}
		if found != nil || chained != nil || r.version == 1 && v1Start >= 0 {
			break // decided: nothing further can change the verdict
		}
		if r.last {
			break
		}
		if err := r.nextBlock(); err != nil {
			return err
		}
		zeros = zeros && isZero(r.block[:r.n])
	}
	if found == nil {
		found = chained
	}
	switch {
	case found != nil:
		return base.CorruptionErrorf(r.file, off, "%s, and the %s at offset %d records the log as synced up to offset %d",
			reason, typeName(found.typ), found.off, found.synced)
	case r.version != 2 && !sawV2 && v1Start >= 0:
		return base.CorruptionErrorf(r.file, off, "%s, and an intact record starts at offset %d", reason, v1Start)
	}
	// Zeros from off to the end of the file cut nothing from it: they are
	// what a mapped log (NewMappedWriter) holds past its last group
	// until it is closed, or pages a power loss never wrote.
	r.torn, r.cut = true, !zeros
	return io.EOF
}

// isZero reports whether b holds only zeros.
func isZero(b []byte) bool { return bytes.Equal(b, zeroBlock[:len(b)]) }

var zeroBlock [blockSize]byte

// saltField returns the salt field of a damaged LOG fragment, and whether
// block 0 is long enough to hold one. Block 0 must be the current block.
func (r *Reader) saltField() (uint64, bool) {
	if r.n < logSize {
		return 0, false
	}
	return binary.LittleEndian.Uint64(r.block[headerSize+4:]), true
}

// sealedClaim returns the first COMMIT or END at block offset p or after in
// the current block whose checksum and seal (under salt) match and that
// records a synced offset greater than off, or nil.
func (r *Reader) sealedClaim(p int, off int64, salt uint64) *claim {
	b := r.block[:r.n]
	// Only offsets whose length and type bytes read a COMMIT's or an END's
	// are candidates; bytes.Index finds them fast.
	next := func(tag []byte, from int) int {
		if from+headerSize > len(b) {
			return -1
		}
		if i := bytes.Index(b[from+4:], tag); i >= 0 {
			return from + i
		}
		return -1
	}
	c, e := next(commitTag[:], p), next(endTag[:], p)
	for c >= 0 || e >= 0 {
		q := c
		if q < 0 || e >= 0 && e < q {
			q = e
		}
		if typ, payload, bad := parse(b, q); bad == "" {
			f := fragment{off: r.blockOff + int64(q), typ: typ, payload: payload}
			if synced, _, _ := parseCommit(typ, payload); synced > off && sealed(salt, f) {
				return &claim{off: f.off, typ: typ, synced: synced}
			}
		}
		if q == c {
			c = next(commitTag[:], q+1)
		} else {
			e = next(endTag[:], q+1)
		}
	}
	return nil
}

// commitTag and endTag are the length and type bytes (header bytes 4 to 6)
// of a COMMIT and of an END.
var (
	commitTag = [3]byte{commitSize - headerSize, 0, typeCommit}
	endTag    = [3]byte{endSize - headerSize, 0, typeEnd}
)

// chain follows the chain of intact fragments from block offset p of the
// current block, calls note for each version 2 fragment on it (with its
// synced offset, if it is a COMMIT or END, else -1), and stops at the first
// bad fragment or the end of the block.
func (r *Reader) chain(p int, note func(claim)) {
	for p < r.n && blockSize-p >= commitSize {
		typ, payload, bad := parse(r.block[:r.n], p)
		if bad != "" {
			return
		}
		if typ >= typeLog && typ <= typeLast {
			c := claim{off: r.blockOff + int64(p), typ: typ, synced: -1}
			if synced, _, ok := parseCommit(typ, payload); ok {
				c.synced = synced
			}
			note(c)
		}
		p += headerSize + len(payload)
	}
}

// v1RecordStart returns the file offset of the first intact version 1 FULL
// or FIRST fragment at block offset p or after in the current block, or -1.
func (r *Reader) v1RecordStart(p int) int64 {
	for ; p+headerSize <= r.n; p++ {
		if t := r.block[p+6]; t != typeFull1 && t != typeFirst1 {
			continue
		}
		if _, _, bad := parse(r.block[:r.n], p); bad == "" {
			return r.blockOff + int64(p)
		}
	}
	return -1
}

func typeName(t byte) string {
	switch t {
	case typeFull1:
		return "FULL1"
	case typeFirst1:
		return "FIRST1"
	case typeMiddle1:
		return "MIDDLE1"
	case typeLast1:
		return "LAST1"
	case typeLog:
		return "LOG"
	case typeCommit:
		return "COMMIT"
	case typeEnd:
		return "END"
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
