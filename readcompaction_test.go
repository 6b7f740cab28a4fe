package shale

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/compaction"
	"github.com/shale-db/shale/vfs"
)

// TestReadCompactions checks that Gets of absent keys in an L0 table's range,
// each reading one of its blocks for nothing, make the table's read
// compaction run in the background once they reach its allowance (100 for
// a small table), merging it into the bottom level; and that
// DisableReadCompactions keeps the table where it is.
func TestReadCompactions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bits    int
		lookups int
	}{
		// Without filters every lookup in the table's range reads a block.
		{"no filter", NoFilter, 150},
		// At 2 bits per key about 40% of lookups are false positives.
		{"2 bits per key", 2, 2000},
	} {
		for _, disabled := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/disabled=%t", tc.name, disabled), func(t *testing.T) {
				db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), NoSync: true, BloomBitsPerKey: tc.bits, DisableReadCompactions: disabled})
				defer db.Close()
				put := func(i int) {
					if err := db.Put(fmt.Appendf(nil, "k%06d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
						t.Fatal(err)
					}
				}
				// Keys 0, 10, 20... in L6; keys 1, 11, 21... in one L0 table.
				for i := 0; i < 100_000; i += 10 {
					put(i)
				}
				if err := db.Compact(); err != nil {
					t.Fatal(err)
				}
				for i := 1; i < 100_000; i += 100 {
					put(i)
				}
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
				if m := db.Metrics(); m.Levels[0].Files != 1 || m.Levels[6].Files == 0 {
					t.Fatalf("before the reads, want one L0 table above L6:\n%s", m)
				}
				// Absent keys 3, 13, 23... lie in both tables' ranges.
				for i := range tc.lookups {
					if _, err := db.Get(fmt.Appendf(nil, "k%06d", 3+10*(i%10_000))); err != ErrNotFound {
						t.Fatalf("Get of an absent key: %v", err)
					}
				}
				if disabled {
					settleCompactions(t, db)
					if m := db.Metrics(); m.ReadCompactions != 0 || m.Levels[0].Files != 1 {
						t.Fatalf("with read compactions disabled, want the L0 table left in place:\n%s", m)
					}
					return
				}
				// The compaction runs in the background: wait for it, for
				// at most a minute.
				deadline := time.Now().Add(time.Minute)
				m := db.Metrics()
				for m.ReadCompactions == 0 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
					m = db.Metrics()
				}
				if m.ReadCompactions != 1 || m.Levels[0].Files != 0 || m.CompactionDue {
					t.Fatalf("after %d Gets of absent keys in its range, want the L0 table compacted into L6 by one read compaction:\n%s", tc.lookups, m)
				}
				for i := 0; i < 100_000; i += 10 {
					for _, k := range []int{i, i + 1} {
						got, err := db.Get(fmt.Appendf(nil, "k%06d", k))
						switch {
						case k%100 == 1 || k%10 == 0:
							if want := fmt.Sprintf("v%d", k); err != nil || string(got) != want {
								t.Fatalf("Get(k%06d) = %q, %v; want %q", k, got, err, want)
							}
						case err != ErrNotFound:
							t.Fatalf("Get(k%06d) = %q, %v; want ErrNotFound", k, got, err)
						}
					}
				}
			})
		}
	}
}

// TestReadAllowanceCountsOverlap checks that a table's read allowance
// counts what its merge would rewrite: an L0 table over several MiB of L6
// is not compacted for its reads at the 100 wasted reads a table of its
// own size alone would allow, nor one short of its whole allowance, and
// is compacted in the background once its count passes it.
func TestReadAllowanceCountsOverlap(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), NoSync: true, BloomBitsPerKey: NoFilter})
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 200)
	put := func(i int) {
		for j := range value {
			value[j] = byte(rng.Uint32()) // incompressible, so L6 takes about 10 MiB
		}
		if err := db.Put(fmt.Appendf(nil, "k%06d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	// Keys 0, 10, 20... in L6; keys 1, 1001, 2001... in one small L0
	// table whose range spans all of L6.
	for i := 0; i < 500_000; i += 10 {
		put(i)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 500_000; i += 1000 {
		put(i)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.Levels[0].Files != 1 || m.Levels[6].Files == 0 {
		t.Fatalf("before the reads, want one L0 table above L6:\n%s", m)
	}
	allowance := compaction.ReadAllowance(uint64(m.Levels[0].Bytes + m.Levels[6].Bytes))
	if least := compaction.ReadAllowance(uint64(m.Levels[0].Bytes)); allowance < least+50 {
		t.Fatalf("the merge's allowance %d is too close to the table's own %d for this test", allowance, least)
	}
	// Without a filter every Get of an absent key in the table's range
	// reads one of its blocks for nothing.
	next := 0
	missAll := func(n int) {
		for range n {
			if _, err := db.Get(fmt.Appendf(nil, "k%06d", 3+10*(next%50_000))); err != ErrNotFound {
				t.Fatalf("Get of an absent key: %v", err)
			}
			next++
		}
	}
	missAll(int(allowance) - 1)
	settleCompactions(t, db)
	if m := db.Metrics(); m.ReadCompactions != 0 || m.Levels[0].Files != 1 {
		t.Fatalf("one wasted read short of the allowance %d, want the L0 table left in place:\n%s", allowance, m)
	}
	missAll(1 + int(allowance)/10)
	deadline := time.Now().Add(time.Minute)
	for m = db.Metrics(); m.ReadCompactions == 0 && time.Now().Before(deadline); m = db.Metrics() {
		time.Sleep(time.Millisecond)
	}
	if m.ReadCompactions != 1 || m.Levels[0].Files != 0 {
		t.Fatalf("past its allowance %d, want the L0 table compacted into L6 by one read compaction:\n%s", allowance, m)
	}
}
