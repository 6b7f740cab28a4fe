package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/filtertest"
)

func TestNoFalseNegatives(t *testing.T) {
	for _, ks := range filtertest.Sets {
		for _, bpk := range []int{1, 5, 10, 15, 20} {
			for _, n := range []int{1, 2, 10, 1000, 50000} {
				hs := ks.Hashes(0, n)
				f := build(t, bpk, hs)
				for i, h := range hs {
					if !f.MayContain(h) {
						t.Fatalf("%s keys, %d bits/key, %d keys: key %d is missing", ks.Name, bpk, n, i)
					}
				}
			}
		}
	}
}

// TestFalsePositiveRate measures the table filter against the blocked
// layout's expected rate at 5, 10 and 15 bits per key, for random and
// sequential keys: 200,000 keys added, 1,000,000 others probed.
func TestFalsePositiveRate(t *testing.T) {
	const n, probes = 200_000, 1_000_000
	for _, ks := range filtertest.Sets {
		added, absent := ks.Hashes(0, n), ks.Hashes(n, n+probes)
		for _, bpk := range []int{5, 10, 15} {
			f := build(t, bpk, added).(bitset)
			actual := float64(8*len(f.lines)) / n // rounded up to whole lines
			want := blockedRate(actual, f.k)
			what := fmt.Sprintf("%s keys, %d bits/key, k=%d (textbook %.4f%%)", ks.Name, bpk, f.k,
				100*ExpectedFalsePositiveRate(float64(bpk), ProbesForBitsPerKey(float64(bpk))))
			checkMeasuredRate(t, what, filtertest.PositiveRate(f, absent), want, probes)
		}
	}
}

func TestEmptyFilter(t *testing.T) {
	data := filtertest.Finish(t, NewPolicy(10).NewWriter())
	if len(data) != lineBytes+trailerLen {
		t.Fatalf("empty filter is %d bytes, want one line and the trailer", len(data))
	}
	f, err := NewPolicy(10).Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if r := filtertest.PositiveRate(f, filtertest.Sets[0].Hashes(0, 10000)); r != 0 {
		t.Fatalf("empty filter may contain %.2f%% of keys", 100*r)
	}
}

func TestAdjacentDuplicatesCountOnce(t *testing.T) {
	hs := filtertest.Sets[1].Hashes(0, 1000)
	once, twice := NewPolicy(10).NewWriter(), NewPolicy(10).NewWriter()
	for _, h := range hs {
		once.AddHash(h)
		twice.AddHash(h)
		twice.AddHash(h)
	}
	if !bytes.Equal(filtertest.Finish(t, once), filtertest.Finish(t, twice)) {
		t.Fatal("adding each hash twice in a row changed the filter")
	}
}

// TestDecodeAnyBitsPerKey: one policy decodes filters written at any bits
// per key, reading k and the size from the trailer.
func TestDecodeAnyBitsPerKey(t *testing.T) {
	hs := filtertest.Sets[0].Hashes(0, 5000)
	reader := NewPolicy(10)
	for bpk := 1; bpk <= 40; bpk++ {
		w := NewPolicy(bpk).NewWriter()
		for _, h := range hs {
			w.AddHash(h)
		}
		f, err := reader.Decode(filtertest.Finish(t, w))
		if err != nil {
			t.Fatalf("%d bits/key: %v", bpk, err)
		}
		if got, want := f.(bitset).k, blockedProbes(float64(bpk)); got != want {
			t.Fatalf("%d bits/key: decoded k=%d, want %d", bpk, got, want)
		}
		if r := filtertest.PositiveRate(f, hs); r != 1 {
			t.Fatalf("%d bits/key: only %.2f%% of added keys found", bpk, 100*r)
		}
	}
}

func TestPolicyName(t *testing.T) {
	if got := NewPolicy(10).Name(); got != "shale.bloom.v1" {
		t.Fatalf("Name() = %q", got)
	}
}

func TestNewPolicyPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewPolicy(0) did not panic")
		}
	}()
	NewPolicy(0)
}

func TestProbeDoesNotAllocate(t *testing.T) {
	hs := filtertest.Sets[0].Hashes(0, 1000)
	f := build(t, 10, hs)
	allocs := testing.AllocsPerRun(100, func() {
		for _, h := range hs {
			f.MayContain(h)
		}
	})
	if allocs != 0 {
		t.Fatalf("MayContain allocates: %v allocs per 1000 probes", allocs)
	}
}

// validEncoding returns a small table filter and the offset of its trailer.
func validEncoding(t *testing.T) ([]byte, int) {
	w := NewPolicy(10).NewWriter()
	for _, h := range filtertest.Sets[0].Hashes(0, 100) {
		w.AddHash(h)
	}
	data := filtertest.Finish(t, w)
	return data, len(data) - trailerLen
}

func TestDecodeCorrupt(t *testing.T) {
	valid, tr := validEncoding(t)
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), valid...)) }
	cases := map[string][]byte{
		"empty":         {},
		"trailer only":  valid[tr:],
		"one byte less": valid[1:],
		"one byte more": append([]byte{0}, valid...),
		"version 2":     edit(func(b []byte) []byte { b[tr+14] = 2; return b }),
		"layout 2":      edit(func(b []byte) []byte { b[tr+13] = layoutCount; return b }),
		"layout 0":      edit(func(b []byte) []byte { b[tr+13] = 0; return b }),
		"k 0":           edit(func(b []byte) []byte { b[tr+12] = 0; return b }),
		"k 31":          edit(func(b []byte) []byte { b[tr+12] = 31; return b }),
		"lines 0":       edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[tr+8:], 0); return b }),
		"lines +1":      edit(func(b []byte) []byte { b[tr+8]++; return b }),
		"lines max":     edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[tr+8:], 1<<32-1); return b }),
	}
	for name, data := range cases {
		if _, err := NewPolicy(10).Decode(data); !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s: Decode error %v, want corruption", name, err)
		}
		var f Filter
		if err := f.UnmarshalBinary(data); !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s: UnmarshalBinary error %v, want corruption", name, err)
		}
	}
}
