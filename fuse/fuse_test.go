package fuse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	tablefilter "github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/filtertest"
)

// buildFilter returns the decoded filter of hashes and its encoding.
func buildFilter(tb testing.TB, hashes []uint64) (tablefilter.Filter, []byte) {
	tb.Helper()
	w := NewPolicy().NewWriter()
	for _, h := range hashes {
		w.AddHash(h)
	}
	data := filtertest.Finish(tb, w)
	f, err := NewPolicy().Decode(data)
	if err != nil {
		tb.Fatal(err)
	}
	return f, data
}

func TestSeqKeys(t *testing.T) {
	for _, i := range []int{0, 7, 1234567890} {
		if got, want := string(filtertest.Sets[1].Key(i)), fmt.Sprintf("key%010d", i); got != want {
			t.Fatalf("key %d is %q, want %q", i, got, want)
		}
	}
}

func TestNoFalseNegatives(t *testing.T) {
	sizes := []int{1000, 10_000, 200_000}
	for n := range 300 {
		sizes = append(sizes, n)
	}
	for _, ks := range filtertest.Sets {
		for _, n := range sizes {
			hs := ks.Hashes(0, n)
			f, _ := buildFilter(t, hs)
			for i, h := range hs {
				if !f.MayContain(h) {
					t.Fatalf("%s keys, n=%d: key %d is missing", ks.Name, n, i)
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
	for _, ks := range filtertest.Sets {
		f, data := buildFilter(t, ks.Hashes(0, n))
		got := filtertest.PositiveRate(f, ks.Hashes(n, n+probes))
		tol := 4*math.Sqrt(want*(1-want)/probes) + 0.02*want
		if math.Abs(got-want) > tol {
			t.Errorf("%s keys: measured false-positive rate %.4f%%, want %.4f%% ± %.4f%%", ks.Name, 100*got, 100*want, 100*tol)
		}
		t.Logf("%s keys: %.3f bits/key, measured false-positive rate %.4f%%", ks.Name, float64(8*len(data))/n, 100*got)
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
		_, attempts, err := build(filtertest.Sets[0].Hashes(0, n), paramsFor(n))
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
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
	hs := filtertest.Sets[0].Hashes(0, 10_000)
	tight := params{segmentLog: 9, segmentCount: 10_000/512 - 2}
	data, attempts, err := build(hs, tight)
	if err != nil {
		t.Fatal(err)
	}
	if attempts <= attemptsPerSize {
		t.Fatalf("built at %.2f slots a key after %d seeds", float64(tight.arrayLength())/10_000, attempts)
	}
	f, err := NewPolicy().Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if r := filtertest.PositiveRate(f, hs); r != 1 {
		t.Fatalf("only %.2f%% of keys found", 100*r)
	}
	t.Logf("%d seeds, %.3f bits/key", attempts, float64(8*len(data))/10_000)
}

// TestBuildFails gives build an array far too small to peel: a third of a
// slot a key, still below one after every growth, and each key needs a slot
// of its own to be peeled from. After every seed it returns an error, not a
// panic, for the table writer to answer.
func TestBuildFails(t *testing.T) {
	hs := filtertest.Sets[0].Hashes(0, 3000)
	hopeless := params{segmentLog: 4, segmentCount: 3000 / 16 / 3}
	data, attempts, err := build(hs, hopeless)
	if err == nil || data != nil || attempts != maxAttempts {
		t.Fatalf("build of %d keys in %d slots: %d bytes after %d seeds, error %v; want an error after %d seeds",
			len(hs), hopeless.arrayLength(), len(data), attempts, err, maxAttempts)
	}
	t.Log(err)
}

// TestRepeatedHashes: repeats, adjacent or not, cost nothing in size.
func TestRepeatedHashes(t *testing.T) {
	hs := filtertest.Sets[1].Hashes(0, 1000)
	w := NewPolicy().NewWriter()
	for range 3 {
		for _, h := range hs {
			w.AddHash(h)
			w.AddHash(h)
		}
	}
	data := filtertest.Finish(t, w)
	_, unique := buildFilter(t, hs)
	if len(data) != len(unique) {
		t.Fatalf("repeats: %d bytes, without: %d", len(data), len(unique))
	}
	f, err := NewPolicy().Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if r := filtertest.PositiveRate(f, hs); r != 1 {
		t.Fatalf("only %.2f%% of keys found", 100*r)
	}
}

func TestEmptyFilter(t *testing.T) {
	f, data := buildFilter(t, nil)
	if len(data) != headerLen {
		t.Fatalf("empty filter is %d bytes", len(data))
	}
	if r := filtertest.PositiveRate(f, filtertest.Sets[0].Hashes(0, 10000)); r != 0 {
		t.Fatalf("empty filter may contain %.2f%% of keys", 100*r)
	}
}

func TestPolicyName(t *testing.T) {
	if got := NewPolicy().Name(); got != "shale.fuse8.v1" {
		t.Fatalf("Name() = %q", got)
	}
}

func TestProbeDoesNotAllocate(t *testing.T) {
	hs := filtertest.Sets[0].Hashes(0, 1000)
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
	_, valid := buildFilter(t, filtertest.Sets[0].Hashes(0, 100))
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
