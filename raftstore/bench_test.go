package raftstore

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftbench "github.com/hashicorp/raft/bench"
)

// benchStore is what both backends are: a log store and a stable store.
type benchStore interface {
	raft.LogStore
	raft.StableStore
	Close() error
}

var benchBackends = []struct {
	name string
	open func(dir string) (benchStore, error)
}{
	{"shale", func(dir string) (benchStore, error) { return Open(dir, nil) }},
	{"boltdb", func(dir string) (benchStore, error) { return raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db")) }},
}

// BenchmarkRaftStore runs hashicorp/raft's own store benchmarks on shale
// and on raft-boltdb/v2, each on a fresh store with the backend's default
// (synced) settings: go test -bench RaftStore -run '^$'.
func BenchmarkRaftStore(b *testing.B) {
	ops := []struct {
		name string
		run  func(*testing.B, benchStore)
	}{
		{"FirstIndex", func(b *testing.B, s benchStore) { raftbench.FirstIndex(b, s) }},
		{"LastIndex", func(b *testing.B, s benchStore) { raftbench.LastIndex(b, s) }},
		{"GetLog", func(b *testing.B, s benchStore) { raftbench.GetLog(b, s) }},
		{"StoreLog", func(b *testing.B, s benchStore) { raftbench.StoreLog(b, s) }},
		{"StoreLogs", func(b *testing.B, s benchStore) { raftbench.StoreLogs(b, s) }},
		{"DeleteRange", func(b *testing.B, s benchStore) { raftbench.DeleteRange(b, s) }},
		{"Set", func(b *testing.B, s benchStore) { raftbench.Set(b, s) }},
		{"Get", func(b *testing.B, s benchStore) { raftbench.Get(b, s) }},
		{"SetUint64", func(b *testing.B, s benchStore) { raftbench.SetUint64(b, s) }},
		{"GetUint64", func(b *testing.B, s benchStore) { raftbench.GetUint64(b, s) }},
	}
	for _, op := range ops {
		for _, be := range benchBackends {
			b.Run(op.name+"/"+be.name, func(b *testing.B) {
				s, err := be.open(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				op.run(b, s)
			})
		}
	}
}
