package bloom

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/filtertest"
)

// TestCountingNoFalseNegatives runs random adds and removes against a
// multiset: every item added more often than removed must be found. Items
// come from a small pool so that they are added many times, and the filter
// is small so that counters are shared and some saturate.
func TestCountingNoFalseNegatives(t *testing.T) {
	const pool, ops = 2000, 200_000
	r := rand.New(rand.NewPCG(1, 2))
	c := NewCounting(500, 0.05)
	hs := filtertest.Sets[1].Hashes(0, pool)
	count := make([]int, pool)
	saturated := 0
	for op := range ops {
		i := r.IntN(pool)
		if r.IntN(2) == 0 {
			c.add(hs[i])
			count[i]++
		} else if count[i] > 0 {
			if !c.remove(hs[i]) {
				t.Fatalf("op %d: Remove of item %d (count %d) returned false", op, i, count[i])
			}
			count[i]--
		}
		if op%1000 == 0 {
			for j, n := range count {
				if n > 0 && !c.mayContain(hs[j]) {
					t.Fatalf("op %d: item %d, added %d more times than removed, is missing", op, j, n)
				}
			}
		}
	}
	for _, b := range c.counters {
		if b&15 == 15 || b>>4 == 15 {
			saturated++
		}
	}
	if saturated == 0 {
		t.Fatal("no counter saturated: the test does not cover saturation")
	}
	t.Logf("%d saturated counters", saturated)
}

// TestCountingSaturation: a counter at 15 stays there, so an item added 20
// times and removed 20 times is still reported (a false positive), and an
// item sharing those counters is never lost.
func TestCountingSaturation(t *testing.T) {
	c := NewCounting(100, 0.01)
	key := []byte("hot")
	for range 20 {
		c.Add(key)
	}
	for range 20 {
		if !c.Remove(key) {
			t.Fatal("Remove returned false")
		}
	}
	if !c.MayContain(key) {
		t.Fatal("saturated counters were decremented")
	}
}

func TestCountingRemoveAbsent(t *testing.T) {
	c := NewCounting(1000, 0.01)
	for i := range 1000 {
		c.Add(filtertest.Sets[0].Key(i))
	}
	before, _ := c.MarshalBinary()
	removed := 0
	for i := 1000; i < 2000; i++ {
		if c.Remove(filtertest.Sets[0].Key(i)) {
			removed++
		}
	}
	// About 1% of never-added items pass MayContain; Remove cannot tell
	// them apart and decrements. The rest are refused and change nothing.
	if removed > 50 {
		t.Fatalf("Remove of 1000 never-added items returned true %d times", removed)
	}
	if removed == 0 {
		after, _ := c.MarshalBinary()
		if string(after) != string(before) {
			t.Fatal("refused Removes changed the filter")
		}
	}
	t.Logf("%d of 1000 never-added items were false positives and removed", removed)
}

func TestCountingRate(t *testing.T) {
	const n, probes = 100_000, 1_000_000
	for _, p := range []float64{0.01, 0.001} {
		c := NewCounting(n, p)
		for _, h := range filtertest.Sets[0].Hashes(0, n) {
			c.add(h)
		}
		absent := filtertest.Sets[0].Hashes(n, n+probes)
		hits := 0
		for _, h := range absent {
			if c.mayContain(h) {
				hits++
			}
		}
		bpk := float64(2*len(c.counters)) / n // counters per key
		checkMeasuredRate(t, fmt.Sprintf("counting, p=%v", p), float64(hits)/probes, blockedRate(bpk, c.k), probes)
	}
}

// TestCountingMemory: 4 bits a counter where Filter has 1 bit a cell, for
// the same number of cells.
func TestCountingMemory(t *testing.T) {
	for _, n := range []int{1, 1000, 123_456} {
		f, c := New(n, 0.01), NewCounting(n, 0.01)
		if len(c.counters) != 4*len(f.bits.lines) || c.k != f.K() {
			t.Errorf("n=%d: counting filter %d bytes, k=%d; filter %d bytes, k=%d", n, len(c.counters), c.k, len(f.bits.lines), f.K())
		}
	}
}

func TestCountingMarshal(t *testing.T) {
	c := NewCounting(1000, 0.01)
	for i := range 1000 {
		c.Add(filtertest.Sets[1].Key(i))
	}
	data, _ := c.MarshalBinary()
	var d Counting
	if err := d.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if !d.Remove(filtertest.Sets[1].Key(i)) {
			t.Fatalf("item %d is missing after unmarshalling", i)
		}
	}
	// A counting filter is not a bit filter, and the other way round.
	if _, err := NewPolicy(10).Decode(data); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("Decode of a counting filter: %v", err)
	}
	bits, _ := New(1000, 0.01).MarshalBinary()
	if err := d.UnmarshalBinary(bits); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("UnmarshalBinary of a bit filter: %v", err)
	}
}
