// Package rangedel holds range tombstones: a write at sequence number s that
// deletes every user key in [Start, End), that is every version of those
// keys written before s.
//
// Tombstones may overlap. Fragment cuts a set of them into spans that do
// not: each span is a key range and the sequence numbers of every tombstone
// that covers all of it. Within a span the question "is the version of key
// k written at seq p deleted for a read at seq r?" is one comparison:
// whether some tombstone seq t in the span has p < t <= r. Memtables,
// tables, the read path, iterators and compactions all keep tombstones in
// this fragmented form.
//
// Fragments are cut only where a tombstone starts or ends, so cutting a
// fragmented set again (after merging it with another, or clipping it at a
// table's bounds, see Clip) never changes what it covers.
package rangedel

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/shale-db/shale/internal/base"
)

// Tombstone deletes the user keys in [Start, End) written before Seq.
type Tombstone struct {
	Start, End []byte
	Seq        base.SeqNum
}

// Span is a fragment: the key range [Start, End), which is never empty, and
// the sequence numbers of the tombstones that cover it, newest first, with
// no repeats.
type Span struct {
	Start, End []byte
	Seqs       []base.SeqNum
}

// Contains reports whether key is in [s.Start, s.End).
func (s *Span) Contains(key []byte) bool {
	return bytes.Compare(s.Start, key) <= 0 && bytes.Compare(key, s.End) < 0
}

// CoverSeq returns the newest of the span's sequence numbers that a read at
// readSeq sees, or 0 if it sees none.
func (s *Span) CoverSeq(readSeq base.SeqNum) base.SeqNum {
	for _, t := range s.Seqs {
		if t <= readSeq {
			return t
		}
	}
	return 0
}

// String formats the span as "[a,c)#9,4".
func (s Span) String() string {
	seqs := make([]string, len(s.Seqs))
	for i, t := range s.Seqs {
		seqs[i] = fmt.Sprint(t)
	}
	return fmt.Sprintf("[%s,%s)#%s", base.FormatKey(s.Start), base.FormatKey(s.End), strings.Join(seqs, ","))
}

// Spans is a fragmented set of tombstones: spans sorted by Start that do
// not overlap. Adjacent spans with the same sequence numbers are joined.
// A nil Spans holds no tombstone.
type Spans []Span

// Fragment cuts tombstones into spans. Empty tombstones (Start >= End) are
// dropped. The spans share key bytes with ts.
func Fragment(ts []Tombstone) Spans {
	var bounds [][]byte
	for _, t := range ts {
		if bytes.Compare(t.Start, t.End) < 0 {
			bounds = append(bounds, t.Start, t.End)
		}
	}
	if len(bounds) == 0 {
		return nil
	}
	slices.SortFunc(bounds, bytes.Compare)
	bounds = slices.CompactFunc(bounds, bytes.Equal)
	// Each fragment [bounds[i], bounds[i+1]) is covered by exactly the
	// tombstones that start at or before bounds[i] and end after it.
	seqs := make([][]base.SeqNum, len(bounds)-1)
	for _, t := range ts {
		if bytes.Compare(t.Start, t.End) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(bounds, t.Start, bytes.Compare)
		for ; bytes.Compare(bounds[i], t.End) < 0; i++ {
			seqs[i] = append(seqs[i], t.Seq)
		}
	}
	var out Spans
	for i, ss := range seqs {
		if len(ss) == 0 {
			continue
		}
		slices.SortFunc(ss, func(a, b base.SeqNum) int { return -cmpSeq(a, b) })
		ss = slices.Compact(ss)
		if n := len(out); n > 0 && bytes.Equal(out[n-1].End, bounds[i]) && slices.Equal(out[n-1].Seqs, ss) {
			out[n-1].End = bounds[i+1]
			continue
		}
		out = append(out, Span{Start: bounds[i], End: bounds[i+1], Seqs: ss})
	}
	return out
}

func cmpSeq(a, b base.SeqNum) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Merge fragments the union of several fragmented sets.
func Merge(sets ...Spans) Spans {
	var ts []Tombstone
	for _, s := range sets {
		ts = s.AppendTombstones(ts)
	}
	return Fragment(ts)
}

// AppendTombstones appends to dst one tombstone per span and sequence
// number. Fragmenting them again gives s back.
func (s Spans) AppendTombstones(dst []Tombstone) []Tombstone {
	for _, sp := range s {
		for _, t := range sp.Seqs {
			dst = append(dst, Tombstone{Start: sp.Start, End: sp.End, Seq: t})
		}
	}
	return dst
}

