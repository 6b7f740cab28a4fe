package shale

// A Batch is the unit of atomic writes and the payload of one WAL record.
//
// Encoding (the bytes of a WAL record):
//
//	offset 0   uint64 little-endian: sequence number of the first entry
//	offset 8   uint32 little-endian: number of entries
//	offset 12  entries, each:
//	             1 byte kind (base.Kind: 0 delete, 1 set, 2 range delete)
//	             uvarint key length, key bytes
//	             set only: uvarint value length, value bytes
//	             range delete only: uvarint end length, end bytes (the
//	             entry deletes the keys in [key, end); key < end)
//
// Entry i is written at sequence number first+i. The header is filled in at
// commit time; until then it is zero.
//
// Kind 2 came with range deletions. A binary from before them refuses a WAL
// record holding one as corrupt ("unknown kind 2") rather than misread it,
// and the store cannot be opened with it until the WAL has been flushed
// (and then the tables holding tombstones refuse it by their format
// version, see internal/sstable/writer.go).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/shale-db/shale/internal/base"
)

const batchHeaderLen = 12

// Batch collects writes to apply atomically with DB.Apply. A Batch is not
// safe for concurrent use; it may be reused after Reset.
type Batch struct {
	data  []byte
	count uint32
	// longest is the largest len(key)+len(value) of an entry (a range
	// deletion's start and end), which the DB checks before committing.
	longest int
	// err is the first write the batch refused (a reversed DeleteRange);
	// Apply returns it and writes nothing.
	err error
}

// NewBatch returns an empty batch. db may be nil; the batch is not tied to
// the DB that made it.
func (db *DB) NewBatch() *Batch { return &Batch{} }

// grow readies the batch for an entry of key and value (or end): it notes
// the entry's length, writes the header of an empty batch and makes room
// for the entry, allocating at most once, and not at all while the buffer
// (kept by Reset) is large enough.
func (b *Batch) grow(key, value []byte) {
	b.longest = max(b.longest, len(key)+len(value))
	n := entrySize(key, value)
	if len(b.data) == 0 {
		if cap(b.data) < batchHeaderLen+n {
			b.data = make([]byte, 0, max(64, batchHeaderLen+n))
		}
		b.data = b.data[:batchHeaderLen]
		clear(b.data)
	}
	b.data = slices.Grow(b.data, n)
}

// entrySize bounds the encoded size of an entry: its kind, the uvarint
// lengths of its two byte strings (key, and value or end) and their bytes.
func entrySize(key, value []byte) int {
	return 1 + 2*binary.MaxVarintLen64 + len(key) + len(value)
}

// Put records that key is set to value. Both are copied.
func (b *Batch) Put(key, value []byte) {
	b.grow(key, value)
	b.data = append(b.data, byte(base.KindSet))
	b.data = binary.AppendUvarint(b.data, uint64(len(key)))
	b.data = append(b.data, key...)
	b.data = binary.AppendUvarint(b.data, uint64(len(value)))
	b.data = append(b.data, value...)
	b.count++
}

// Delete records that key is deleted. It is copied.
func (b *Batch) Delete(key []byte) {
	b.grow(key, nil)
	b.data = append(b.data, byte(base.KindDelete))
	b.data = binary.AppendUvarint(b.data, uint64(len(key)))
	b.data = append(b.data, key...)
	b.count++
}

// DeleteRange records that every key in [start, end) is deleted, ordered
// with the batch's other writes: a Put before it in the batch is deleted, a
// Put after it is not. Both bounds are copied. An empty range (start ==
// end) records nothing.
//
// A reversed range (start > end) is a mistake, not an empty range: the
// batch keeps an error naming both keys (matching ErrInvalidRange), Err
// returns it, and Apply returns it and writes nothing of the batch, until
// Reset. DeleteRange itself returns nothing, as the batch's other writes
// do, so that a batch is built without checking each call.
func (b *Batch) DeleteRange(start, end []byte) {
	switch c := bytes.Compare(start, end); {
	case c > 0:
		if b.err == nil {
			b.err = reversedRangeError(start, end)
		}
		return
	case c == 0:
		return
	}
	b.grow(start, end)
	b.data = append(b.data, byte(base.KindRangeDelete))
	b.data = binary.AppendUvarint(b.data, uint64(len(start)))
	b.data = append(b.data, start...)
	b.data = binary.AppendUvarint(b.data, uint64(len(end)))
	b.data = append(b.data, end...)
	b.count++
}

// Count returns the number of writes in the batch.
func (b *Batch) Count() int { return int(b.count) }

// Len returns the size of the batch's encoding in bytes.
func (b *Batch) Len() int { return max(len(b.data), batchHeaderLen) }

