package cuckoo

// The encoded filter, as MarshalBinary writes it:
//
//	offset  size   field
//	0       1      version: 1
//	1       1      f, bits per fingerprint: 4, 6, 8, 10, 12, 14 or 16
//	2       4      N, the number of buckets, uint32 little-endian, at least 1
//	6       8      the number of fingerprints held, uint64 little-endian
//	14      N·f/2  the buckets: bucket i is the 4f-bit little-endian integer
//	               at offset 14 + i·f/2, and its slot s (0..3) is bits
//	               s·f..s·f+f-1 of it; a slot of 0 is empty
//
// An item with hash h (filter.Hash) has the fingerprint and buckets
//
//	fp = uint32(h) mod (2^f - 1) + 1       never 0, the empty slot
//	i1 = (h · N) >> 64                     the high bits of h, scaled to [0, N)
//	i2 = (H(fp) - i1) mod N                where H(fp) = (fp · 0x9e3779b97f4a7c15 · N) >> 64
//
// and the filter holds it if either bucket has a slot equal to fp. The
// second bucket is a function of the first and the fingerprint alone,
// which is what lets a fingerprint move between its buckets without the
// item (partial-key cuckoo hashing); i2 of i2 is i1 again, for any N. The
// count is checked against the slots that are not empty.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
)

const (
	headerLen   = 14
	version     = 1
	bucketSlots = 4
	maxKicks    = 500 // fingerprints moved by one Add before it gives up

	// loadTarget is the share of the slots New plans to fill: with four
	// slots a bucket and 500 kicks, the first Add to fail comes at a load
	// of about 95-98% (TestLoadBeforeFull).
	loadTarget = 0.95

	fibonacci = 0x9e3779b97f4a7c15
)

// ErrFull is returned by Add when it cannot find a slot for an item within
// its bounded number of moves. The filter is then as it was before that Add.
var ErrFull = errors.New("cuckoo: filter full")

// Filter is a cuckoo filter (Fan, Andersen, Kaminsky and Mitzenmacher,
// "Cuckoo Filter: Practically Better Than Bloom", CoNEXT 2014): a set of
// items that can be removed, in buckets of four f-bit fingerprints, each
// item with two buckets it may go in. Add moves fingerprints between their
// buckets (at most 500 of them) to make room, and reports ErrFull when it
// cannot; MayContain checks 8 slots; Remove clears one matching slot.
//
// Against a counting Bloom filter (bloom.Counting), which can remove too,
// it needs about a quarter of the memory for the same false-positive rate
// (doc.go has the measurements). Its false-positive rate is at most
// 8/(2^f-1) at a full load, and proportionally less at a lower one: about
// 3%, 0.19% and 0.012% for f = 8, 12 and 16 at 95%.
//
// Repeats: each Add of an item stores one more copy of its fingerprint, so
// an item added k times must be removed k times. Its two buckets hold 8
// fingerprints, so the same item can be added at most 8 times (4 when its
// two buckets are one, a chance of 1/N); the Add after that fails with
// ErrFull, and adds nothing that Remove should remove.
//
// Removing an item that is not in the filter (never added, or already
// removed as often as added): when MayContain(x) is false, which is the
// usual case, Remove(x) returns false and changes nothing. When
// MayContain(x) is a false positive, Remove cannot tell: it clears the
// matching fingerprint, which belongs to another item, and returns true;
// that other item is from then on a false negative (unless it was added
// more than once). So, as with the counting filter, the caller must remove
// only what it added.
//
// Use New or UnmarshalBinary to make one. A Filter is not safe for
// concurrent use while items are added or removed; concurrent MayContain
// calls are.
type Filter struct {
	buckets []byte // N·f/2 bytes, then 8 bytes of padding for whole-word loads
	n       uint32 // N
	f       uint   // bits per fingerprint
	count   uint64 // fingerprints held

	rng  uint64 // chooses the slot an Add evicts
	path []kick // the moves of the Add in progress, to undo them if it fails
}

