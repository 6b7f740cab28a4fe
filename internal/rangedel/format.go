package rangedel

// The encoding of a fragmented set of tombstones: the contents of an
// SSTable's range-deletion block (see internal/sstable/writer.go, which
// stores it in a checksummed block like any other).
//
//	byte 0      format version: 1
//	uvarint     n, the number of spans
//	n spans, in key order, each:
//	  uvarint   length of Start, then Start's bytes
//	  uvarint   length of End, then End's bytes
//	  uvarint   m >= 1, the number of sequence numbers
//	  m uvarint sequence numbers, strictly decreasing, each in [1, 2^56-1]
//
// A decoder refuses anything else: another version, Start >= End, a span
// that starts before the previous one ends, trailing bytes. So a set that
// decodes is fragmented as Spans requires (adjacent spans with equal
// sequence numbers are allowed: they cover what their join covers).

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/shale-db/shale/internal/base"
)

// FormatVersion is the version of the encoding this package writes and
// reads.
const FormatVersion = 1

// Encode appends the encoding of s to dst.
func (s Spans) Encode(dst []byte) []byte {
	dst = append(dst, FormatVersion)
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	for _, sp := range s {
		dst = binary.AppendUvarint(dst, uint64(len(sp.Start)))
		dst = append(dst, sp.Start...)
		dst = binary.AppendUvarint(dst, uint64(len(sp.End)))
		dst = append(dst, sp.End...)
		dst = binary.AppendUvarint(dst, uint64(len(sp.Seqs)))
		for _, t := range sp.Seqs {
			dst = binary.AppendUvarint(dst, uint64(t))
		}
	}
	return dst
}

// Decode decodes an encoded set. The spans' keys alias b. The error
// describes the first inconsistency; the caller, who knows the file, turns
// it into a corruption error.
func Decode(b []byte) (Spans, error) {
	if len(b) == 0 {
		return nil, errors.New("empty range-deletion block")
	}
	if b[0] != FormatVersion {
		return nil, fmt.Errorf("range-deletion block format version %d, not %d", b[0], FormatVersion)
	}
	d := decoder{b: b[1:]}
	n := d.uvarint()
	// Each span takes at least 5 bytes: a bound on n before allocating.
	if d.err == nil && n > uint64(len(d.b))/5 {
		return nil, fmt.Errorf("range-deletion block claims %d spans in %d bytes", n, len(d.b))
	}
	var out Spans
	for i := uint64(0); i < n && d.err == nil; i++ {
		sp := Span{Start: d.bytes(), End: d.bytes()}
		m := d.uvarint()
		if d.err != nil {
			break
		}
		if m == 0 || m > uint64(len(d.b)) {
			return nil, fmt.Errorf("span %d: %d sequence numbers in %d bytes", i, m, len(d.b))
		}
		sp.Seqs = make([]base.SeqNum, m)
		for j := range sp.Seqs {
			t := base.SeqNum(d.uvarint())
			if d.err == nil && (t == 0 || t > base.MaxSeqNum || j > 0 && t >= sp.Seqs[j-1]) {
				return nil, fmt.Errorf("span %d: sequence number %d out of order or range", i, t)
			}
			sp.Seqs[j] = t
		}
		if d.err != nil {
			break
		}
		if base.CompareUserKeys(sp.Start, sp.End) >= 0 {
			return nil, fmt.Errorf("span %d: empty range %s", i, sp)
		}
		if len(out) > 0 && base.CompareUserKeys(out[len(out)-1].End, sp.Start) > 0 {
			return nil, fmt.Errorf("span %d: %s overlaps the span before it", i, sp)
		}
		out = append(out, sp)
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d bytes after the last span", len(d.b))
	}
	return out, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New("range-deletion block: bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	l := d.uvarint()
	if d.err != nil {
		return nil
	}
	if l > uint64(len(d.b)) {
		d.err = fmt.Errorf("range-deletion block: key of %d bytes, %d left", l, len(d.b))
		return nil
	}
	v := d.b[:l:l]
	d.b = d.b[l:]
	return v
}
