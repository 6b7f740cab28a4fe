package main

// The state machine: a shale DB holding the replicated keys and the index of
// the last raft entry applied to them.
//
// # Layout of the state DB
//
//	'a' (0x61)        -> applied index, 8 bytes big-endian
//	'd' (0x64) | key  -> the value of key
//
// Each command is applied in one batch together with its index under 'a',
// so after a restart the DB says exactly which entries it holds, and raft's
// replay of older entries is skipped.
//
// # Commands (the Data of a raft log entry)
//
//	offset  size  field
//	0       1     op: 1 put, 2 delete
//	1       n     uvarint: key length k
//	1+n     k     key
//	1+n+k   rest  value (put only; empty for delete)
//
// # Snapshot stream, version 1
//
//	offset  size  field
//	0       4     magic "KVRS"
//	4       1     version: 1
//	5       8     applied index, big-endian
//	13      ...   records, each:
//	                1 byte tag 1, uvarint key length, key,
//	                uvarint value length, value
//	              then the end: 1 byte tag 0
//	end+1   4     CRC-32C (Castagnoli), big-endian, of every byte before it
//
// Records come in key order. Restore reads and checks the whole stream
// before it changes anything, then replaces the state with one ingested
// table.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
)

const (
	opPut    = 1
	opDelete = 2

	snapshotMagic   = "KVRS"
	snapshotVersion = 1
	tagRecord       = 1
	tagEnd          = 0
)

var (
	appliedKey = []byte{'a'}
	dataLower  = []byte{'d'}
	dataUpper  = []byte{'d' + 1}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

func dataKey(key []byte) []byte { return append([]byte{'d'}, key...) }

// encodeCommand returns the raft entry data of a put (value non-nil) or a
// delete (value nil) of key.
func encodeCommand(key, value []byte) []byte {
	op := byte(opPut)
	if value == nil {
		op = opDelete
	}
	c := binary.AppendUvarint([]byte{op}, uint64(len(key)))
	c = append(c, key...)
	return append(c, value...)
}

// decodeCommand parses what encodeCommand wrote.
func decodeCommand(c []byte) (op byte, key, value []byte, err error) {
	if len(c) == 0 {
		return 0, nil, nil, errors.New("empty command")
	}
	op = c[0]
	n, w := binary.Uvarint(c[1:])
	if w <= 0 || n > uint64(len(c)-1-w) {
		return 0, nil, nil, fmt.Errorf("command key length does not fit its %d bytes", len(c))
	}
	key, value = c[1+w:1+w+int(n)], c[1+w+int(n):]
	switch {
	case op == opPut:
	case op == opDelete && len(value) == 0:
		value = nil
	default:
		return 0, nil, nil, fmt.Errorf("command op %d with a %d-byte value", op, len(value))
	}
	return op, key, value, nil
}

// fsm is the raft.FSM of the example, on a shale DB it does not own.
type fsm struct {
	db *shale.DB
	// restoreDir is where Restore writes the table it ingests.
	restoreDir string
	mu         sync.Mutex // orders Apply and Restore against the applied index
	// applied mirrors the DB's applied index.
	applied uint64
}

// newFSM reads the applied index the DB holds (0 for a new DB). Restore
// writes its table in restoreDir, which it creates.
func newFSM(db *shale.DB, restoreDir string) (*fsm, error) {
	f := &fsm{db: db, restoreDir: restoreDir}
	v, err := db.Get(appliedKey)
	switch {
	case errors.Is(err, shale.ErrNotFound):
		return f, nil
	case err != nil:
		return nil, err
	case len(v) != 8:
		return nil, fmt.Errorf("state DB: applied index is %d bytes, want 8: %w", len(v), shale.ErrCorruption)
	}
	f.applied = binary.BigEndian.Uint64(v)
	return f, nil
}

// Applied returns the index of the last entry applied.
func (f *fsm) Applied() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// Apply applies one command and its index in one batch. An entry at or
// below the applied index was applied before a restart and is skipped. A
// malformed command changes no key, but its index is recorded all the same,
// and the error is the entry's result.
func (f *fsm) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.Index <= f.applied {
		return nil
	}
	b := f.db.NewBatch()
	op, key, value, cmdErr := decodeCommand(l.Data)
	switch {
	case cmdErr != nil:
	case op == opPut:
		b.Put(dataKey(key), value)
	case op == opDelete:
		b.Delete(dataKey(key))
	}
	b.Put(appliedKey, binary.BigEndian.AppendUint64(nil, l.Index))
	if err := f.db.Apply(b); err != nil {
		// The state can no longer follow the log: raft must not go on.
		panic(fmt.Sprintf("kvreplicated: applying entry %d: %v", l.Index, err))
	}
	f.applied = l.Index
	return cmdErr
}

// Get returns the value of key in the local state, or shale.ErrNotFound.
func (f *fsm) Get(key []byte) ([]byte, error) { return f.db.Get(dataKey(key)) }

// Snapshot takes a shale snapshot; Persist streams it.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &fsmSnapshot{snap: f.db.NewSnapshot(), applied: f.applied}, nil
}

