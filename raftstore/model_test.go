package raftstore

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/vfs"
)

// TestModel runs random StoreLogs, DeleteRange, Set and SetUint64 calls on
// a Store and on a map, with flushes, compactions and reopens of the DB
// between them, and checks every read against the map: GetLog of each
// index in play, FirstIndex, LastIndex, Get and GetUint64.
func TestModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fs := vfs.NewMem()
	opts := &shale.Options{FS: fs, MemTableSize: 16 << 10}
	db, err := shale.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	s := New(db, "db")

	// Indexes in play: a low range and a few near the top.
	indexes := []uint64{0, math.MaxUint64, math.MaxUint64 - 1, 1 << 63}
	for i := uint64(1); i <= 60; i++ {
		indexes = append(indexes, i)
	}
	pick := func() uint64 { return indexes[rng.IntN(len(indexes))] }
	logs := map[uint64]raft.Log{}
	stable := map[string][]byte{}
	stableKeys := []string{"", "CurrentTerm", "LastVoteTerm", "LastVoteCand", "l\x00"}

	checkLogs := func(step int) {
		t.Helper()
		var lo, hi uint64 // 0, 0 for an empty log
		if len(logs) > 0 {
			lo = math.MaxUint64
		}
		for i := range logs {
			lo, hi = min(lo, i), max(hi, i)
		}
		f, err := s.FirstIndex()
		l, err2 := s.LastIndex()
		if err != nil || err2 != nil || f != lo || l != hi {
			t.Fatalf("step %d: FirstIndex, LastIndex = %d, %d (%v, %v); want %d, %d", step, f, l, err, err2, lo, hi)
		}
		for _, i := range indexes {
			var got raft.Log
			err := s.GetLog(i, &got)
			want, ok := logs[i]
			switch {
			case !ok && err != raft.ErrLogNotFound:
				t.Fatalf("step %d: GetLog(%d) = %v, want raft.ErrLogNotFound", step, i, err)
			case ok && err != nil:
				t.Fatalf("step %d: GetLog(%d): %v", step, i, err)
			case ok && (got.Index != want.Index || got.Term != want.Term || got.Type != want.Type ||
				!bytes.Equal(got.Data, want.Data) || !bytes.Equal(got.Extensions, want.Extensions) ||
				!got.AppendedAt.Equal(want.AppendedAt)):
				t.Fatalf("step %d: GetLog(%d) = %+v, want %+v", step, i, got, want)
			}
		}
	}
	checkStable := func(step int) {
		t.Helper()
		for _, k := range stableKeys {
			got, err := s.Get([]byte(k))
			want, ok := stable[k]
			switch {
			case !ok && (err == nil || err.Error() != "not found"):
				t.Fatalf("step %d: Get(%q) = %q, %v; want not found", step, k, got, err)
			case ok && (err != nil || !bytes.Equal(got, want)):
				t.Fatalf("step %d: Get(%q) = %q, %v; want %q", step, k, got, err, want)
			}
		}
	}

	for step := range 3000 {
		switch r := rng.IntN(100); {
		case r < 45:
			var batch []*raft.Log
			for range 1 + rng.IntN(5) {
				l := raft.Log{Index: pick(), Term: rng.Uint64(), Type: raft.LogType(rng.IntN(6))}
				if rng.IntN(3) > 0 {
					l.Data = make([]byte, rng.IntN(300))
					for i := range l.Data {
						l.Data[i] = byte(rng.IntN(256))
					}
				}
				if rng.IntN(4) == 0 {
					l.Extensions = []byte{byte(step), 0, byte(step >> 8)}
				}
				if rng.IntN(2) == 0 {
					l.AppendedAt = time.Unix(rng.Int64N(1<<40)-1<<39, rng.Int64N(1e9))
				}
				batch = append(batch, &l)
			}
			if err := s.StoreLogs(batch); err != nil {
				t.Fatal(err)
			}
			for _, l := range batch {
				logs[l.Index] = *l
			}
		case r < 60:
			lo, hi := pick(), pick()
			if rng.IntN(4) > 0 && lo > hi {
				lo, hi = hi, lo
			}
			if err := s.DeleteRange(lo, hi); err != nil {
				t.Fatal(err)
			}
			for i := range logs {
				if lo <= i && i <= hi {
					delete(logs, i)
				}
			}
		case r < 70:
			k := stableKeys[rng.IntN(len(stableKeys))]
			v := []byte{byte(step), byte(step >> 8)}
			if rng.IntN(2) == 0 {
				if err := s.SetUint64([]byte(k), uint64(step)); err != nil {
					t.Fatal(err)
				}
				v = []byte{0, 0, 0, 0, 0, 0, byte(step >> 8), byte(step)}
			} else if err := s.Set([]byte(k), v); err != nil {
				t.Fatal(err)
			}
			stable[k] = v
		case r < 80:
			checkStable(step)
		case r < 83:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		case r < 85:
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
		case r < 87:
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if db, err = shale.Open("db", opts); err != nil {
				t.Fatal(err)
			}
			s = New(db, "db")
		default:
			checkLogs(step)
		}
	}
	checkLogs(-1)
	checkStable(-1)
	if _, err := s.GetUint64([]byte("never set")); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("GetUint64 of a key never set: %v", err)
	}
}