type kick struct {
	bucket uint32
	slot   uint
}

// New returns an empty filter with room for capacity items (at a load of
// 95%) of fingerprintBits bits each. It panics unless fingerprintBits is
// even and in 4..16.
func New(capacity int, fingerprintBits int) *Filter {
	checkBits(fingerprintBits)
	n := uint32(min(max(math.Ceil(float64(capacity)/(bucketSlots*loadTarget)), 1), math.MaxUint32))
	return newFilter(n, uint(fingerprintBits))
}

func checkBits(f int) {
	if f < 4 || f > 16 || f%2 != 0 {
		panic(fmt.Sprintf("cuckoo: %d bits per fingerprint, want 4, 6, ..., 16", f))
	}
}

func newFilter(n uint32, f uint) *Filter {
	return &Filter{buckets: make([]byte, int(n)*int(f)/2+8), n: n, f: f, rng: fibonacci}
}

// bucketBytes returns f/2, the bytes of a bucket.
func (c *Filter) bucketBytes() int { return int(c.f) / 2 }

func (c *Filter) fpMask() uint64 { return 1<<c.f - 1 }

func (c *Filter) bucketMask() uint64 { return math.MaxUint64 >> (64 - bucketSlots*c.f) }

// bucket returns bucket i as an integer.
func (c *Filter) bucket(i uint32) uint64 {
	return binary.LittleEndian.Uint64(c.buckets[int(i)*c.bucketBytes():]) & c.bucketMask()
}

// setSlot sets slot s of bucket i to fp.
func (c *Filter) setSlot(i uint32, s uint, fp uint64) {
	b := c.buckets[int(i)*c.bucketBytes():]
	w := binary.LittleEndian.Uint64(b)
	w = w&^(c.fpMask()<<(s*c.f)) | fp<<(s*c.f)
	binary.LittleEndian.PutUint64(b, w)
}

// slot returns slot s of bucket value v.
func (c *Filter) slot(v uint64, s uint) uint64 { return v >> (s * c.f) & c.fpMask() }

// locate returns the fingerprint of item and its first bucket.
func (c *Filter) locate(item []byte) (fp uint64, i1 uint32) {
	h := filter.Hash(item)
	fp = uint64(uint32(h))%c.fpMask() + 1
	hi, _ := bits.Mul64(h, uint64(c.n))
	return fp, uint32(hi)
}

// alt returns the other bucket of fingerprint fp in bucket i.
func (c *Filter) alt(i uint32, fp uint64) uint32 {
	h, _ := bits.Mul64(fp*fibonacci, uint64(c.n))
	return uint32((h + uint64(c.n) - uint64(i)) % uint64(c.n))
}

// find returns the first slot of bucket i equal to fp.
func (c *Filter) find(i uint32, fp uint64) (uint, bool) {
	v := c.bucket(i)
	for s := range uint(bucketSlots) {
		if c.slot(v, s) == fp {
			return s, true
		}
	}
	return 0, false
}

// Add adds item, moving other items' fingerprints between their buckets to
// make room if it must. It returns ErrFull, and leaves the filter as it was,
// if it finds no room within 500 moves (see Filter for repeated items).
func (c *Filter) Add(item []byte) error {
	fp, i := c.locate(item)
	if c.put(i, fp) || c.put(c.alt(i, fp), fp) {
		c.count++
		return nil
	}
	c.path = c.path[:0]
	for range maxKicks {
		c.rng ^= c.rng << 13
		c.rng ^= c.rng >> 7
		c.rng ^= c.rng << 17
		s := uint(c.rng % bucketSlots)
		evicted := c.slot(c.bucket(i), s)
		c.setSlot(i, s, fp)
		c.path = append(c.path, kick{bucket: i, slot: s})
		fp, i = evicted, c.alt(i, evicted)
		if c.put(i, fp) {
			c.count++
			return nil
		}
	}
	// Undo the moves, last first: each slot gets back what it held.
	for k := len(c.path) - 1; k >= 0; k-- {
		m := c.path[k]
		held := c.slot(c.bucket(m.bucket), m.slot)
		c.setSlot(m.bucket, m.slot, fp)
		fp = held
	}
	return ErrFull
}

