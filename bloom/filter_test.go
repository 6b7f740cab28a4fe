package bloom

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/shale-db/shale/internal/filtertest"
)

// TestFilterMeetsRate: New(n, p) sizes for the blocked layout's own rate, so
// the measured rate is within tolerance of an expected rate that is at most
// p, not of the (lower) textbook rate.
func TestFilterMeetsRate(t *testing.T) {
	const n, probes = 100_000, 1_000_000
	ks := filtertest.Sets[0]
	absent := ks.Hashes(n, n+probes)
	for _, p := range []float64{0.1, 0.01, 0.001} {
		f := New(n, p)
		added := ks.Hashes(0, n)
		for _, h := range added {
			f.bits.add(h)
		}
		want := blockedRate(f.BitsPerKey(), f.K())
		if want > p {
			t.Fatalf("p=%v: expected rate %v at %.3f bits/key, k=%d", p, want, f.BitsPerKey(), f.K())
		}
		what := fmt.Sprintf("New(%d, %v): %.3f bits/key, k=%d", n, p, f.BitsPerKey(), f.K())
		checkMeasuredRate(t, what, filtertest.PositiveRate(f.bits, absent), want, probes)
		for i, h := range added {
			if !f.bits.MayContain(h) {
				t.Fatalf("p=%v: item %d is missing", p, i)
			}
		}
	}
}

func TestFilterMarshal(t *testing.T) {
	f := New(1000, 0.01)
	for i := range 1000 {
		f.Add(filtertest.Sets[1].Key(i))
	}
	data, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var g Filter
	if err := g.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	again, _ := g.MarshalBinary()
	if !bytes.Equal(data, again) || g.K() != f.K() || g.BitsPerKey() != f.BitsPerKey() {
		t.Fatal("marshal, unmarshal, marshal changed the filter")
	}
	// The same bytes are a table filter: the policy decodes them.
	tf, err := NewPolicy(10).Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if !g.MayContain(filtertest.Sets[1].Key(i)) || !tf.MayContain(filtertest.Sets[1].Hashes(i, i+1)[0]) {
			t.Fatalf("item %d is missing after unmarshalling", i)
		}
	}
	// UnmarshalBinary copies: changing data afterwards changes nothing.
	clear(data)
	if !g.MayContain(filtertest.Sets[1].Key(0)) {
		t.Fatal("Filter shares the bytes it was unmarshalled from")
	}
}

func TestFilterSizing(t *testing.T) {
	for _, c := range []struct {
		n int
		p float64
	}{{0, 0.01}, {1, 0.5}, {1000, 0.01}, {1_000_000, 0.001}} {
		f := New(c.n, c.p)
		bpk, k := blockedSizing(c.p)
		want := math.Ceil(float64(max(c.n, 1))*bpk/lineCells) * lineCells / float64(max(c.n, 1))
		if f.BitsPerKey() != want || f.K() != k {
			t.Errorf("New(%d, %v): %v bits/key, k=%d; want %v, %d", c.n, c.p, f.BitsPerKey(), f.K(), want, k)
		}
	}
}

// TestNewWithBitsPerKey: a filter sized by bits per key is byte for byte the
// table policy's filter of the same keys at the same bits per key.
func TestNewWithBitsPerKey(t *testing.T) {
	for _, bits := range []int{1, 5, 10, 15} {
		const n = 3000
		ks := filtertest.Sets[0]
		f := NewWithBitsPerKey(n, float64(bits))
		w := NewPolicy(bits).NewWriter()
		for i := range n {
			f.Add(ks.Key(i))
			w.AddHash(ks.Hashes(i, i+1)[0])
		}
		got, _ := f.MarshalBinary()
		want, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d bits per key: NewWithBitsPerKey (%d bytes, k=%d) differs from the table policy's filter (%d bytes)",
				bits, len(got), f.K(), len(want))
		}
	}
	for _, bits := range []float64{0.5, 2000, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewWithBitsPerKey(1, %v) did not panic", bits)
				}
			}()
			NewWithBitsPerKey(1, bits)
		}()
	}
}
