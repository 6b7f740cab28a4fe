// Package raftstore keeps the log and the stable state of a
// github.com/hashicorp/raft node in a shale DB: Store implements
// raft.LogStore and raft.StableStore.
//
// # Layout in the DB
//
// Every key starts with a one-byte prefix, so the log and the stable store
// share one DB without meeting; a Store writes nothing outside these two
// prefixes, and expects nothing else under them.
//
//	log entry:    'l' (0x6c) | index   uint64, 8 bytes big-endian
//	stable entry: 's' (0x73) | the raft key, as given
//
// Big-endian indexes sort as numbers, so the first and last entries of the
// log are the first and last keys under 'l'.
//
// A stable entry's value is the raft value as given; SetUint64 writes the
// number as 8 bytes big-endian, and GetUint64 refuses a value of another
// length as corruption.
//
// A log entry's value, format version 1, every integer big-endian:
//
//	offset  size  field
//	0       1     format version: 1
//	1       8     Index (must equal the index in the key)
//	9       8     Term
//	17      1     Type (raft.LogType)
//	18      4     n = len(Data)
//	22      n     Data
//	22+n    4     m = len(Extensions)
//	26+n    m     Extensions
//	26+n+m  1     AppendedAt present: 0 (the zero time.Time) or 1
//	27+n+m  8     AppendedAt seconds since 1970-01-01 UTC, signed (if present)
//	35+n+m  4     AppendedAt nanoseconds within the second, 0 to 999999999 (if present)
//
// Nothing follows the last field, and AppendedAt present is never the zero
// time. Empty Data and Extensions come back nil;
// AppendedAt comes back as the same instant in the local time zone, without
// a monotonic clock reading. A value of another version, one whose lengths
// do not add up to its size, or one holding another index, is reported as
// corruption (errors.Is(err, shale.ErrCorruption)) naming the store's
// directory and the index; it is never returned as a log entry.
//
// # Durability
//
// Every write a Store makes (StoreLog, StoreLogs, DeleteRange, Set,
// SetUint64) is synced before it returns, even in a DB opened with
// Options.NoSync, because raft counts on what its stores acknowledge.
// StoreLogs is one atomic batch: after a crash, all of its entries are
// there or none.
package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
)

// ErrKeyNotFound is what Get and GetUint64 return for a key never set. Its
// text is exactly "not found": hashicorp/raft recognises a missing key by
// that text alone.
var ErrKeyNotFound = errors.New("not found")

const (
	logPrefix    = 'l'
	stablePrefix = 's'

	logFormatVersion = 1
	logKeyLen        = 1 + 8
)

var (
	// logLower and logUpper bound every log key: [logLower, logUpper).
	logLower = []byte{logPrefix}
	logUpper = []byte{logPrefix + 1}

	synced = shale.WriteOptions{Sync: true}
)

// Store is a raft.LogStore and a raft.StableStore on a shale DB. Its
// methods are safe for concurrent use.
type Store struct {
	db    *shale.DB
	dir   string // named in corruption errors
	owned bool   // Close closes db
}

var (
	_ raft.LogStore    = (*Store)(nil)
	_ raft.StableStore = (*Store)(nil)
)

// Open opens (or creates) a shale DB in dir and returns a Store on it that
// owns it: Close closes the DB. opts may be nil for the defaults.
func Open(dir string, opts *shale.Options) (*Store, error) {
	db, err := shale.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return &Store{db: db, dir: dir, owned: true}, nil
}

// New returns a Store on a DB the caller opened in dir and keeps: Close
// leaves the DB open. dir is only named in error messages.
func New(db *shale.DB, dir string) *Store {
	return &Store{db: db, dir: dir}
}

// Close closes the DB if the Store opened it.
func (s *Store) Close() error {
	if s.owned {
		return s.db.Close()
	}
	return nil
}

func logKey(index uint64) []byte {
	k := make([]byte, logKeyLen)
	k[0] = logPrefix
	binary.BigEndian.PutUint64(k[1:], index)
	return k
}

func stableKey(key []byte) []byte {
	return append([]byte{stablePrefix}, key...)
}

// FirstIndex returns the lowest index in the log, 0 if it is empty.
func (s *Store) FirstIndex() (uint64, error) {
	return s.edgeIndex((*shale.Iterator).First)
}

// LastIndex returns the highest index in the log, 0 if it is empty.
func (s *Store) LastIndex() (uint64, error) {
	return s.edgeIndex((*shale.Iterator).Last)
}

