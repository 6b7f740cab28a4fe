package fuse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/shale-db/shale/internal/base"
)

// keySet names a family of keys: key i is a function of i, so keys [0, n)
// can be added and keys [n, n+m) probed as keys never added.
type keySet struct {
	name string
	key  func(i int) []byte

	once   sync.Once
	cached []uint64 // the hashes of keys [0, cachedKeys)
}

var keySets = []*keySet{
	// 16 random bytes, from a generator seeded with i.
	{name: "random", key: func(i int) []byte {
		var r rand.PCG
		r.Seed(uint64(i), 0x5eed)
		b := binary.LittleEndian.AppendUint64(nil, r.Uint64())
		return binary.LittleEndian.AppendUint64(b, r.Uint64())
	}},
	// Sequential decimal keys, fmt.Sprintf("key%010d", i).
	{name: "seq", key: func(i int) []byte {
		b := []byte("key0000000000")
		for j := len(b) - 1; i > 0; j-- {
			b[j] = byte('0' + i%10)
			i /= 10
		}
		return b
	}},
}

// cachedKeys is how many hashes of each key set are computed once and
// shared by the tests: enough for 200,000 keys added and 1,000,000 probed.
const cachedKeys = 1_200_000

// hashes returns the FilterHash of keys [from, to) of ks. The slice may be
// shared; callers must not modify it.
func (ks *keySet) hashes(from, to int) []uint64 {
	if to <= cachedKeys {
		ks.once.Do(func() { ks.cached = ks.compute(0, cachedKeys) })
		return ks.cached[from:to:to]
	}
	return ks.compute(from, to)
}

func (ks *keySet) compute(from, to int) []uint64 {
	hs := make([]uint64, 0, to-from)
	for i := from; i < to; i++ {
		hs = append(hs, base.FilterHash(ks.key(i)))
	}
	return hs
}

// buildFilter returns the decoded filter of hashes and its encoding.
func buildFilter(tb testing.TB, hashes []uint64) (base.Filter, []byte) {
	tb.Helper()
	w := NewPolicy().NewWriter()
	for _, h := range hashes {
		w.AddHash(h)
	}
	data := w.Finish()
	f, err := NewPolicy().Decode(data)
	if err != nil {
		tb.Fatal(err)
	}
	return f, data
}

func positiveRate(f base.Filter, hashes []uint64) float64 {
	n := 0
	for _, h := range hashes {
		if f.MayContain(h) {
			n++
		}
	}
	return float64(n) / float64(len(hashes))
}

func TestSeqKeys(t *testing.T) {
	for _, i := range []int{0, 7, 1234567890} {
		if got, want := string(keySets[1].key(i)), fmt.Sprintf("key%010d", i); got != want {
			t.Fatalf("key %d is %q, want %q", i, got, want)
		}
	}
}

func TestNoFalseNegatives(t *testing.T) {
	sizes := []int{1000, 10_000, 200_000}
	for n := range 300 {
		sizes = append(sizes, n)
	}
	for _, ks := range keySets {
		for _, n := range sizes {
			hs := ks.hashes(0, n)
			f, _ := buildFilter(t, hs)
			for i, h := range hs {
				if !f.MayContain(h) {
					t.Fatalf("%s keys, n=%d: key %d is missing", ks.name, n, i)
				}
			}
		}
	}
}

// TestFalsePositiveRate: with 8-bit fingerprints an absent key matches with
// probability 1/256. 200,000 keys added, 1,000,000 others probed; the
// tolerance is 4 standard deviations of the binomial count plus 2%.
func TestFalsePositiveRate(t *testing.T) {
	const n, probes = 200_000, 1_000_000
	const want = 1.0 / 256
	for _, ks := range keySets {
		f, data := buildFilter(t, ks.hashes(0, n))
		got := positiveRate(f, ks.hashes(n, n+probes))
		tol := 4*math.Sqrt(want*(1-want)/probes) + 0.02*want
		if math.Abs(got-want) > tol {
			t.Errorf("%s keys: measured false-positive rate %.4f%%, want %.4f%% ± %.4f%%", ks.name, 100*got, 100*want, 100*tol)
		}
		t.Logf("%s keys: %.3f bits/key, measured false-positive rate %.4f%%", ks.name, float64(8*len(data))/n, 100*got)
	}
}

// TestAttempts: how often a seed fails to peel, for every set size up to
// 2000 and a few large ones. Most sizes build at the first seed; none needs
// more than a few.
func TestAttempts(t *testing.T) {
	sizes := []int{10_000, 100_000}
	for n := 1; n <= 2000; n++ {
		sizes = append(sizes, n)
	}
	hist := map[int]int{}
	for _, n := range sizes {
		_, attempts := build(keySets[0].hashes(0, n), paramsFor(n))
		hist[attempts]++
		if attempts > attemptsPerSize {
			t.Errorf("n=%d: %d seeds", n, attempts)
		}
	}
	t.Logf("seeds tried: count of set sizes: %v", hist)
	if hist[1] < len(sizes)*9/10 {
		t.Errorf("only %d of %d sizes built at the first seed", hist[1], len(sizes))
	}
}

