package raftstore

import (
	"bytes"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/vfs"
)

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func entry(i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: i/10 + 1, Type: raft.LogCommand, Data: []byte{byte(i), 'd'}}
}

func storeRange(t *testing.T, s *Store, first, last uint64) {
	t.Helper()
	var logs []*raft.Log
	for i := first; i <= last; i++ {
		logs = append(logs, entry(i))
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
}

func checkBounds(t *testing.T, s *Store, first, last uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	if f != first || l != last {
		t.Fatalf("FirstIndex, LastIndex = %d, %d; want %d, %d", f, l, first, last)
	}
}

// checkPresent checks that GetLog finds exactly the indexes in [lo, hi]
// that want says, comparing each found entry with entry(i).
func checkPresent(t *testing.T, s *Store, lo, hi uint64, want func(uint64) bool) {
	t.Helper()
	for i := lo; i <= hi; i++ {
		var l raft.Log
		err := s.GetLog(i, &l)
		switch {
		case want(i) && err != nil:
			t.Fatalf("GetLog(%d): %v", i, err)
		case want(i) && (l.Index != i || l.Term != entry(i).Term || !bytes.Equal(l.Data, entry(i).Data)):
			t.Fatalf("GetLog(%d) = %+v, want %+v", i, l, entry(i))
		case !want(i) && err != raft.ErrLogNotFound:
			t.Fatalf("GetLog(%d) = %+v, %v; want raft.ErrLogNotFound", i, l, err)
		}
	}
}

func TestEmptyStore(t *testing.T) {
	s := openTest(t)
	checkBounds(t, s, 0, 0)
	var l raft.Log
	if err := s.GetLog(1, &l); err != raft.ErrLogNotFound {
		t.Fatalf("GetLog on an empty store: %v, want raft.ErrLogNotFound", err)
	}
	// hashicorp/raft compares the text, not the value.
	if v, err := s.Get([]byte("CurrentTerm")); err == nil || err.Error() != "not found" || v != nil {
		t.Fatalf("Get of a missing key = %q, %v; want an error whose text is \"not found\"", v, err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" || v != 0 {
		t.Fatalf("GetUint64 of a missing key = %d, %v; want an error whose text is \"not found\"", v, err)
	}
}

func TestLogEveryField(t *testing.T) {
	s := openTest(t)
	at := time.Date(2026, 11, 30, 19, 30, 0, 123456789, time.UTC)
	logs := []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: []byte("conf"), Extensions: []byte("ext"), AppendedAt: at},
		{Index: 2, Term: math.MaxUint64, Type: raft.LogCommand}, // no data, zero time
		{Index: 3, Term: 7, Type: raft.LogBarrier, Extensions: []byte{0, 1, 2}, AppendedAt: time.Unix(-5, 1)},
		{Index: math.MaxUint64, Term: 9, Type: raft.LogNoop, Data: bytes.Repeat([]byte{0xff}, 70000), AppendedAt: at.Add(time.Hour)},
	}
	if err := s.StoreLogs(logs[:3]); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLog(logs[3]); err != nil {
		t.Fatal(err)
	}
	for _, want := range logs {
		var got raft.Log
		if err := s.GetLog(want.Index, &got); err != nil {
			t.Fatalf("GetLog(%d): %v", want.Index, err)
		}
		if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type ||
			!bytes.Equal(got.Data, want.Data) || !bytes.Equal(got.Extensions, want.Extensions) ||
			!got.AppendedAt.Equal(want.AppendedAt) || got.AppendedAt.IsZero() != want.AppendedAt.IsZero() {
			t.Fatalf("GetLog(%d) = %+v, want %+v", want.Index, got, want)
		}
	}
	checkBounds(t, s, 1, math.MaxUint64)
}

func TestDeleteRangeIsInclusive(t *testing.T) {
	s := openTest(t)
	storeRange(t, s, 1, 100)
	checkBounds(t, s, 1, 100)

	// A suffix, as raft deletes a conflicting tail.
	if err := s.DeleteRange(91, 100); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1, 90)
	// A prefix, as raft compacts after a snapshot; then compact the DB so the
	// answers come from tables, not the memtable.
	if err := s.DeleteRange(1, 40); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact(); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 41, 90)
	checkPresent(t, s, 1, 101, func(i uint64) bool { return i >= 41 && i <= 90 })

	// A single entry in the middle, and an empty range (min > max).
	if err := s.DeleteRange(50, 50); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(60, 59); err != nil {
		t.Fatal(err)
	}
	checkPresent(t, s, 40, 91, func(i uint64) bool { return i >= 41 && i <= 90 && i != 50 })

	// Appending after a compacted prefix, then deleting everything.
	storeRange(t, s, 91, 120)
	checkBounds(t, s, 41, 120)
	if err := s.DeleteRange(0, math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 0, 0)
}