// edgeIndex positions an iterator bounded to the log with move (First or
// Last) and returns the index it lands on.
func (s *Store) edgeIndex(move func(*shale.Iterator) bool) (idx uint64, err error) {
	it := s.db.NewIter(&shale.IterOptions{LowerBound: logLower, UpperBound: logUpper})
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	if !move(it) {
		return 0, it.Error()
	}
	k := it.Key()
	if len(k) != logKeyLen {
		return 0, corruptf(s.dir, "raft log key %x is %d bytes, want %d", k, len(k), logKeyLen)
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

// GetLog reads the entry at index into log, or returns raft.ErrLogNotFound.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	v, err := s.db.Get(logKey(index))
	if errors.Is(err, shale.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return err
	}
	if err := decodeLog(v, log); err != nil {
		return corruptf(s.dir, "raft log entry %d: %v", index, err)
	}
	if log.Index != index {
		return corruptf(s.dir, "raft log entry %d holds index %d", index, log.Index)
	}
	return nil
}

// StoreLog stores one entry, synced.
func (s *Store) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

// StoreLogs stores the entries in one atomic, synced batch. An entry longer
// than shale takes (about 256 MiB of Data and Extensions together, see
// shale's "Known limits") is refused, and then none is stored.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	b := s.db.NewBatch()
	for _, l := range logs {
		if len(l.Data) > math.MaxUint32 || len(l.Extensions) > math.MaxUint32 {
			return fmt.Errorf("raftstore: log entry %d: %d bytes of data and %d of extensions; the format holds less than 4 GiB of each",
				l.Index, len(l.Data), len(l.Extensions))
		}
		b.Put(logKey(l.Index), encodeLog(l))
	}
	return s.db.ApplyWithOptions(b, synced)
}

// DeleteRange deletes the entries from min to max, both included, in one
// synced write. min > max deletes nothing.
func (s *Store) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	end := logUpper
	if max < math.MaxUint64 {
		end = logKey(max + 1)
	}
	b := s.db.NewBatch()
	b.DeleteRange(logKey(min), end)
	return s.db.ApplyWithOptions(b, synced)
}

// Set stores val under key in the stable store, synced.
func (s *Store) Set(key, val []byte) error {
	b := s.db.NewBatch()
	b.Put(stableKey(key), val)
	return s.db.ApplyWithOptions(b, synced)
}

// Get returns the value of key in the stable store, or ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, err := s.db.Get(stableKey(key))
	if errors.Is(err, shale.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	return v, err
}

// SetUint64 stores val under key in the stable store, synced.
func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the number SetUint64 stored under key, or
// ErrKeyNotFound.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, corruptf(s.dir, "raft stable key %q holds %d bytes, want an 8-byte number", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// encodeLog returns l in the log value format (see the package comment).
func encodeLog(l *raft.Log) []byte {
	v := make([]byte, 0, 39+len(l.Data)+len(l.Extensions))
	v = append(v, logFormatVersion)
	v = binary.BigEndian.AppendUint64(v, l.Index)
	v = binary.BigEndian.AppendUint64(v, l.Term)
	v = append(v, byte(l.Type))
	v = binary.BigEndian.AppendUint32(v, uint32(len(l.Data)))
	v = append(v, l.Data...)
	v = binary.BigEndian.AppendUint32(v, uint32(len(l.Extensions)))
	v = append(v, l.Extensions...)
	if l.AppendedAt.IsZero() {
		return append(v, 0)
	}
	v = append(v, 1)
	v = binary.BigEndian.AppendUint64(v, uint64(l.AppendedAt.Unix()))
	return binary.BigEndian.AppendUint32(v, uint32(l.AppendedAt.Nanosecond()))
}

// decodeLog parses a value encodeLog wrote into l. Data and Extensions
// alias v; empty ones come back nil.
func decodeLog(v []byte, l *raft.Log) error {
	r := reader{buf: v}
	if ver := r.byte(); r.err == nil && ver != logFormatVersion {
		return fmt.Errorf("value format version %d, this build reads version %d", ver, logFormatVersion)
	}
	*l = raft.Log{
		Index:      r.uint64(),
		Term:       r.uint64(),
		Type:       raft.LogType(r.byte()),
		Data:       r.bytes(),
		Extensions: r.bytes(),
	}
	switch present := r.byte(); {
	case r.err != nil:
	case present == 1:
		sec, nsec := int64(r.uint64()), r.uint32()
		if r.err == nil && nsec >= 1e9 {
			return fmt.Errorf("AppendedAt nanoseconds %d out of range", nsec)
		}
		l.AppendedAt = time.Unix(sec, int64(nsec))
		if r.err == nil && l.AppendedAt.IsZero() {
			return errors.New("AppendedAt present but the zero time, which is written as absent")
		}
	case present != 0:
		return fmt.Errorf("AppendedAt presence byte %d, want 0 or 1", present)
	}
	if r.err != nil {
		return r.err
	}
	if len(r.buf) != 0 {
		return fmt.Errorf("%d bytes after the last field", len(r.buf))
	}
	return nil
}

// reader takes fields off the front of buf; after the first short read it
// returns zeros and keeps the error.
type reader struct {
	buf []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.buf) {
		r.err = fmt.Errorf("value ends %d bytes short of a %d-byte field", n-len(r.buf), n)
		return nil
	}
	b := r.buf[:n:n]
	r.buf = r.buf[n:]
	return b
}

func (r *reader) byte() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) uint32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) uint64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *reader) bytes() []byte {
	n := r.uint32()
	if r.err != nil || n == 0 {
		return nil
	}
	return r.take(int(n))
}

// corruptf is a corruption error, matching shale.ErrCorruption, naming the
// store's directory.
func corruptf(dir, format string, args ...any) error {
	return fmt.Errorf("%w in %s: %s", shale.ErrCorruption, dir, fmt.Sprintf(format, args...))
}
