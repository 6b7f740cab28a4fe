// Package base holds the vocabulary shared by every layer of shale: internal
// keys, their ordering, the internal iterator interface, the filter policy
// interface and the corruption error.
//
// An internal key is a user key plus an 8-byte trailer. The trailer packs a
// 56-bit sequence number and an 8-bit kind as seqnum<<8 | kind. Internal keys
// sort by user key ascending (bytes.Compare), then by trailer descending, so
// the newest version of a user key comes first. Encoded, an internal key is
// the user key followed by the trailer as 8 little-endian bytes.
//
// shale has one key order, bytes.Compare on user keys; there is no pluggable
// comparator. Every format and every test relies on that order.
package base

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// SeqNum is a sequence number. Every write gets the next one; a read at
// sequence number s sees exactly the entries whose sequence number is <= s.
type SeqNum uint64

// MaxSeqNum is the largest sequence number a trailer can hold.
const MaxSeqNum SeqNum = 1<<56 - 1

// Kind says what an internal key records.
type Kind uint8

// The kinds. Their numeric values are part of the on-disk formats.
const (
	// KindDelete is a tombstone: the user key was deleted at this seqnum.
	KindDelete Kind = 0
	// KindSet records a value for the user key.
	KindSet Kind = 1
	// KindMax is the largest kind of a point entry, the only kinds data
	// blocks and memtable entries hold. A search key made with KindMax
	// sorts before every point entry with the same user key and sequence
	// number.
	KindMax Kind = KindSet
	// KindRangeDelete is a range tombstone, which deletes the user keys in
	// [start, end) written before its seqnum (see internal/rangedel). It is
	// a kind in batches, and in the trailer of a table's bounds, never in a
	// data block: tables keep their tombstones in a block of their own.
	KindRangeDelete Kind = 2
)

// RangeDelSentinel returns the internal key that stands for the exclusive
// end of a range tombstone as a table's largest key: it sorts before every
// entry whose user key is end, and a table whose largest key it is holds
// nothing at end itself.
func RangeDelSentinel(end []byte) InternalKey {
	return MakeInternalKey(end, MaxSeqNum, KindRangeDelete)
}

// IsExclusiveSentinel reports whether k is a RangeDelSentinel.
func (k InternalKey) IsExclusiveSentinel() bool {
	return k.Trailer == MakeTrailer(MaxSeqNum, KindRangeDelete)
}

// String returns "SET", "DEL" or "RANGEDEL" (or "INVALID(n)").
func (k Kind) String() string {
	switch k {
	case KindDelete:
		return "DEL"
	case KindSet:
		return "SET"
	case KindRangeDelete:
		return "RANGEDEL"
	}
	return "INVALID(" + strconv.Itoa(int(k)) + ")"
}

// TrailerLen is the size in bytes of an encoded trailer.
const TrailerLen = 8

// InternalKey is a user key with its trailer (seqnum<<8 | kind).
type InternalKey struct {
	UserKey []byte
	Trailer uint64
}

// MakeTrailer packs a sequence number and a kind.
func MakeTrailer(seq SeqNum, kind Kind) uint64 { return uint64(seq)<<8 | uint64(kind) }

// MakeInternalKey returns the internal key for ukey written at seq with kind.
func MakeInternalKey(ukey []byte, seq SeqNum, kind Kind) InternalKey {
	return InternalKey{UserKey: ukey, Trailer: MakeTrailer(seq, kind)}
}

// MakeSearchKey returns the smallest internal key for ukey that is visible at
// seq: seeking to it lands on the newest version of ukey with seqnum <= seq.
func MakeSearchKey(ukey []byte, seq SeqNum) InternalKey {
	return MakeInternalKey(ukey, seq, KindMax)
}

// SeqNum returns the key's sequence number.
func (k InternalKey) SeqNum() SeqNum { return SeqNum(k.Trailer >> 8) }

// Kind returns the key's kind.
func (k InternalKey) Kind() Kind { return Kind(k.Trailer & 0xff) }

// Visible reports whether the key is visible to a read at seq.
func (k InternalKey) Visible(seq SeqNum) bool { return k.SeqNum() <= seq }

// EncodedLen is the length of the key's encoding.
func (k InternalKey) EncodedLen() int { return len(k.UserKey) + TrailerLen }

// Append appends the key's encoding to dst.
func (k InternalKey) Append(dst []byte) []byte {
	dst = append(dst, k.UserKey...)
	return binary.LittleEndian.AppendUint64(dst, k.Trailer)
}

// Clone returns a copy of k that shares no memory with it.
func (k InternalKey) Clone() InternalKey {
	return InternalKey{UserKey: bytes.Clone(k.UserKey), Trailer: k.Trailer}
}

// String formats the key as "ukey#seq,KIND", with the user key quoted when it
// is not plain printable ASCII.
func (k InternalKey) String() string {
	return fmt.Sprintf("%s#%d,%s", FormatKey(k.UserKey), k.SeqNum(), k.Kind())
}

// DecodeInternalKey decodes an encoded internal key. The returned user key
// aliases b. ok is false when b is too short to hold a trailer.
func DecodeInternalKey(b []byte) (k InternalKey, ok bool) {
	n := len(b) - TrailerLen
	if n < 0 {
		return InternalKey{}, false
	}
	return InternalKey{UserKey: b[:n:n], Trailer: binary.LittleEndian.Uint64(b[n:])}, true
}

// CompareUserKeys orders user keys: bytes.Compare.
func CompareUserKeys(a, b []byte) int { return bytes.Compare(a, b) }

// Compare orders internal keys: user key ascending, then trailer descending
// (newest first).
func Compare(a, b InternalKey) int {
	if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	switch {
	case a.Trailer > b.Trailer:
		return -1
	case a.Trailer < b.Trailer:
		return 1
	}
	return 0
}

// FormatKey renders a user key (or a value) for people, unambiguously:
// plain when it is non-empty printable ASCII without a space, quote,
// backslash, '#' or ',' (the separators of InternalKey.String); otherwise
// double-quoted, with \n, \r, \t, \", \\ and \xHH for every other byte that
// is not printable ASCII. shale.FormatKey exports it.
func FormatKey(b []byte) string {
	plain := len(b) > 0
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '#' || c == ',' {
			plain = false
			break
		}
	}
	if plain {
		return string(b)
	}
	var s strings.Builder
	s.WriteByte('"')
	for _, c := range b {
		switch {
		case c == '"' || c == '\\':
			s.WriteByte('\\')
			s.WriteByte(c)
		case c == '\n':
			s.WriteString(`\n`)
		case c == '\r':
			s.WriteString(`\r`)
		case c == '\t':
			s.WriteString(`\t`)
		case c >= 0x20 && c < 0x7f:
			s.WriteByte(c)
		default:
			fmt.Fprintf(&s, `\x%02x`, c)
		}
	}
	s.WriteByte('"')
	return s.String()
}