// put puts fp in an empty slot of bucket i, if it has one.
func (c *Filter) put(i uint32, fp uint64) bool {
	s, ok := c.find(i, 0)
	if ok {
		c.setSlot(i, s, fp)
	}
	return ok
}

// MayContain reports false only if item is not in the filter (never added,
// or removed as often as added; see Filter for what can go wrong).
func (c *Filter) MayContain(item []byte) bool {
	fp, i := c.locate(item)
	if _, ok := c.find(i, fp); ok {
		return true
	}
	_, ok := c.find(c.alt(i, fp), fp)
	return ok
}

// Remove removes one copy of item's fingerprint, if MayContain(item), and
// reports whether it did. See Filter for what removing an item that is not
// in the filter does.
func (c *Filter) Remove(item []byte) bool {
	fp, i := c.locate(item)
	for _, b := range [2]uint32{i, c.alt(i, fp)} {
		if s, ok := c.find(b, fp); ok {
			c.setSlot(b, s, 0)
			c.count--
			return true
		}
	}
	return false
}

// Len returns the number of fingerprints the filter holds: items added and
// not removed, counting each copy of a repeated item.
func (c *Filter) Len() int { return int(c.count) }

// LoadFactor returns the share of the slots that hold a fingerprint.
func (c *Filter) LoadFactor() float64 { return float64(c.count) / float64(bucketSlots*uint64(c.n)) }

// BitsPerItem returns the size of the buckets in bits over the number of
// items held (+Inf when empty).
func (c *Filter) BitsPerItem() float64 {
	return float64(bucketSlots*uint64(c.n)*uint64(c.f)) / float64(c.count)
}

// MarshalBinary returns the filter in the format at the top of cuckoo.go.
func (c *Filter) MarshalBinary() ([]byte, error) {
	buf := make([]byte, headerLen, headerLen+len(c.buckets)-8)
	buf[0] = version
	buf[1] = byte(c.f)
	binary.LittleEndian.PutUint32(buf[2:], c.n)
	binary.LittleEndian.PutUint64(buf[6:], c.count)
	return append(buf, c.buckets[:len(c.buckets)-8]...), nil
}

// UnmarshalBinary replaces c with the filter encoded in data, which it
// copies. Malformed data gives an error matching shale.ErrCorruption and
// leaves c unchanged.
func (c *Filter) UnmarshalBinary(data []byte) error {
	const name = "cuckoo filter"
	if len(data) < headerLen {
		return base.CorruptionErrorf(name, -1, "%d bytes, shorter than the %d-byte header", len(data), headerLen)
	}
	if data[0] != version {
		return base.CorruptionErrorf(name, 0, "unknown version %d", data[0])
	}
	f := int(data[1])
	n := binary.LittleEndian.Uint32(data[2:])
	count := binary.LittleEndian.Uint64(data[6:])
	switch {
	case f < 4 || f > 16 || f%2 != 0:
		return base.CorruptionErrorf(name, 1, "%d bits per fingerprint, want 4, 6, ..., 16", f)
	case n == 0:
		return base.CorruptionErrorf(name, 2, "no buckets")
	case uint64(len(data)-headerLen) != uint64(n)*uint64(f)/2:
		return base.CorruptionErrorf(name, 2, "%d buckets of %d bytes, but %d bytes follow the header", n, f/2, len(data)-headerLen)
	}
	d := newFilter(n, uint(f))
	copy(d.buckets, data[headerLen:])
	held := uint64(0)
	for i := range n {
		v := d.bucket(i)
		for s := range uint(bucketSlots) {
			if d.slot(v, s) != 0 {
				held++
			}
		}
	}
	if held != count {
		return base.CorruptionErrorf(name, 6, "count %d, but %d slots hold a fingerprint", count, held)
	}
	d.count = count
	*c = *d
	return nil
}
