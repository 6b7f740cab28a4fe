// Package wal frames opaque records in an append-only log file so that a
// crash in the middle of a write is recognised and cut off cleanly on
// recovery, while damage anywhere else is reported. The DB writes its batches
// to such a log (the write-ahead log) and its version edits to another (the
// MANIFEST); to this package both are just sequences of []byte.
//
// # Format
//
// A log is a sequence of 32 KiB (32768-byte) blocks; the last block may be
// short. A record is stored as one or more fragments, and a fragment never
// crosses a block boundary. A fragment is a 7-byte header and a payload:
//
//	offset  size    field
//	0       4       checksum, little-endian: the low 32 bits of xxhash64 over
//	                bytes 4 to 7+length of the fragment (length, type, payload)
//	4       2       length of the payload in bytes, little-endian
//	6       1       type: 1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST
//	7       length  payload
//
// A record that fits in what is left of the current block is one FULL
// fragment; an empty record is a FULL fragment of length 0. A longer record
// is a FIRST fragment that fills the current block, a MIDDLE fragment for
// each whole block after it, and a LAST fragment for the rest; the FIRST
// fragment's payload is empty when exactly 7 bytes were left. When fewer than
// 7 bytes are left in a block, the writer fills them with zeros and the next
// fragment starts the next block. So every block starts with a fragment
// header, and the largest payload a fragment can carry is 32761 bytes.
//
// For example, records of 100 and 40000 bytes lay out as
//
//	offset  0      FULL    header + 100 bytes
//	offset  107    FIRST   header + 32654 bytes (the rest of block 0)
//	offset  32768  LAST    header + 7346 bytes
//
// and the log is 40121 bytes long.
//
// The checksum covers the length and the type as well as the payload, so a
// damaged header cannot pass as another intact fragment. It is truncated to
// 32 bits: a damaged fragment goes unnoticed with probability 2^-32, the same
// as with LevelDB's CRC-32C, at half the space of the full hash. An all-zero
// header (what a zero-filled tail reads as) never passes: type 0 is never
// written and its checksum does not match.
//
// # Versions
//
// Types 1 to 4 are version 1 of the format. The 7-byte header and its
// checksum rule are fixed for good; a later version adds new type values
// rather than a file header, so that every fragment stays self-describing. A
// reader that meets an intact fragment of a type it does not know (one
// written by a newer version, say) reports corruption rather than skip what
// it cannot read.
//
// Recovery, how a reader tells a torn tail from damage in the middle of a
// log, is described on Reader.
package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cespare/xxhash/v2"
	"github.com/shale-db/shale/vfs"
)

const (
	blockSize  = 32 << 10
	headerSize = 7
)

// Fragment types. 0 is never written.
const (
	typeFull   = 1
	typeFirst  = 2
	typeMiddle = 3
	typeLast   = 4
)

// checksum returns the checksum of a fragment given its bytes from offset 4
// (length, type and payload).
func checksum(b []byte) uint32 { return uint32(xxhash.Sum64(b)) }

// maxRetainedBuf caps the buffer a Writer keeps between records, so that one
// huge record does not pin its size in memory for the life of the log.
const maxRetainedBuf = 1 << 20

var errClosed = errors.New("wal: writer is closed")

// Writer appends records to a log. It is not safe for concurrent use: the
// DB's commit leader is its only user at a time.
//
// Each record, with any padding before it, goes to the file in one f.Write
// call, so a group commit costs one write and one Sync. After a Write or Sync
// of the file fails, the Writer refuses all further writes and returns that
// error: the file may end in part of a record, and appending more after it
// would turn a torn tail into corruption in the middle of the log.
type Writer struct {
	f    vfs.File
	buf  []byte // the record being framed; reused
	size int64  // bytes written to f
	err  error  // sticky
}

// NewWriter returns a Writer that appends to f, which must be empty: block
// boundaries are counted from offset 0.
func NewWriter(f vfs.File) *Writer { return &Writer{f: f} }

// WriteRecord appends p as one record and returns the offset at which the
// record starts (the offset Reader.Offset reports for it). The record is
// passed to the file but is not durable until Sync returns.
func (w *Writer) WriteRecord(p []byte) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	b := w.buf[:0]
	var start int64
	for first := true; ; first = false {
		pos := int((w.size + int64(len(b))) % blockSize)
		if blockSize-pos < headerSize {
			b = append(b, make([]byte, blockSize-pos)...)
			pos = 0
		}
		if first {
			start = w.size + int64(len(b))
		}
		n := min(len(p), blockSize-pos-headerSize)
		last := n == len(p)
		h := len(b)
		b = append(b, 0, 0, 0, 0, byte(n), byte(n>>8), fragmentType(first, last))
		b = append(b, p[:n]...)
		binary.LittleEndian.PutUint32(b[h:], checksum(b[h+4:]))
		p = p[n:]
		if last {
			break
		}
	}
	n, err := w.f.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if cap(b) <= maxRetainedBuf {
		w.buf = b
	}
	if err != nil {
		w.err = fmt.Errorf("wal: write failed, log unusable: %w", err)
		return 0, w.err
	}
	w.size += int64(len(b))
	return start, nil
}

func fragmentType(first, last bool) byte {
	switch {
	case first && last:
		return typeFull
	case first:
		return typeFirst
	case last:
		return typeLast
	}
	return typeMiddle
}

// Sync makes every record written so far durable.
func (w *Writer) Sync() error {
	if w.err != nil {
		return w.err
	}
	if err := w.f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages;
		// what the file holds is unknown, so nothing more may follow.
		w.err = fmt.Errorf("wal: sync failed, log unusable: %w", err)
		return w.err
	}
	return nil
}

// Size returns the log's length: the bytes of every record written
// successfully, with their padding.
func (w *Writer) Size() int64 { return w.size }

// Close closes the file without syncing it: call Sync first to make the
// records durable. (A log being abandoned, or one written with NoSync, should
// not pay for an fsync.) Close returns the file's Close error; afterwards
// every method returns an error.
func (w *Writer) Close() error {
	if w.err == errClosed {
		return errClosed
	}
	w.err = errClosed
	return w.f.Close()
}