// Union returns the key ranges that a or b cover, as sorted spans that
// neither overlap nor touch, without sequence numbers: a set of ranges,
// for where only whether a key is covered matters (NewFilterIter's newer
// tombstones). It takes time linear in len(a)+len(b).
func Union(a, b Spans) Spans {
	out := make(Spans, 0, len(a)+len(b))
	add := func(sp Span) {
		if n := len(out); n > 0 && bytes.Compare(sp.Start, out[n-1].End) <= 0 {
			if bytes.Compare(sp.End, out[n-1].End) > 0 {
				out[n-1].End = sp.End
			}
			return
		}
		out = append(out, Span{Start: sp.Start, End: sp.End})
	}
	for len(a) > 0 || len(b) > 0 {
		if len(b) == 0 || len(a) > 0 && bytes.Compare(a[0].Start, b[0].Start) <= 0 {
			add(a[0])
			a = a[1:]
		} else {
			add(b[0])
			b = b[1:]
		}
	}
	return out
}

// Find returns the index of the span that holds key, or -1.
func (s Spans) Find(key []byte) int {
	i := sort.Search(len(s), func(i int) bool { return bytes.Compare(s[i].End, key) > 0 })
	if i < len(s) && bytes.Compare(s[i].Start, key) <= 0 {
		return i
	}
	return -1
}

// CoverSeq returns the newest sequence number, at most readSeq, of a
// tombstone covering key, or 0 when no tombstone a read at readSeq sees
// covers it. A version of key written at seq p is deleted for that read
// exactly when p < CoverSeq.
func (s Spans) CoverSeq(key []byte, readSeq base.SeqNum) base.SeqNum {
	if i := s.Find(key); i >= 0 {
		return s[i].CoverSeq(readSeq)
	}
	return 0
}

// Covers reports whether the version of key written at seq is deleted for a
// read at readSeq.
func (s Spans) Covers(key []byte, seq, readSeq base.SeqNum) bool {
	return seq < s.CoverSeq(key, readSeq)
}

// Visible returns the spans as a read at readSeq sees them: without the
// sequence numbers above readSeq, and without the spans left with none.
func (s Spans) Visible(readSeq base.SeqNum) Spans {
	var out Spans
	for _, sp := range s {
		i := slices.IndexFunc(sp.Seqs, func(t base.SeqNum) bool { return t <= readSeq })
		if i >= 0 {
			out = append(out, Span{Start: sp.Start, End: sp.End, Seqs: sp.Seqs[i:]})
		}
	}
	return out
}

// Clip returns the parts of the spans inside [lo, hi); a nil bound is no
// bound. This is how a table's tombstones are truncated at its bounds.
func (s Spans) Clip(lo, hi []byte) Spans {
	var out Spans
	for _, sp := range s {
		if lo != nil && bytes.Compare(sp.End, lo) <= 0 || hi != nil && bytes.Compare(sp.Start, hi) >= 0 {
			continue
		}
		if lo != nil && bytes.Compare(sp.Start, lo) < 0 {
			sp.Start = lo
		}
		if hi != nil && bytes.Compare(sp.End, hi) > 0 {
			sp.End = hi
		}
		out = append(out, sp)
	}
	return out
}

// Clone returns a copy of s that shares no memory with it.
func (s Spans) Clone() Spans {
	if s == nil {
		return nil
	}
	out := make(Spans, len(s))
	for i, sp := range s {
		out[i] = Span{Start: bytes.Clone(sp.Start), End: bytes.Clone(sp.End), Seqs: slices.Clone(sp.Seqs)}
	}
	return out
}

// SeqRange returns the smallest and largest sequence numbers of the spans
// (0, 0 when there are none).
func (s Spans) SeqRange() (smallest, largest base.SeqNum) {
	for i, sp := range s {
		lo, hi := sp.Seqs[len(sp.Seqs)-1], sp.Seqs[0]
		if i == 0 || lo < smallest {
			smallest = lo
		}
		largest = max(largest, hi)
	}
	return smallest, largest
}

// Count returns the number of (span, sequence number) pairs: the
// tombstones the fragmented set is made of.
func (s Spans) Count() int {
	n := 0
	for _, sp := range s {
		n += len(sp.Seqs)
	}
	return n
}

// String lists the spans, space-separated.
func (s Spans) String() string {
	parts := make([]string, len(s))
	for i, sp := range s {
		parts[i] = sp.String()
	}
	return strings.Join(parts, " ")
}
