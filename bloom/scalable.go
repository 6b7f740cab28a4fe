package bloom

// The encoded Scalable filter, as written by Scalable.MarshalBinary:
//
//	offset  size  field
//	0       1     version: 1
//	1       8     P, the target rate, float64 bits, uint64 little-endian; 0 < P < 1
//	9       8     r, the tightening ratio, the same way; 0 < r < 1
//	17      1     s, the growth factor, 2..255
//	18      8     c0, the capacity of the first layer, uint64 little-endian, at least 1
//	26      4     the number of layers, uint32 little-endian, at least 1
//	30      ...   the layers, oldest first, each:
//	                8  the items added to it, uint64 little-endian: its
//	                   capacity for every layer but the last, at most that
//	                   for the last
//	                4  the length of its filter, uint32 little-endian
//	                   its filter (format.go, layout 1), sized for c0·s^i
//	                   items (that n in its trailer) at rate P·(1-r)·r^i
//
// Nothing follows the last layer.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
)

// Scalable is a scalable Bloom filter (Almeida, Baquero, Preguiça and
// Hutchison, 2007): a Bloom filter that grows with the items added to it and
// keeps its false-positive rate below a target P whatever their number.
//
// It is a list of Filters, the layers. Items go into the newest layer; when
// that is full, a new layer s times larger is added (growth factor s,
// default 2). Layer i (from 0) has capacity c0·s^i and rate p0·r^i, where r
// is the tightening ratio (default 0.85) and p0 = P·(1-r). A lookup asks
// every layer, so it is a false positive if any layer's is, which happens
// with probability at most the sum of the layers' rates, p0·(1 + r + r² +
// ...) = P. The cost of the guarantee: each layer needs ln(1/r)/(ln 2)² more bits
// per item than the one before it, 0.34 at r = 0.85.
//
// Use NewScalable or UnmarshalBinary to make one. A Scalable is not safe
// for concurrent use while items are added; concurrent MayContain calls are.
type Scalable struct {
	p      float64 // target rate P
	ratio  float64 // tightening ratio r
	growth int     // growth factor s
	layers []layer
	n      int
}

type layer struct {
	f     *Filter // sized for f.keys items
	items int
}

// ScalableOption changes a default of NewScalable.
type ScalableOption func(*Scalable)

// WithGrowth sets the growth factor s, the ratio of a layer's capacity to the
// one before it (default 2). It panics unless 2 ≤ s ≤ 255.
func WithGrowth(s int) ScalableOption {
	if s < 2 || s > 255 {
		panic(fmt.Sprintf("bloom: growth factor %d is not in [2, 255]", s))
	}
	return func(f *Scalable) { f.growth = s }
}

// WithTightening sets the tightening ratio r, the ratio of a layer's rate to
// the one before it (default 0.85). It panics unless 0 < r < 1.
func WithTightening(r float64) ScalableOption {
	if !(r > 0 && r < 1) {
		panic(fmt.Sprintf("bloom: tightening ratio %v is not in (0, 1)", r))
	}
	return func(f *Scalable) { f.ratio = r }
}

// NewScalable returns an empty scalable filter whose first layer holds
// initialCapacity items (at least 1) and whose false-positive rate stays
// below p. It panics unless 0 < p < 1.
func NewScalable(initialCapacity int, p float64, opts ...ScalableOption) *Scalable {
	checkRate(p)
	s := &Scalable{p: p, ratio: 0.85, growth: 2}
	for _, o := range opts {
		o(s)
	}
	s.layers = []layer{{f: New(max(initialCapacity, 1), s.layerRate(0))}}
	return s
}

// layerRate returns p0·r^i, floored at the smallest positive float64 so that
// a long run of layers asks for a tiny rate rather than an invalid one.
func (s *Scalable) layerRate(i int) float64 {
	return max(s.p*(1-s.ratio)*math.Pow(s.ratio, float64(i)), math.SmallestNonzeroFloat64)
}

// Add adds item and reports whether it did: false when MayContain(item) was
// already true, so an item added twice fills no extra room.
func (s *Scalable) Add(item []byte) bool { return s.add(filter.Hash(item)) }

func (s *Scalable) add(h uint64) bool {
	if s.mayContain(h) {
		return false
	}
	last := &s.layers[len(s.layers)-1]
	if uint64(last.items) == last.f.keys {
		s.layers = append(s.layers, layer{f: New(int(last.f.keys)*s.growth, s.layerRate(len(s.layers)))})
		last = &s.layers[len(s.layers)-1]
	}
	last.f.bits.add(h)
	last.items++
	s.n++
	return true
}

// MayContain reports false only if item was never added.
func (s *Scalable) MayContain(item []byte) bool { return s.mayContain(filter.Hash(item)) }

