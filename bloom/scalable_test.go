package bloom

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/filtertest"
)

// TestScalableGrowth adds 100 times the initial capacity: no false
// negatives, and a measured rate below the target.
func TestScalableGrowth(t *testing.T) {
	const c0, n, probes = 1000, 100_000, 1_000_000
	for _, ks := range filtertest.Sets {
		for _, p := range []float64{0.01} {
			s := NewScalable(c0, p)
			added := ks.Hashes(0, n)
			for _, h := range added {
				s.add(h)
			}
			// 1000 + 2000 + ... + 64000 = 127000 > 100000.
			if s.Layers() != 7 {
				t.Errorf("%s keys, p=%v: %d layers, want 7", ks.Name, p, s.Layers())
			}
			if s.Len() < n-int(2*p*n) || s.Len() > n {
				t.Errorf("%s keys, p=%v: Len() = %d after %d distinct adds", ks.Name, p, s.Len(), n)
			}
			for i, h := range added {
				if !s.mayContain(h) {
					t.Fatalf("%s keys, p=%v: item %d is missing", ks.Name, p, i)
				}
			}
			hits := 0
			for _, h := range ks.Hashes(n, n+probes) {
				if s.mayContain(h) {
					hits++
				}
			}
			// The expected count is below p·probes by more than 4σ of it.
			got := float64(hits) / probes
			if limit := p - 4*math.Sqrt(p/probes); got >= limit {
				t.Errorf("%s keys, p=%v: measured rate %.4f%%, want below %.4f%%", ks.Name, p, 100*got, 100*limit)
			}
			t.Logf("%s keys, target %v: %d layers, measured rate %.4f%%", ks.Name, p, s.Layers(), 100*got)
		}
	}
}

func TestScalableAddTwice(t *testing.T) {
	s := NewScalable(10, 0.01)
	if !s.Add([]byte("a")) || s.Add([]byte("a")) || s.Len() != 1 {
		t.Fatal("adding an item twice counted it twice")
	}
}

func TestScalableOptions(t *testing.T) {
	s := NewScalable(100, 0.01, WithGrowth(4), WithTightening(0.5))
	for i := range 2100 { // 100 + 400 + 1600 = 2100
		s.Add(filtertest.Sets[1].Key(i))
	}
	if s.Layers() != 3 {
		t.Fatalf("%d layers, want 3", s.Layers())
	}
	if got, want := s.layers[2].f.keys, uint64(1600); got != want {
		t.Fatalf("third layer holds %d, want %d", got, want)
	}
	for _, bad := range []func(){
		func() { WithGrowth(1) },
		func() { WithGrowth(256) },
		func() { WithTightening(1) },
		func() { WithTightening(0) },
		func() { NewScalable(10, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("an out-of-range setting did not panic")
				}
			}()
			bad()
		}()
	}
}

func scalableEncoding(t *testing.T) []byte {
	s := NewScalable(10, 0.01)
	for i := range 50 { // layers of 10, 20, 40
		s.Add(filtertest.Sets[1].Key(i))
	}
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestScalableMarshal(t *testing.T) {
	data := scalableEncoding(t)
	var s Scalable
	if err := s.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if s.Layers() != 3 || s.Len() != 50 {
		t.Fatalf("%d layers, %d items; want 3, 50", s.Layers(), s.Len())
	}
	for i := range 50 {
		if !s.MayContain(filtertest.Sets[1].Key(i)) {
			t.Fatalf("item %d is missing after unmarshalling", i)
		}
	}
	// It keeps growing where it left off.
	for i := 50; i < 100; i++ {
		s.Add(filtertest.Sets[1].Key(i))
	}
	if s.Layers() != 4 || s.layers[3].f.keys != 80 {
		t.Fatalf("after 50 more adds: %d layers", s.Layers())
	}
}

func TestScalableUnmarshalCorrupt(t *testing.T) {
	valid := scalableEncoding(t)
	edit := func(f func(b []byte)) []byte {
		b := append([]byte(nil), valid...)
		f(b)
		return b
	}
	putFloat := func(b []byte, off int, v float64) { binary.LittleEndian.PutUint64(b[off:], math.Float64bits(v)) }
	firstLen := int(binary.LittleEndian.Uint32(valid[scalableHeaderLen+8:]))
	second := scalableHeaderLen + 12 + firstLen
	cases := map[string][]byte{
		"empty":           {},
		"header only":     valid[:scalableHeaderLen],
		"version 2":       edit(func(b []byte) { b[0] = 2 }),
		"P 0":             edit(func(b []byte) { putFloat(b, 1, 0) }),
		"P NaN":           edit(func(b []byte) { putFloat(b, 1, math.NaN()) }),
		"r 1":             edit(func(b []byte) { putFloat(b, 9, 1) }),
		"growth 1":        edit(func(b []byte) { b[17] = 1 }),
		"growth 3":        edit(func(b []byte) { b[17] = 3 }), // layer 1 is sized for 20, not 30
		"c0 0":            edit(func(b []byte) { binary.LittleEndian.PutUint64(b[18:], 0) }),
		"c0 11":           edit(func(b []byte) { binary.LittleEndian.PutUint64(b[18:], 11) }),
		"no layers":       edit(func(b []byte) { binary.LittleEndian.PutUint32(b[26:], 0) }),
		"4 layers":        edit(func(b []byte) { binary.LittleEndian.PutUint32(b[26:], 4) }),
		"2 layers":        edit(func(b []byte) { binary.LittleEndian.PutUint32(b[26:], 2) }),
		"layer overfull":  edit(func(b []byte) { binary.LittleEndian.PutUint64(b[scalableHeaderLen:], 11) }),
		"layer not full":  edit(func(b []byte) { binary.LittleEndian.PutUint64(b[scalableHeaderLen:], 9) }),
		"layer too long":  edit(func(b []byte) { binary.LittleEndian.PutUint32(b[scalableHeaderLen+8:], 1<<31) }),
		"layer corrupt":   edit(func(b []byte) { b[second-1] = 9 }), // version byte of layer 0
		"byte after":      append(append([]byte(nil), valid...), 0),
		"layer too small": tooSmallLayer(t),
	}
	for name, data := range cases {
		s := NewScalable(5, 0.1)
		if err := s.UnmarshalBinary(data); !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s: error %v, want corruption", name, err)
		} else if s.Layers() != 1 || s.layers[0].f.keys != 5 {
			t.Errorf("%s: a failed UnmarshalBinary changed the filter", name)
		}
	}
}

// tooSmallLayer returns an encoding whose one layer claims a capacity of
// 2^40 items in a one-line filter: adding to it would size the next layer
// for 2^41 items.
func tooSmallLayer(t *testing.T) []byte {
	f := New(1, 0.5)
	f.keys = 1 << 40
	enc, _ := f.MarshalBinary()
	var b []byte
	b = append(b, version)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(0.01))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(0.85))
	b = append(b, 2)
	b = binary.LittleEndian.AppendUint64(b, 1<<40)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(enc)))
	return append(b, enc...)
}