// Restore replaces the whole state with the snapshot's, atomically. The
// stream becomes one table (shale.TableWriter in restoreDir): the applied
// index, a range deletion of every key, and the snapshot's keys, which
// come in key order. The stream is read and checked to its end before the
// table is ingested (shale.DB.Ingest, all or none), so a damaged or cut
// stream leaves the state as it was. The table's range deletion deletes
// the keys the state held before, not the table's own.
func (f *fsm) Restore(rc io.ReadCloser) (err error) {
	defer rc.Close()
	if err := os.MkdirAll(f.restoreDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(f.restoreDir, "restore.sst")
	w, err := shale.NewTableWriter(path, nil)
	if err != nil {
		return err
	}
	defer os.Remove(path) // Ingest copies it
	var putErr error
	applied, err := readSnapshot(rc, func(applied uint64) {
		putErr = w.Put(appliedKey, binary.BigEndian.AppendUint64(nil, applied))
	}, func(k, v []byte) {
		if putErr == nil {
			putErr = w.Put(dataKey(k), v)
		}
	})
	if err == nil {
		err = putErr
	}
	if err == nil {
		err = w.DeleteRange(dataLower, dataUpper)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.db.Ingest([]string{path}); err != nil {
		return err
	}
	f.applied = applied
	return nil
}

type fsmSnapshot struct {
	snap    *shale.Snapshot
	applied uint64
}

// Persist writes the snapshot stream to sink.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.snap, s.applied); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release closes the shale snapshot.
func (s *fsmSnapshot) Release() { s.snap.Close() }

// writeSnapshot writes the stream described at the top of this file.
func writeSnapshot(w io.Writer, snap *shale.Snapshot, applied uint64) (err error) {
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriter(io.MultiWriter(w, crc))
	head := append([]byte(snapshotMagic), snapshotVersion)
	bw.Write(binary.BigEndian.AppendUint64(head, applied))
	it := snap.NewIter(&shale.IterOptions{LowerBound: dataLower, UpperBound: dataUpper})
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	var rec []byte
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key()[1:], it.Value()
		rec = binary.AppendUvarint(append(rec[:0], tagRecord), uint64(len(k)))
		rec = binary.AppendUvarint(append(rec, k...), uint64(len(v)))
		if _, err := bw.Write(append(rec, v...)); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	bw.WriteByte(tagEnd)
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err = w.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// readSnapshot checks a whole stream, calling head with its applied index
// and then put for each record, and returns the applied index. Any error
// means the stream was not whole.
func readSnapshot(r io.Reader, head func(applied uint64), put func(k, v []byte)) (uint64, error) {
	crc := crc32.New(castagnoli)
	br := &crcReader{r: bufio.NewReader(r), crc: crc}
	header := make([]byte, len(snapshotMagic)+1+8)
	if _, err := io.ReadFull(br, header); err != nil {
		return 0, fmt.Errorf("snapshot header: %w", err)
	}
	if string(header[:4]) != snapshotMagic {
		return 0, fmt.Errorf("snapshot magic %q, want %q", header[:4], snapshotMagic)
	}
	if header[4] != snapshotVersion {
		return 0, fmt.Errorf("snapshot stream version %d, this build reads version %d", header[4], snapshotVersion)
	}
	applied := binary.BigEndian.Uint64(header[5:])
	head(applied)
	for n := 0; ; n++ {
		tag, err := br.ReadByte()
		if err != nil {
			return 0, fmt.Errorf("snapshot record %d: %w", n, io.ErrUnexpectedEOF)
		}
		if tag == tagEnd {
			break
		}
		if tag != tagRecord {
			return 0, fmt.Errorf("snapshot record %d: tag %d", n, tag)
		}
		k, err := br.field()
		if err != nil {
			return 0, fmt.Errorf("snapshot record %d key: %w", n, err)
		}
		v, err := br.field()
		if err != nil {
			return 0, fmt.Errorf("snapshot record %d value: %w", n, err)
		}
		put(k, v)
	}
	want := crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(br.r, sum[:]); err != nil {
		return 0, fmt.Errorf("snapshot checksum: %w", io.ErrUnexpectedEOF)
	}
	if got := binary.BigEndian.Uint32(sum[:]); got != want {
		return 0, fmt.Errorf("snapshot checksum %08x, computed %08x", got, want)
	}
	switch _, err := br.r.ReadByte(); {
	case err == nil:
		return 0, errors.New("snapshot has bytes after its checksum")
	case err != io.EOF:
		return 0, err
	}
	return applied, nil
}

// maxField bounds a key or value read from a snapshot, so that a damaged
// length cannot make Restore allocate without limit.
const maxField = 1 << 30

// crcReader reads through bufio and feeds every byte it returns to crc.
type crcReader struct {
	r   *bufio.Reader
	crc hash.Hash32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	return n, err
}

func (c *crcReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.crc.Write([]byte{b})
	}
	return b, err
}

// field reads a uvarint length and that many bytes.
func (c *crcReader) field() ([]byte, error) {
	n, err := binary.ReadUvarint(c)
	if err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	if n > maxField {
		return nil, fmt.Errorf("length %d is over %d", n, maxField)
	}
	// Grow with the bytes that arrive, not with what a length claims.
	var b bytes.Buffer
	if _, err := io.CopyN(&b, c, int64(n)); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return b.Bytes(), nil
}
