package raftstore

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// FuzzDecodeLog feeds arbitrary bytes to decodeLog, the decoder of a log
// entry's value. A value it accepts must encode back to the same bytes:
// the format has one encoding per entry, so a value that decodes to an
// entry is that entry's value, and nothing else is taken for one.
//
//	go test -run '^$' -fuzz '^FuzzDecodeLog$' .
func FuzzDecodeLog(f *testing.F) {
	for _, l := range []raft.Log{
		{},
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("abc")},
		{Index: 1 << 40, Term: 7, Type: raft.LogConfiguration, Data: []byte{0, 1, 2}, Extensions: []byte("ext"), AppendedAt: time.Unix(1700000000, 123456789)},
		{Index: 3, Term: 2, Type: raft.LogNoop, AppendedAt: time.Unix(-5, 999999999)},
	} {
		f.Add(encodeLog(&l))
	}
	// The zero time written as present: an instant that decodes to the
	// zero time.Time, which encodes as absent.
	zero := encodeLog(&raft.Log{Index: 2})
	zero = append(zero[:len(zero)-1], 1)
	zero = binary.BigEndian.AppendUint64(zero, uint64(time.Time{}.Unix()))
	f.Add(binary.BigEndian.AppendUint32(zero, 0))
	f.Fuzz(func(t *testing.T, v []byte) {
		var l raft.Log
		if err := decodeLog(v, &l); err != nil {
			return
		}
		if again := encodeLog(&l); !bytes.Equal(again, v) {
			t.Fatalf("value %x decodes to an entry that encodes as %x", v, again)
		}
	})
}
