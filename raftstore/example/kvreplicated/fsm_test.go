package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
)

func openFSM(t testing.TB, dir string) (*fsm, *shale.DB) {
	t.Helper()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFSM(db, dir+".restore")
	if err != nil {
		t.Fatal(err)
	}
	return f, db
}

func apply(t testing.TB, f *fsm, index uint64, key string, value []byte) {
	t.Helper()
	if res := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: encodeCommand([]byte(key), value)}); res != nil {
		t.Fatalf("Apply(%d): %v", index, res)
	}
}

// state returns every key and value, and the applied index, as text.
func state(t testing.TB, f *fsm) string {
	t.Helper()
	var sb strings.Builder
	it := f.db.NewIter(&shale.IterOptions{LowerBound: dataLower, UpperBound: dataUpper})
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Fprintf(&sb, "%s=%s ", it.Key()[1:], it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&sb, "applied=%d", f.Applied())
	return sb.String()
}

// TestApplyResumesAfterRestart: each command is applied with its index, so
// a reopened state skips the entries raft replays.
func TestApplyResumesAfterRestart(t *testing.T) {
	dir := t.TempDir()
	f, db := openFSM(t, dir)
	apply(t, f, 1, "a", []byte("1"))
	apply(t, f, 2, "b", []byte("2"))
	apply(t, f, 3, "a", nil) // delete
	apply(t, f, 4, "e", []byte{})
	if res := f.Apply(&raft.Log{Index: 5, Data: []byte{9, 1, 'x'}}); res == nil {
		t.Fatal("a malformed command applied without an error")
	}
	want := "b=2 e= applied=5"
	if got := state(t, f); got != want {
		t.Fatalf("state %q, want %q", got, want)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	f, db = openFSM(t, dir)
	defer db.Close()
	if got := state(t, f); got != want {
		t.Fatalf("after reopening: state %q, want %q", got, want)
	}
	// raft replays entries above its snapshot: those already applied are
	// skipped, the next one is applied.
	apply(t, f, 2, "b", []byte("stale"))
	apply(t, f, 3, "a", []byte("stale"))
	apply(t, f, 6, "c", []byte("3"))
	if got, want := state(t, f), "b=2 c=3 e= applied=6"; got != want {
		t.Fatalf("after replay: state %q, want %q", got, want)
	}
}

// sink is a raft.SnapshotSink into a buffer.
type sink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *sink) ID() string    { return "test" }
func (s *sink) Close() error  { s.closed = true; return nil }
func (s *sink) Cancel() error { s.cancelled = true; return nil }

func snapshotOf(t testing.TB, f *fsm) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var s sink
	if err := snap.Persist(&s); err != nil || !s.closed {
		t.Fatalf("Persist: %v (sink closed: %v)", err, s.closed)
	}
	return s.Bytes()
}

// TestSnapshotRestore: a snapshot taken at an index holds the state as of
// that index even while writes go on, and restoring it replaces the
// target's state, keys and applied index, entirely.
func TestSnapshotRestore(t *testing.T) {
	src, db := openFSM(t, filepath.Join(t.TempDir(), "src"))
	defer db.Close()
	for i := 1; i <= 300; i++ {
		apply(t, src, uint64(i), fmt.Sprintf("k%03d", i), bytes.Repeat([]byte{byte(i)}, i))
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := state(t, src)
	apply(t, src, 301, "k001", nil) // after the snapshot: not in it
	var s sink
	if err := snap.Persist(&s); err != nil {
		t.Fatal(err)
	}
	snap.Release()

	dst, db2 := openFSM(t, filepath.Join(t.TempDir(), "dst"))
	defer db2.Close()
	apply(t, dst, 1, "k001", []byte("old"))
	apply(t, dst, 2, "zzz", []byte("only here"))
	if err := dst.Restore(io.NopCloser(bytes.NewReader(s.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got := state(t, dst); got != want {
		t.Fatalf("restored state differs:\n got %.200s\nwant %.200s", got, want)
	}
	// An empty state restores to an empty state.
	empty, db3 := openFSM(t, filepath.Join(t.TempDir(), "empty"))
	defer db3.Close()
	if err := dst.Restore(io.NopCloser(bytes.NewReader(snapshotOf(t, empty)))); err != nil {
		t.Fatal(err)
	}
	if got := state(t, dst); got != "applied=0" {
		t.Fatalf("after restoring an empty snapshot: %q", got)
	}
}

// TestRestoreRefusesDamage: a cut, altered or newer stream is refused and
// the state stays as it was.
func TestRestoreRefusesDamage(t *testing.T) {
	src, db := openFSM(t, filepath.Join(t.TempDir(), "src"))
	defer db.Close()
	for i := 1; i <= 20; i++ {
		apply(t, src, uint64(i), fmt.Sprintf("k%d", i), []byte("value"))
	}
	good := snapshotOf(t, src)

	dst, db2 := openFSM(t, filepath.Join(t.TempDir(), "dst"))
	defer db2.Close()
	apply(t, dst, 7, "mine", []byte("kept"))
	before := state(t, dst)
	damaged := map[string][]byte{
		"empty":          {},
		"cut in a value": good[:len(good)/2],
		"no checksum":    good[:len(good)-4],
		"flipped byte":   func() []byte { b := bytes.Clone(good); b[len(b)/2] ^= 1; return b }(),
		"trailing byte":  append(bytes.Clone(good), 0),
		"version 2":      func() []byte { b := bytes.Clone(good); b[4] = 2; return b }(),
		"huge length":    append(bytes.Clone(good[:13]), 1, 0xff, 0xff, 0xff, 0xff, 0x0f),
	}
	for name, b := range damaged {
		if err := dst.Restore(io.NopCloser(bytes.NewReader(b))); err == nil {
			t.Errorf("%s: Restore accepted it", name)
		}
		if got := state(t, dst); got != before {
			t.Fatalf("%s: a refused Restore changed the state to %q", name, got)
		}
	}
	if err := dst.Restore(io.NopCloser(bytes.NewReader(good))); err != nil {
		t.Fatal(err)
	}
	if got, want := state(t, dst), state(t, src); got != want {
		t.Fatalf("after a good Restore: %q, want %q", got, want)
	}
}

func TestCommandEncoding(t *testing.T) {
	for _, c := range []struct {
		key, value []byte
		op         byte
	}{
		{[]byte("k"), []byte("v"), opPut},
		{[]byte{}, []byte{}, opPut},
		{bytes.Repeat([]byte("k"), 300), nil, opDelete},
	} {
		op, k, v, err := decodeCommand(encodeCommand(c.key, c.value))
		if err != nil || op != c.op || !bytes.Equal(k, c.key) || !bytes.Equal(v, c.value) || (v == nil) != (c.value == nil) {
			t.Errorf("round trip of %q=%q: op %d, %q=%q, %v", c.key, c.value, op, k, v, err)
		}
	}
	for _, bad := range [][]byte{{}, {opPut}, {opPut, 5, 'a'}, {opDelete, 1, 'a', 'v'}, {7, 0}} {
		if _, _, _, err := decodeCommand(bad); err == nil {
			t.Errorf("decodeCommand(%v) accepted it", bad)
		}
	}
}