// TestDeleteRangeToLargestIndex deletes up to math.MaxUint64, which has no
// successor key: the range must run to the end of the log's prefix, and
// the stable store beside it must stay.
func TestDeleteRangeToLargestIndex(t *testing.T) {
	s := openTest(t)
	storeRange(t, s, 10, 20)
	if err := s.StoreLog(entry(math.MaxUint64)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(15, math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 10, 14)
	var l raft.Log
	if err := s.GetLog(math.MaxUint64, &l); err != raft.ErrLogNotFound {
		t.Fatalf("GetLog(MaxUint64) after deleting it: %v", err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 3 {
		t.Fatalf("stable key after a log DeleteRange: %d, %v", v, err)
	}
}

func TestStableStore(t *testing.T) {
	s := openTest(t)
	if err := s.Set([]byte("LastVoteCand"), []byte("node-1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("empty"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 41); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-1" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if v, err := s.Get([]byte("empty")); err != nil || len(v) != 0 {
		t.Fatalf("Get of an empty value = %q, %v", v, err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 42 {
		t.Fatalf("GetUint64 = %d, %v", v, err)
	}
	// The stable store and the log do not see each other's keys.
	checkBounds(t, s, 0, 0)
	storeRange(t, s, 1, 3)
	if _, err := s.Get(logKey(1)[1:]); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("Get of a log entry's index bytes: %v", err)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	storeRange(t, s, 5, 50)
	if err := s.DeleteRange(5, 9); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 6); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkBounds(t, s, 10, 50)
	checkPresent(t, s, 1, 51, func(i uint64) bool { return i >= 10 && i <= 50 })
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 6 {
		t.Fatalf("GetUint64 after reopening = %d, %v", v, err)
	}
}

// TestWritesSyncedUnderNoSync: in a DB opened with NoSync, what the Store
// acknowledged survives a power loss (the MemFS crash image).
func TestWritesSyncedUnderNoSync(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open("db", &shale.Options{FS: fs, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storeRange(t, s, 1, 10)
	if err := s.DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatal(err)
	}

	after, err := Open("db", &shale.Options{FS: fs.CrashClone(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	checkBounds(t, after, 4, 10)
	if v, err := after.GetUint64([]byte("CurrentTerm")); err != nil || v != 2 {
		t.Fatalf("GetUint64 after a crash = %d, %v", v, err)
	}
}

func TestCorruptLogValue(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "raft")
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := New(db, dir)
	good := encodeLog(&raft.Log{Index: 1, Term: 1, Data: []byte("abc"), AppendedAt: time.Unix(1, 0)})
	cases := map[string][]byte{
		"empty":            {},
		"newer version":    append([]byte{2}, good[1:]...),
		"truncated":        good[:len(good)-1],
		"trailing bytes":   append(bytes.Clone(good), 0),
		"data too long":    func() []byte { v := bytes.Clone(good); v[21] = 200; return v }(),
		"bad presence":     func() []byte { v := bytes.Clone(good); v[len(v)-13] = 7; return v }(),
		"bad nanoseconds":  func() []byte { v := bytes.Clone(good); copy(v[len(v)-4:], []byte{0xff, 0, 0, 0}); return v }(),
		"index of another": encodeLog(&raft.Log{Index: 2, Term: 1}),
	}
	for name, v := range cases {
		if err := db.Put(logKey(1), v); err != nil {
			t.Fatal(err)
		}
		var l raft.Log
		err := s.GetLog(1, &l)
		if !errors.Is(err, shale.ErrCorruption) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: GetLog = %v; want a corruption error naming %s", name, err, dir)
		}
	}
	if err := db.Put(logKey(1), append([]byte{2}, good[1:]...)); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := s.GetLog(1, &l); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("a newer format: %v; want an error naming version 2", err)
	}

	if err := db.Put(stableKey([]byte("CurrentTerm")), []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUint64([]byte("CurrentTerm")); !errors.Is(err, shale.ErrCorruption) {
		t.Errorf("GetUint64 of a 3-byte value: %v; want corruption", err)
	}

	if err := db.Put([]byte{logPrefix, 1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LastIndex(); !errors.Is(err, shale.ErrCorruption) {
		t.Errorf("LastIndex on a 2-byte log key: %v; want corruption", err)
	}
}

// TestTooLargeEntryRefused: a batch holding an entry longer than a shale
// table takes is refused whole, and the store goes on taking writes and
// reopens. Before shale refused such a write it was acknowledged, and
// every later write, and every Open of the store, failed.
func TestTooLargeEntryRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := &raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: make([]byte, 1<<28)}
	if err := s.StoreLogs([]*raft.Log{entry(1), big}); err == nil {
		t.Fatal("StoreLogs of a 256 MiB entry: no error")
	}
	checkBounds(t, s, 0, 0)
	storeRange(t, s, 1, 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkBounds(t, s, 1, 3)
}
