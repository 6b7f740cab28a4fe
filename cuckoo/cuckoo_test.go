package cuckoo

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/filtertest"
)

// fill adds keys [0, n) of ks to c and fails tb on the first ErrFull.
func fill(tb testing.TB, c *Filter, ks *filtertest.Set, n int) {
	tb.Helper()
	for i := range n {
		if err := c.Add(ks.Key(i)); err != nil {
			tb.Fatalf("add %d of %d: %v", i, n, err)
		}
	}
}

// rate returns the share of keys [from, to) of ks that c may contain.
func rate(c *Filter, ks *filtertest.Set, from, to int) float64 {
	n := 0
	for i := from; i < to; i++ {
		if c.MayContain(ks.Key(i)) {
			n++
		}
	}
	return float64(n) / float64(to-from)
}

// TestRate fills filters of 100,000 items at 8, 12 and 16-bit fingerprints
// (sequential keys at 12 only) to the planned load, checks that every item
// is found, and that the false-positive rate over 500,000 items never
// added is the expected one: a probe compares with the 8 slots of two
// buckets, each holding a given fingerprint with probability load/(2^f-1).
func TestRate(t *testing.T) {
	const n, probes = 100_000, 500_000
	for _, ks := range filtertest.Sets {
		sizes := []int{8, 12, 16}
		if ks.Name == "seq" {
			sizes = []int{12}
		}
		for _, f := range sizes {
			c := New(n, f)
			fill(t, c, ks, n)
			what := fmt.Sprintf("%s keys, %d-bit fingerprints", ks.Name, f)
			if r := rate(c, ks, 0, n); r != 1 {
				t.Fatalf("%s: only %.4f%% of items found", what, 100*r)
			}
			want := 1 - math.Pow(1-c.LoadFactor()/float64(uint64(1)<<f-1), 2*bucketSlots)
			got := rate(c, ks, n, n+probes)
			sigma := math.Sqrt(want * (1 - want) / probes)
			if tol := 4*sigma + 0.02*want; math.Abs(got-want) > tol {
				t.Errorf("%s: measured false-positive rate %.4f%%, want %.4f%% ± %.4f%%", what, 100*got, 100*want, 100*tol)
			}
			t.Logf("%s: load %.3f, %.2f bits/item, false positives %.4f%% (expected %.4f%%)", what, c.LoadFactor(), c.BitsPerItem(), 100*got, 100*want)
		}
	}
}

// TestLoadBeforeFull adds items until the first ErrFull and checks the load
// reached: at least loadTarget, which New plans for. The failed Add must
// leave the filter as it was: every item added before it still found, the
// count unchanged, the bytes the same. Filters of 1,000 items at each
// fingerprint size, and one of 100,000.
func TestLoadBeforeFull(t *testing.T) {
	for _, f := range []int{8, 12, 16} {
		capacities := []int{1000}
		if f == 12 {
			capacities = append(capacities, 100_000)
		}
		for _, capacity := range capacities {
			c := New(capacity, f)
			ks := filtertest.Sets[0]
			added := 0
			var before []byte
			for ; added < 2*capacity; added++ {
				if c.LoadFactor() > 0.94 { // the snapshot is costly: only near the end
					before, _ = c.MarshalBinary()
				}
				if err := c.Add(ks.Key(added)); err != nil {
					if !errors.Is(err, ErrFull) {
						t.Fatal(err)
					}
					if after, _ := c.MarshalBinary(); !bytes.Equal(before, after) {
						t.Fatalf("f=%d: a failed Add changed the filter", f)
					}
					break
				}
			}
			t.Logf("f=%d, capacity %d: first failure at load %.4f", f, capacity, c.LoadFactor())
			if c.LoadFactor() < loadTarget || c.Len() != added {
				t.Errorf("f=%d, capacity %d: first failure at load %.4f (%d items, Len %d), want at least %.2f",
					f, capacity, c.LoadFactor(), added, c.Len(), loadTarget)
			}
			if r := rate(c, ks, 0, added); r != 1 {
				t.Fatalf("f=%d: after the failed Add, only %.4f%% of items found", f, 100*r)
			}
		}
	}
}

