package shale

import (
	"fmt"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// The allocation budgets of the hot paths with the default options (issue
// 10): a Put allocates at most putAllocBudget times, a Get of a present key
// at most getAllocBudget times, the copy it returns included.
const (
	putAllocBudget = 2
	getAllocBudget = 2
)

// allocKey is a 16-byte key, the size the budgets are stated for.
func allocKey(i int) []byte { return fmt.Appendf(nil, "allockey%08d", i) }

// allocValue is a 100-byte value.
var allocValue = make([]byte, 100)

func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("the race detector's runtime allocates on its own")
	}
}

// TestPutAllocs checks the Put budget, synced and not, on the in-memory
// file system. Keys are fresh, so every Put inserts into the memtable; the
// keys are made before counting starts.
func TestPutAllocs(t *testing.T) {
	skipUnderRace(t)
	for _, noSync := range []bool{true, false} {
		t.Run(fmt.Sprintf("NoSync=%v", noSync), func(t *testing.T) {
			db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), NoSync: noSync})
			defer db.Close()
			const runs = 1000
			keys := make([][]byte, runs+1)
			for i := range keys {
				keys[i] = allocKey(i)
			}
			i := 0
			got := testing.AllocsPerRun(runs, func() {
				if err := db.Put(keys[i], allocValue); err != nil {
					t.Fatal(err)
				}
				i++
			})
			t.Logf("Put: %v allocations", got)
			if got > putAllocBudget {
				t.Fatalf("Put allocates %v times, want at most %d", got, putAllocBudget)
			}
		})
	}
}

// TestGetAllocs checks the Get budget for a present key served from the
// memtable and from a table whose blocks are in the block cache.
func TestGetAllocs(t *testing.T) {
	skipUnderRace(t)
	for _, where := range []string{"memtable", "table"} {
		t.Run(where, func(t *testing.T) {
			db := mustOpen(t, "db", &Options{FS: vfs.NewMem()})
			defer db.Close()
			const n = 1000
			for i := range n {
				if err := db.Put(allocKey(i), allocValue); err != nil {
					t.Fatal(err)
				}
			}
			if where == "table" {
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
				if m := db.Metrics(); m.MemTableBytes != 0 || m.ImmutableTables != 0 {
					t.Fatalf("after Flush the memtables hold %d bytes and %d tables", m.MemTableBytes, m.ImmutableTables)
				}
			}
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = allocKey(i)
				if _, err := db.Get(keys[i]); err != nil { // warms the block cache
					t.Fatal(err)
				}
			}
			i := 0
			got := testing.AllocsPerRun(n, func() {
				v, err := db.Get(keys[i%n])
				if err != nil || len(v) != len(allocValue) {
					t.Fatalf("Get(%q) = %d bytes, %v", keys[i%n], len(v), err)
				}
				i++
			})
			t.Logf("Get: %v allocations", got)
			if got > getAllocBudget {
				t.Fatalf("Get allocates %v times, want at most %d", got, getAllocBudget)
			}
		})
	}
}