// TestRetries gives build an array too small to peel (one slot a key): it
// must fail at that size, grow, and still produce a filter without false
// negatives.
func TestRetries(t *testing.T) {
	hs := keySets[0].hashes(0, 10_000)
	tight := params{segmentLog: 9, segmentCount: 10_000/512 - 2}
	data, attempts := build(hs, tight)
	if attempts <= attemptsPerSize {
		t.Fatalf("built at %.2f slots a key after %d seeds", float64(tight.arrayLength())/10_000, attempts)
	}
	f, err := NewPolicy().Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if r := positiveRate(f, hs); r != 1 {
		t.Fatalf("only %.2f%% of keys found", 100*r)
	}
	t.Logf("%d seeds, %.3f bits/key", attempts, float64(8*len(data))/10_000)
}

// TestRepeatedHashes: repeats, adjacent or not, cost nothing in size.
func TestRepeatedHashes(t *testing.T) {
	hs := keySets[1].hashes(0, 1000)
	w := NewPolicy().NewWriter()
	for range 3 {
		for _, h := range hs {
			w.AddHash(h)
			w.AddHash(h)
		}
	}
	data := w.Finish()
	_, unique := buildFilter(t, hs)
	if len(data) != len(unique) {
		t.Fatalf("repeats: %d bytes, without: %d", len(data), len(unique))
	}
	f, err := NewPolicy().Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if r := positiveRate(f, hs); r != 1 {
		t.Fatalf("only %.2f%% of keys found", 100*r)
	}
}

func TestEmptyFilter(t *testing.T) {
	f, data := buildFilter(t, nil)
	if len(data) != headerLen {
		t.Fatalf("empty filter is %d bytes", len(data))
	}
	if r := positiveRate(f, keySets[0].hashes(0, 10000)); r != 0 {
		t.Fatalf("empty filter may contain %.2f%% of keys", 100*r)
	}
}

func TestPolicyName(t *testing.T) {
	if got := NewPolicy().Name(); got != "shale.fuse8.v1" {
		t.Fatalf("Name() = %q", got)
	}
}

func TestProbeDoesNotAllocate(t *testing.T) {
	hs := keySets[0].hashes(0, 1000)
	f, _ := buildFilter(t, hs)
	if allocs := testing.AllocsPerRun(100, func() {
		for _, h := range hs {
			f.MayContain(h)
		}
	}); allocs != 0 {
		t.Fatalf("MayContain allocates: %v allocs per 1000 probes", allocs)
	}
}

func TestParams(t *testing.T) {
	for _, c := range []struct {
		n         int
		log       uint8
		segments  uint32
		maxPerKey float64 // bits per key at most
	}{
		{1, 2, 1, 96}, {2, 2, 1, 48}, {100, 6, 1, 16},
		{10_000, 9, 23, 10.25}, {1_000_000, 13, 136, 9.05},
	} {
		p := paramsFor(c.n)
		if p.segmentLog != c.log || p.segmentCount != c.segments {
			t.Errorf("n=%d: segments of 2^%d, %d of them; want 2^%d, %d", c.n, p.segmentLog, p.segmentCount, c.log, c.segments)
		}
		if bpk := float64(8*p.arrayLength()) / float64(c.n); bpk > c.maxPerKey {
			t.Errorf("n=%d: %.2f bits/key", c.n, bpk)
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	_, valid := buildFilter(t, keySets[0].hashes(0, 100))
	_, empty := buildFilter(t, nil)
	edit := func(src []byte, f func(b []byte)) []byte {
		b := append([]byte(nil), src...)
		f(b)
		return b
	}
	cases := map[string][]byte{
		"nothing":          {},
		"header short":     valid[:headerLen-1],
		"version 2":        edit(valid, func(b []byte) { b[0] = 2 }),
		"segment 2^19":     edit(valid, func(b []byte) { b[9] = 19 }),
		"segment halved":   edit(valid, func(b []byte) { b[9]-- }),
		"segments +1":      edit(valid, func(b []byte) { b[10]++ }),
		"segments 0":       edit(valid, func(b []byte) { binary.LittleEndian.PutUint32(b[10:], 0) }),
		"length +1":        edit(valid, func(b []byte) { b[14]++ }),
		"one byte short":   valid[:len(valid)-1],
		"one byte more":    append(append([]byte(nil), valid...), 0),
		"empty with seed":  edit(empty, func(b []byte) { b[1] = 1 }),
		"empty with log":   edit(empty, func(b []byte) { b[9] = 1 }),
		"empty, segment 1": edit(empty, func(b []byte) { b[10] = 1 }),
	}
	for name, data := range cases {
		if _, err := NewPolicy().Decode(data); !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s: Decode error %v, want corruption", name, err)
		}
	}
}