// TestRemove adds 20,000 items, removes the even ones and checks that the
// odd ones are all still found, that the even ones are gone but for false
// positives, and that adding them back works.
func TestRemove(t *testing.T) {
	const n = 20_000
	ks := filtertest.Sets[1]
	c := New(n, 12)
	fill(t, c, ks, n)
	for i := 0; i < n; i += 2 {
		if !c.Remove(ks.Key(i)) {
			t.Fatalf("Remove of item %d returned false", i)
		}
	}
	if c.Len() != n/2 {
		t.Fatalf("Len %d after removing half of %d", c.Len(), n)
	}
	still := 0
	for i := range n {
		switch {
		case i%2 == 1 && !c.MayContain(ks.Key(i)):
			t.Fatalf("item %d, never removed, is not found", i)
		case i%2 == 0 && c.MayContain(ks.Key(i)):
			still++
		}
	}
	if still > n/2/100 {
		t.Errorf("%d of %d removed items still found", still, n/2)
	}
	for i := 0; i < n; i += 2 {
		if err := c.Add(ks.Key(i)); err != nil {
			t.Fatalf("adding back item %d: %v", i, err)
		}
	}
	if c.Len() != n || rate(c, ks, 0, n) != 1 {
		t.Fatalf("after adding back: Len %d, %.2f%% found", c.Len(), 100*rate(c, ks, 0, n))
	}
}

// TestRepeats adds one item until Add fails: 8 copies fit in its two
// buckets (4 if they are one), the ninth does not; then as many Removes
// as Adds that succeeded empty the filter, and one more returns false.
func TestRepeats(t *testing.T) {
	c := New(1000, 8)
	item := []byte("again")
	fp, i := c.locate(item)
	want := 2 * bucketSlots
	if c.alt(i, fp) == i {
		want = bucketSlots
	}
	added := 0
	for c.Add(item) == nil {
		added++
		if added > 100 {
			t.Fatal("Add of one item never fails")
		}
	}
	if added != want {
		t.Fatalf("%d copies added, want %d", added, want)
	}
	for range added {
		if !c.Remove(item) {
			t.Fatal("Remove of a copy returned false")
		}
	}
	if c.Remove(item) || c.Len() != 0 || c.MayContain(item) {
		t.Fatalf("after removing every copy: Len %d, MayContain %v", c.Len(), c.MayContain(item))
	}
}

// TestRemoveNeverAdded shows what the doc of Filter says: removing an item
// never added changes nothing if MayContain is false for it, and otherwise
// removes another item's fingerprint, making that item a false negative.
func TestRemoveNeverAdded(t *testing.T) {
	const n = 5000
	ks := filtertest.Sets[0]
	c := New(n, 8)
	fill(t, c, ks, n)
	before, _ := c.MarshalBinary()
	var victim []byte // a never-added item that MayContain claims
	for i := n; victim == nil && i < n+100_000; i++ {
		if c.MayContain(ks.Key(i)) {
			victim = ks.Key(i)
			continue
		}
		if c.Remove(ks.Key(i)) {
			t.Fatalf("Remove of item %d, not contained, returned true", i)
		}
	}
	if after, _ := c.MarshalBinary(); !bytes.Equal(before, after) {
		t.Fatal("Remove of items not contained changed the filter")
	}
	if victim == nil {
		t.Fatal("no false positive among 100,000 probes")
	}
	if !c.Remove(victim) {
		t.Fatal("Remove of a false positive returned false")
	}
	if r := rate(c, ks, 0, n); r == 1 {
		t.Fatal("removing a false positive left every added item found")
	}
}

// TestMarshal round-trips a filter, and checks that corrupt headers and
// counts are refused with ErrCorruption.
func TestMarshal(t *testing.T) {
	c := New(1000, 12)
	fill(t, c, filtertest.Sets[1], 900)
	data, _ := c.MarshalBinary()
	var d Filter
	if err := d.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if again, _ := d.MarshalBinary(); !bytes.Equal(data, again) || d.Len() != 900 {
		t.Fatal("the round trip changed the filter")
	}
	if r := rate(&d, filtertest.Sets[1], 0, 900); r != 1 {
		t.Fatalf("decoded filter finds %.2f%% of items", 100*r)
	}
	for _, tc := range []struct {
		what   string
		mangle func(b []byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:10] }},
		{"version", func(b []byte) []byte { b[0] = 2; return b }},
		{"odd bits", func(b []byte) []byte { b[1] = 9; return b }},
		{"no buckets", func(b []byte) []byte { clear(b[2:6]); return b }},
		{"length", func(b []byte) []byte { return b[:len(b)-1] }},
		{"count", func(b []byte) []byte { b[6]++; return b }},
		{"emptied bucket", func(b []byte) []byte {
			for i := headerLen; i < len(b); i += 6 { // 12-bit fingerprints: 6 bytes a bucket
				if !bytes.Equal(b[i:i+6], make([]byte, 6)) {
					clear(b[i : i+6])
					break
				}
			}
			return b
		}},
	} {
		err := d.UnmarshalBinary(tc.mangle(bytes.Clone(data)))
		if !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s: got %v, want a corruption error", tc.what, err)
		}
	}
}
