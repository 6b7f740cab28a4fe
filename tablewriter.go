package shale

import (
	"bytes"
	"fmt"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/internal/sstable"
	"github.com/shale-db/shale/vfs"
)

// tableWriterSeq is the sequence number of every entry and range tombstone
// a TableWriter writes. Ingest accepts only tables whose entries all carry
// it, and gives them a sequence number of the store's when it copies them
// in.
const tableWriterSeq base.SeqNum = 1

// TableWriter writes one table outside any store, for Ingest: a table in
// the store's format, with the filter (the filter policy's choice for a
// table at the bottom level), prefix filter, range filter, block size and
// compression (the bottom level's) that a store opened with the same
// Options writes. A TableWriter is for one goroutine.
//
// Put and Delete take keys in strictly ascending order (bytes.Compare),
// each key at most once. A key out of order or repeated is refused with an
// error naming it and the key before it; the table is left as it was and
// the writer stays usable. DeleteRange takes ranges in any order, which
// may overlap; they delete what the store holds before the Ingest, never
// the table's own Puts and Deletes, whatever the order of the calls.
type TableWriter struct {
	path  string
	fs    vfs.FS
	w     *sstable.Writer
	tombs []rangedel.Tombstone
	last  []byte // the last key Put or Deleted, valid when entries > 0
	// entries counts the keys Put or Deleted.
	entries int
	closed  bool
}

// NewTableWriter creates the table file path (on Options.FS) and returns
// its writer. The file is complete once Close returns nil.
func NewTableWriter(path string, opts *Options) (*TableWriter, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	f, err := o.FS.Create(path)
	if err != nil {
		return nil, err
	}
	level := NumLevels - 1
	var policy = o.FilterPolicy.FilterFor(NewTable{Level: level})
	wopts := o.writerOptions(level, nil)
	if policy != nil {
		wopts.FilterPolicy = policy.policy()
	}
	return &TableWriter{path: path, fs: o.FS, w: sstable.NewWriter(f, wopts)}, nil
}

// Put adds key with value. key must sort after every key added before.
func (t *TableWriter) Put(key, value []byte) error {
	return t.add(key, value, base.KindSet)
}

// Delete adds a deletion of key: Ingest deletes the key from the store. key
// must sort after every key added before.
func (t *TableWriter) Delete(key []byte) error {
	return t.add(key, nil, base.KindDelete)
}

func (t *TableWriter) add(key, value []byte, kind base.Kind) error {
	if t.closed {
		return ErrClosed
	}
	if t.entries > 0 && bytes.Compare(key, t.last) <= 0 {
		return fmt.Errorf("shale: %s: key %s is not after %s: keys must be added in strictly ascending order",
			t.path, FormatKey(key), FormatKey(t.last))
	}
	if err := t.w.Add(base.MakeInternalKey(key, tableWriterSeq, kind), value); err != nil {
		return fmt.Errorf("shale: %s: %w", t.path, err)
	}
	t.last = append(t.last[:0], key...)
	t.entries++
	return nil
}

// DeleteRange adds a deletion of every key in [start, end): Ingest deletes
// them from the store, but not the keys this table holds. Ranges may come
// in any order and overlap. start == end deletes nothing; start > end is
// ErrInvalidRange, naming both keys.
func (t *TableWriter) DeleteRange(start, end []byte) error {
	if t.closed {
		return ErrClosed
	}
	switch c := bytes.Compare(start, end); {
	case c > 0:
		return reversedRangeError(start, end)
	case c == 0:
		return nil
	}
	t.tombs = append(t.tombs, rangedel.Tombstone{Start: bytes.Clone(start), End: bytes.Clone(end), Seq: tableWriterSeq})
	return nil
}

// Close writes the rest of the table and syncs it. The table may be empty
// (Ingest skips it). If Close fails, the file is removed. Calls after Close
// return ErrClosed.
func (t *TableWriter) Close() error {
	if t.closed {
		return ErrClosed
	}
	t.closed = true
	t.w.SetRangeDels(rangedel.Fragment(t.tombs))
	if _, err := t.w.Close(); err != nil {
		t.fs.Remove(t.path)
		return fmt.Errorf("shale: %s: %w", t.path, err)
	}
	return nil
}

// Abort abandons the table: it closes the file and removes it. Calls after
// Close or Abort return ErrClosed.
func (t *TableWriter) Abort() error {
	if t.closed {
		return ErrClosed
	}
	t.closed = true
	t.w.Abort()
	if err := t.fs.Remove(t.path); err != nil {
		return fmt.Errorf("shale: %s: %w", t.path, err)
	}
	return nil
}
