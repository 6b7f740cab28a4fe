package rangefilter

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNoFalseNegatives checks every range that holds a key answers true,
// over random, clustered and extreme keys.
func TestNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := map[string][]uint64{
		"random":     randomKeys(rng, 1000),
		"sequential": sequentialKeys(0, 1, 1000),
		"extremes":   {0, 1, 1<<64 - 1, 1<<64 - 2, 1 << 63},
		"one":        {42},
	}
	for name, keys := range sets {
		for _, bpk := range []int{MinBitsPerKey, 10, 16, MaxBitsPerKey} {
			f, err := New(keys, bpk, rng.Uint64())
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				for _, w := range []uint64{0, 1, 7, 100, 1 << 20} {
					lo, hi := k-min(k, w/2), k+min(1<<64-1-k, w-w/2)
					if !f.MayContain(lo, hi) {
						t.Fatalf("%s at %d bits/key: [%d, %d] holds key %d, filter says no", name, bpk, lo, hi, k)
					}
				}
			}
		}
	}
}

func TestEmptyAndInvalid(t *testing.T) {
	f, err := New(nil, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.MayContain(0, 1<<64-1) {
		t.Fatal("a filter of no keys said maybe")
	}
	g, _ := New([]uint64{5}, 10, 0)
	if g.MayContain(6, 5) {
		t.Fatal("an empty range (lo > hi) said maybe")
	}
	if !g.MayContain(0, 1<<64-1) {
		t.Fatal("a range wider than MaxRange must say maybe")
	}
	for _, bpk := range []int{MinBitsPerKey - 1, MaxBitsPerKey + 1} {
		if _, err := New([]uint64{1}, bpk, 0); err == nil {
			t.Fatalf("%d bits per key accepted", bpk)
		}
	}
}

// TestMarshalRoundTrip checks that a decoded filter answers every query as
// the original does, and that its bytes survive a second round.
func TestMarshalRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 63, 64, 65, 2000} {
		keys := randomKeys(rng, n)
		f, err := New(keys, 12, rng.Uint64())
		if err != nil {
			t.Fatal(err)
		}
		data, _ := f.MarshalBinary()
		var g Filter
		if err := g.UnmarshalBinary(data); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		again, _ := g.MarshalBinary()
		if !bytes.Equal(data, again) {
			t.Fatalf("n=%d: re-encoding differs", n)
		}
		for range 5000 {
			lo := rng.Uint64()
			if n > 0 && rng.IntN(2) == 0 {
				lo = keys[rng.IntN(n)] - uint64(rng.IntN(8))
			}
			hi := lo + uint64(rng.IntN(64))
			if f.MayContain(lo, hi) != g.MayContain(lo, hi) {
				t.Fatalf("n=%d: [%d, %d]: decoded filter answers otherwise", n, lo, hi)
			}
		}
	}
}

// TestUnmarshalRefuses flips, truncates and extends a valid encoding; every
// variant either decodes to a filter that still answers or is refused.
func TestUnmarshalRefuses(t *testing.T) {
	f, _ := New(sequentialKeys(100, 3, 300), 10, 9)
	data, _ := f.MarshalBinary()
	var g Filter
	for i := range len(data) {
		if err := g.UnmarshalBinary(data[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", i)
		}
	}
	if err := g.UnmarshalBinary(append(slices.Clone(data), 0)); err == nil {
		t.Fatal("a trailing byte was accepted")
	}
	bad := slices.Clone(data)
	bad[0] = 2
	if err := g.UnmarshalBinary(bad); err == nil {
		t.Fatal("version 2 was accepted")
	}
	// A flipped bit in the high words changes the count of values.
	bad = slices.Clone(data)
	bad[len(bad)-20] ^= 0x10
	if err := g.UnmarshalBinary(bad); err == nil {
		t.Fatal("a flipped bit in the high words was accepted")
	}
}

func randomKeys(rng *rand.Rand, n int) []uint64 {
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	return keys
}

func sequentialKeys(start, step uint64, n int) []uint64 {
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = start + uint64(i)*step
	}
	return keys
}

func ExampleFilter() {
	f, _ := New([]uint64{10, 20, 30}, 16, 1)
	fmt.Println(f.MayContain(20, 20), f.MayContain(21, 29))
	// Output: true false
}

func ExampleBuilder() {
	b, _ := NewBuilder(nil) // the dense map, DefaultBitsPerKey
	for i := 0; i < 1000; i += 32 {
		b.Add(fmt.Appendf(nil, "user%08d", i))
	}
	data, _ := b.Finish()
	f, _ := Decode(data, nil)
	// [user00000064, user00000065) holds a key; [user00000065, user00000096)
	// lies between two.
	fmt.Println(f.MayContain([]byte("user00000064"), []byte("user00000065")),
		f.MayContain([]byte("user00000065"), []byte("user00000096")))
	// Output: true false
}