// Err returns the first write the batch refused (a DeleteRange with start
// > end), which Apply will return, or nil.
func (b *Batch) Err() error { return b.err }

// Reset empties the batch, keeping its buffer, and forgets its error.
func (b *Batch) Reset() {
	b.data = b.data[:0]
	b.count = 0
	b.longest = 0
	b.err = nil
}

// reversedRangeError is the error of a range deletion whose start is past
// its end.
func reversedRangeError(start, end []byte) error {
	return fmt.Errorf("%w: DeleteRange start %s is after end %s (the range is [start, end); nothing was written)",
		ErrInvalidRange, FormatKey(start), FormatKey(end))
}

func (b *Batch) empty() bool { return b.count == 0 }

// setSeqNum stamps the header with the first entry's sequence number.
func (b *Batch) setSeqNum(seq base.SeqNum) {
	binary.LittleEndian.PutUint64(b.data[0:], uint64(seq))
	binary.LittleEndian.PutUint32(b.data[8:], b.count)
}

// batchEntry is one decoded write. Key and Value alias the batch bytes. For
// a range deletion, Key is the start and Value the end of the range; this is
// also how memtable.Add takes one.
type batchEntry struct {
	Seq   base.SeqNum
	Kind  base.Kind
	Key   []byte
	Value []byte
}

// decodeBatch checks a WAL record and calls fn for each entry in order.
// file and offset locate the record in errors, which match ErrCorruption.
// Nothing is passed to fn unless the whole record decodes: a batch is applied
// entirely or not at all. So the record is walked twice, once to check it
// and once to apply it, which allocates nothing.
func decodeBatch(data []byte, file string, offset int64, fn func(batchEntry)) (first base.SeqNum, count int, err error) {
	corrupt := func(format string, args ...any) error {
		return base.CorruptionErrorf(file, offset, "batch: %s", fmt.Sprintf(format, args...))
	}
	if len(data) < batchHeaderLen {
		return 0, 0, corrupt("record of %d bytes is shorter than a batch header", len(data))
	}
	first = base.SeqNum(binary.LittleEndian.Uint64(data))
	n := binary.LittleEndian.Uint32(data[8:])
	if first == 0 || uint64(first)+uint64(n) > uint64(base.MaxSeqNum) {
		return 0, 0, corrupt("sequence number %d out of range", first)
	}
	if err := walkBatch(data, corrupt, nil); err != nil {
		return 0, 0, err
	}
	walkBatch(data, corrupt, fn)
	return first, int(n), nil
}

// forEach calls fn for each entry of a batch built by Put, Delete and
// DeleteRange (and stamped by setSeqNum), which is well formed by
// construction.
func (b *Batch) forEach(fn func(batchEntry)) {
	walkBatch(b.data, func(string, ...any) error { return nil }, fn)
}

// walkBatch parses the entries of a batch whose header is sane, calling fn
// (if not nil) for each, and returns the first inconsistency as corrupt
// describes it.
func walkBatch(data []byte, corrupt func(string, ...any) error, fn func(batchEntry)) error {
	first := base.SeqNum(binary.LittleEndian.Uint64(data))
	n := binary.LittleEndian.Uint32(data[8:])
	rest := data[batchHeaderLen:]
	var i uint32
	readBytes := func(what string) ([]byte, error) {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return nil, corrupt("entry %d: bad %s length", i, what)
		}
		v := rest[k : k+int(l) : k+int(l)]
		rest = rest[k+int(l):]
		return v, nil
	}
	for ; i < n; i++ {
		if len(rest) == 0 {
			return corrupt("entry %d of %d missing", i, n)
		}
		e := batchEntry{Seq: first + base.SeqNum(i), Kind: base.Kind(rest[0])}
		rest = rest[1:]
		if e.Kind != base.KindSet && e.Kind != base.KindDelete && e.Kind != base.KindRangeDelete {
			return corrupt("entry %d: unknown kind %d", i, e.Kind)
		}
		var err error
		if e.Key, err = readBytes("key"); err != nil {
			return err
		}
		switch e.Kind {
		case base.KindSet:
			if e.Value, err = readBytes("value"); err != nil {
				return err
			}
		case base.KindRangeDelete:
			if e.Value, err = readBytes("range end"); err != nil {
				return err
			}
			if bytes.Compare(e.Key, e.Value) >= 0 {
				return corrupt("entry %d: empty deleted range [%s, %s)", i, base.FormatKey(e.Key), base.FormatKey(e.Value))
			}
		}
		if fn != nil {
			fn(e)
		}
	}
	if len(rest) != 0 {
		return corrupt("%d bytes after the last entry", len(rest))
	}
	return nil
}
