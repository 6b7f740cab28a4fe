package rangefilter

import (
	"bytes"
	"encoding/binary"
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

// TestEmptyFilter checks that a filter of no keys is a few bytes at any
// bits per key, answers "no" to every range, and round-trips, alone and as
// a Builder's KeyFilter.
func TestEmptyFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, bpk := range []int{MinBitsPerKey, 24, 30, MaxBitsPerKey} {
		f, err := New(nil, bpk, rng.Uint64())
		if err != nil {
			t.Fatal(err)
		}
		data, _ := f.MarshalBinary()
		if len(data) > 8 || f.SizeBytes() > 8 {
			t.Fatalf("%d bits per key: %d bytes encoded, %d in memory", bpk, len(data), f.SizeBytes())
		}
		var g Filter
		if err := g.UnmarshalBinary(data); err != nil {
			t.Fatalf("%d bits per key: %v", bpk, err)
		}
		b, err := NewBuilder(&Options{BitsPerKey: bpk})
		if err != nil {
			t.Fatal(err)
		}
		enc, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) > 16 {
			t.Fatalf("%d bits per key: Builder.Finish of no keys is %d bytes", bpk, len(enc))
		}
		kf, err := Decode(enc, nil)
		if err != nil {
			t.Fatalf("%d bits per key: %v", bpk, err)
		}
		for range 1000 {
			lo, hi := rng.Uint64(), rng.Uint64()
			lo, hi = min(lo, hi), max(lo, hi)
			if f.MayContain(lo, hi) || g.MayContain(lo, hi) || f.MayContain(0, 1<<64-1) {
				t.Fatalf("%d bits per key: [%d, %d]: a filter of no keys said maybe", bpk, lo, hi)
			}
			klo, khi := fmt.Appendf(nil, "%x", lo), fmt.Appendf(nil, "%x", hi)
			if kf.MayContain(klo, khi) || kf.MayContain(nil, []byte{0xff, 0xff}) {
				t.Fatalf("%d bits per key: [%s, %s): a KeyFilter of no keys said maybe", bpk, klo, khi)
			}
		}
	}
}

// oldEmptyFilter is a filter of no keys as version 1 encoded it: n = 0 and
// a high vector of r zero bits, r = 2^(bitsPerKey-2).
func oldEmptyFilter(bitsPerKey int) []byte {
	r := uint64(1) << (bitsPerKey - 2)
	data := []byte{formatVersion}
	for _, v := range []uint64{0, r, splitmix(7)%(mersenne61-1) + 1, splitmix(8) % mersenne61} {
		data = binary.LittleEndian.AppendUint64(data, v)
	}
	return append(data, make([]byte, 8*((r+63)/64))...)
}

// TestOldEmptyFilter checks that version 1's filter of no keys still
// decodes, to a filter that answers "no" and re-encodes as version 2, and
// that one with a bit set in its high vector is refused.
func TestOldEmptyFilter(t *testing.T) {
	for _, bpk := range []int{MinBitsPerKey, 10, 24} {
		data := oldEmptyFilter(bpk)
		var f Filter
		if err := f.UnmarshalBinary(data); err != nil {
			t.Fatalf("%d bits per key: %v", bpk, err)
		}
		if f.MayContain(0, 1<<64-1) || f.MayContain(0, 0) || f.MayContain(1<<40, 1<<40+15) {
			t.Fatalf("%d bits per key: the decoded filter of no keys said maybe", bpk)
		}
		if again, _ := f.MarshalBinary(); !bytes.Equal(again, []byte{formatEmpty}) {
			t.Fatalf("%d bits per key: re-encoded as %x", bpk, again)
		}
		// As a Builder wrote it: the dense map of no keys, then the filter.
		kf, err := Decode(append([]byte{0, 2, 0, 0}, data...), nil)
		if err != nil {
			t.Fatalf("%d bits per key: %v", bpk, err)
		}
		if kf.MayContain(nil, []byte{0xff}) {
			t.Fatalf("%d bits per key: the decoded KeyFilter of no keys said maybe", bpk)
		}
		bad := slices.Clone(data)
		bad[len(bad)-1] = 0x80
		if err := f.UnmarshalBinary(bad); err == nil {
			t.Fatalf("%d bits per key: a filter of no codes with a bit set was accepted", bpk)
		}
		if err := f.UnmarshalBinary(data[:len(data)-8]); err == nil {
			t.Fatalf("%d bits per key: a short filter of no codes was accepted", bpk)
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
	for _, v := range []byte{0, formatEmpty, 3} {
		bad := slices.Clone(data)
		bad[0] = v
		if err := g.UnmarshalBinary(bad); err == nil {
			t.Fatalf("a filter of keys with version byte %d was accepted", v)
		}
	}
	// A flipped bit in the high words changes the count of values.
	bad := slices.Clone(data)
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
