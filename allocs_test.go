package shale

import (
	"fmt"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// putAllocBudget is the allocation budget of a Put with the default
// options (issue 10).
const putAllocBudget = 2

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