func (s *Scalable) mayContain(h uint64) bool {
	for _, l := range s.layers {
		if l.f.bits.MayContain(h) {
			return true
		}
	}
	return false
}

// Len returns the number of items added (those for which Add returned true).
func (s *Scalable) Len() int { return s.n }

// Layers returns the number of layers.
func (s *Scalable) Layers() int { return len(s.layers) }

const scalableHeaderLen = 30

// MarshalBinary returns the filter in the format at the top of scalable.go.
func (s *Scalable) MarshalBinary() ([]byte, error) {
	buf := []byte{version}
	buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(s.p))
	buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(s.ratio))
	buf = append(buf, byte(s.growth))
	buf = binary.LittleEndian.AppendUint64(buf, s.layers[0].f.keys)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(s.layers)))
	for _, l := range s.layers {
		enc, _ := l.f.MarshalBinary()
		buf = binary.LittleEndian.AppendUint64(buf, uint64(l.items))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(enc)))
		buf = append(buf, enc...)
	}
	return buf, nil
}

// UnmarshalBinary replaces s with the filter encoded in data, which it
// copies. Malformed data gives an error matching shale.ErrCorruption and
// leaves s unchanged.
func (s *Scalable) UnmarshalBinary(data []byte) error {
	const name = "scalable bloom filter"
	if len(data) < scalableHeaderLen {
		return base.CorruptionErrorf(name, -1, "%d bytes, shorter than the %d-byte header", len(data), scalableHeaderLen)
	}
	if data[0] != version {
		return base.CorruptionErrorf(name, 0, "unknown version %d", data[0])
	}
	d := Scalable{
		p:      math.Float64frombits(binary.LittleEndian.Uint64(data[1:])),
		ratio:  math.Float64frombits(binary.LittleEndian.Uint64(data[9:])),
		growth: int(data[17]),
	}
	c0 := binary.LittleEndian.Uint64(data[18:])
	numLayers := binary.LittleEndian.Uint32(data[26:])
	switch {
	case !(d.p > 0 && d.p < 1):
		return base.CorruptionErrorf(name, 1, "target rate %v is not in (0, 1)", d.p)
	case !(d.ratio > 0 && d.ratio < 1):
		return base.CorruptionErrorf(name, 9, "tightening ratio %v is not in (0, 1)", d.ratio)
	case d.growth < 2:
		return base.CorruptionErrorf(name, 17, "growth factor %d is below 2", d.growth)
	case c0 == 0:
		return base.CorruptionErrorf(name, 18, "first layer has no capacity")
	case numLayers == 0:
		return base.CorruptionErrorf(name, 26, "no layers")
	}
	off := scalableHeaderLen
	capacity := c0
	for i := range int(numLayers) {
		if len(data)-off < 12 {
			return base.CorruptionErrorf(name, int64(off), "layer %d of %d is missing", i, numLayers)
		}
		items := binary.LittleEndian.Uint64(data[off:])
		size := uint64(binary.LittleEndian.Uint32(data[off+8:]))
		if size > uint64(len(data)-off-12) {
			return base.CorruptionErrorf(name, int64(off+8), "layer %d claims %d bytes, %d remain", i, size, len(data)-off-12)
		}
		f := new(Filter)
		if err := f.UnmarshalBinary(data[off+12 : off+12+int(size)]); err != nil {
			return base.CorruptionErrorf(name, int64(off+12), "layer %d: %v", i, err)
		}
		last := i == int(numLayers)-1
		switch {
		case f.keys != capacity:
			return base.CorruptionErrorf(name, int64(off+12), "layer %d is sized for %d items, want %d", i, f.keys, capacity)
		case float64(f.bits.numLines)*lineCells < 0.99*float64(capacity)*BitsPerKeyForRate(d.layerRate(i)):
			// Far too small for its capacity and rate: not written by
			// Scalable, and it would make the next layer, sized from this
			// capacity, arbitrarily large.
			return base.CorruptionErrorf(name, int64(off+12), "layer %d has %d lines, too few for %d items at rate %v", i, f.bits.numLines, capacity, d.layerRate(i))
		case items > capacity || (!last && items != capacity):
			return base.CorruptionErrorf(name, int64(off), "layer %d holds %d items, capacity %d", i, items, capacity)
		}
		d.layers = append(d.layers, layer{f: f, items: int(items)})
		d.n += int(items)
		off += 12 + int(size)
		if !last {
			hi, next := bits.Mul64(capacity, uint64(d.growth))
			if hi != 0 || next > math.MaxInt {
				return base.CorruptionErrorf(name, int64(off), "layer %d capacity overflows", i+1)
			}
			capacity = next
		}
	}
	if off != len(data) {
		return base.CorruptionErrorf(name, int64(off), "%d bytes after the last layer", len(data)-off)
	}
	*s = d
	return nil
}
