package fuse

// The encoded filter, as the policy's writer writes it:
//
//	offset  size  field
//	0       1     version: 1
//	1       8     seed, uint64 little-endian
//	9       1     log2 of the segment length, 0..18
//	10      4     segment count, uint32 little-endian
//	14      4     array length A, uint32 little-endian: (segment count + 2) ·
//	              segment length, or 0 for a filter of no keys (whose other
//	              fields are then 0 too)
//	18      A     the fingerprint array, one byte a slot
//
// The filter holds key hash h if fingerprint(x) equals the XOR of the three
// slots of x, where x = mix(h + seed), mix is the 64-bit finalizer of
// MurmurHash3, fingerprint(x) is the low byte of x ^ x>>32, and the slots
// are, with L the segment length and C the segment count:
//
//	s0 = x·(C·L) >> 64                   one of the first C segments, and an offset in it
//	s1 = (s0 + L)  ^ ((x >> 18) mod L)   the next segment, at an offset from bits 18.. of x
//	s2 = (s0 + 2L) ^ (x mod L)           the one after, at an offset from the low bits
//
// (L is a power of two, so the XOR changes only the offset within the
// segment.) A filter of no keys holds nothing.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	tablefilter "github.com/shale-db/shale/filter"

	"github.com/shale-db/shale/internal/base"
)

const (
	headerLen       = 18
	version         = 1
	maxSegmentLog   = 18
	maxAttempts     = 64 // seeds tried before giving up
	attemptsPerSize = 8  // seeds tried at one size before growing the array

	// maxKeys keeps the array, grown by every retry, below 2^32 slots.
	maxKeys = 1 << 30
)

// params are the shape of a filter: segment length L = 1<<segmentLog and
// segmentCount; the array has segmentCount+2 segments.
type params struct {
	segmentLog   uint8
	segmentCount uint32
}

func (p params) segmentLength() uint32 { return 1 << p.segmentLog }

func (p params) arrayLength() uint64 {
	return (uint64(p.segmentCount) + 2) << p.segmentLog
}

// paramsFor sizes a filter for n distinct keys, following the paper (Graf
// and Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor Filters",
// 2022, for three slots a key): segments of 2^⌊log_3.33(n) + 2.25⌋ slots (at
// most 2^18), and n·max(1.125, 0.875 + 0.25·ln(10^6)/ln(n)) slots in all,
// rounded up to whole segments. Small sets get more room per key: with few
// keys, a peel that gets stuck is likelier, and each retry is cheap.
func paramsFor(n int) params {
	if n == 0 {
		return params{}
	}
	log, factor := 2, 1.125
	if n > 1 {
		ln := math.Log(float64(n))
		log = min(int(ln/math.Log(3.33)+2.25), maxSegmentLog)
		factor = max(factor, 0.875+0.25*math.Log(1e6)/ln)
	}
	segments := math.Ceil(float64(n)*factor/float64(uint64(1)<<log)) - 2
	return params{segmentLog: uint8(log), segmentCount: uint32(max(segments, 1))}
}

// grow adds an eighth (at least one) to the number of segments.
func (p params) grow() params {
	p.segmentCount += max(p.segmentCount/8, 1)
	return p
}

// slots returns the three slots of mixed hash x.
func (p params) slots(x uint64) (s0, s1, s2 uint32) {
	l := p.segmentLength()
	hi, _ := bits.Mul64(x, uint64(p.segmentCount)<<p.segmentLog)
	s0 = uint32(hi)
	s1 = (s0 + l) ^ (uint32(x>>18) & (l - 1))
	s2 = (s0 + 2*l) ^ (uint32(x) & (l - 1))
	return s0, s1, s2
}

func fingerprint(x uint64) byte { return byte(x ^ x>>32) }

// PolicyName is the name of the format. Stable forever.
const PolicyName = "shale.fuse8.v1"

// NewPolicy returns the filter policy of binary fuse filters with 8-bit
// fingerprints.
func NewPolicy() tablefilter.Policy { return policy{} }

type policy struct{}

// Name returns PolicyName.
func (policy) Name() string { return PolicyName }

// NewWriter returns a writer of one filter.
func (policy) NewWriter() tablefilter.Writer { return &writer{} }

// Decode checks the header of data against its length and returns a filter
// that probes data in place; data must not change while the filter is used.
func (policy) Decode(data []byte) (tablefilter.Filter, error) {
	const name = "fuse filter"
	if len(data) < headerLen {
		return nil, base.CorruptionErrorf(name, -1, "%d bytes, shorter than the %d-byte header", len(data), headerLen)
	}
	if data[0] != version {
		return nil, base.CorruptionErrorf(name, 0, "unknown version %d", data[0])
	}
	p := params{segmentLog: data[9], segmentCount: binary.LittleEndian.Uint32(data[10:])}
	length := binary.LittleEndian.Uint32(data[14:])
	switch {
	case p.segmentLog > maxSegmentLog:
		return nil, base.CorruptionErrorf(name, 9, "segment length 2^%d is above 2^%d", p.segmentLog, maxSegmentLog)
	case uint64(length) != uint64(len(data)-headerLen):
		return nil, base.CorruptionErrorf(name, 14, "array length %d, but %d bytes follow the header", length, len(data)-headerLen)
	case length == 0 && p.segmentCount == 0:
		if data[9] != 0 || binary.LittleEndian.Uint64(data[1:]) != 0 {
			return nil, base.CorruptionErrorf(name, 1, "a filter of no keys with a seed or a segment length")
		}
		return filter{}, nil
	case p.segmentCount == 0 || p.arrayLength() != uint64(length):
		return nil, base.CorruptionErrorf(name, 10, "%d segments of %d slots, plus 2, are not the array length %d",
			p.segmentCount, p.segmentLength(), length)
	}
	return filter{params: p, seed: binary.LittleEndian.Uint64(data[1:]), fingerprints: data[headerLen:]}, nil
}

// filter probes an encoded filter in place.
type filter struct {
	params
	seed         uint64
	fingerprints []byte
}

// MayContain reports whether the key with hash h may have been added.
func (f filter) MayContain(h uint64) bool {
	if len(f.fingerprints) == 0 {
		return false
	}
	x := base.Mix64(h + f.seed)
	s0, s1, s2 := f.slots(x)
	return fingerprint(x) == f.fingerprints[s0]^f.fingerprints[s1]^f.fingerprints[s2]
}

// writer collects hashes until Finish.
type writer struct{ hashes tablefilter.HashList }

// AddHash adds the hash of a key. A hash equal to the one added just before
// is dropped here; other repeats are dropped by Finish.
func (w *writer) AddHash(h uint64) { w.hashes.Add(h) }

// Finish returns the encoded filter, or an error if no seed built one (see
// build), which a set without repeated hashes practically never meets.
func (w *writer) Finish() ([]byte, error) {
	data, _, err := build(w.hashes, paramsFor(len(w.hashes)))
	w.hashes.Release()
	return data, err
}

// build returns the encoded filter of hashes, starting at size p, and the
// number of seeds it tried, or an error; it does not modify hashes. Repeated hashes make
// every attempt fail (a key twice is two equal edges, which never peel), so
// the first failure removes them, at the cost of a copy and a sort, which
// a set without repeats seldom pays: such a set rarely fails (TestAttempts
// finds no size from 1 to 2,000 keys, nor 10,000 or 100,000, that needs a
// second seed). Each failure tries the next seed, and every
// attemptsPerSize failures the array grows by an eighth, which makes
// peeling easier still. Reaching maxAttempts takes 64 failures in a row, 56
// of them at sizes above what the paper finds enough; that, or more than
// maxKeys hashes, is an error, which the table writer answers by writing no
// filter.
func build(hashes []uint64, p params) ([]byte, int, error) {
	if p.segmentCount == 0 {
		return encode(p, 0), 0, nil
	}
	if len(hashes) > maxKeys {
		return nil, 0, fmt.Errorf("fuse: %d keys, more than the %d a filter holds", len(hashes), maxKeys)
	}
	var b builder
	deduplicated := false
	for attempt := range maxAttempts {
		if attempt > 0 && attempt%attemptsPerSize == 0 {
			p = p.grow()
		}
		seed := base.FilterSeed(attempt)
		if data, ok := b.build(p, seed, hashes); ok {
			return data, attempt + 1, nil
		}
		if !deduplicated {
			deduplicated = true
			hashes = slices.Clone(hashes)
			slices.Sort(hashes)
			if unique := slices.Compact(hashes); len(unique) < len(hashes) {
				hashes = unique
				p = paramsFor(len(hashes))
			}
		}
	}
	return nil, maxAttempts, fmt.Errorf("fuse: no filter for %d keys after %d seeds", len(hashes), maxAttempts)
}

// encode returns the header of a filter of shape p and seed, followed by
// an array of zeros for the fingerprints.
func encode(p params, seed uint64) []byte {
	length := uint32(p.arrayLength())
	if p.segmentCount == 0 {
		length = 0
	}
	buf := make([]byte, headerLen+int(length))
	buf[0] = version
	binary.LittleEndian.PutUint64(buf[1:], seed)
	buf[9] = p.segmentLog
	binary.LittleEndian.PutUint32(buf[10:], p.segmentCount)
	binary.LittleEndian.PutUint32(buf[14:], length)
	return buf
}

// builder holds the scratch space of build attempts.
type builder struct {
	xs     []uint64 // the mixed hashes, ordered by the segment of their first slot
	start  []int    // start[i]: where the keys of segment i go in xs
	count  []uint32 // keys whose slots include the slot
	xors   []uint64 // XOR of the mixed hashes of those keys
	stack  []uint32 // slots that hold exactly one key
	peeled []peeled // keys in the order they were peeled
}

type peeled struct {
	x    uint64 // mixed hash
	slot uint32 // the slot it was peeled from, which no later key uses
}

// build returns the encoded filter of hashes with shape p and seed, or
// reports that the keys do not peel. A key is an edge joining its three
// slots. Peeling repeatedly takes a slot used by only one remaining key, its
// peel slot, and removes that key. If every key goes, fingerprints are
// assigned in the reverse order: a key's peel slot was its alone when it was
// peeled, so no key assigned before it (peeled after it) has set that slot,
// and no key assigned after it (peeled before it) sets any of its three
// slots. Setting the peel slot to make the XOR of the three slots the key's
// fingerprint therefore holds to the end.
func (b *builder) build(p params, seed uint64, hashes []uint64) ([]byte, bool) {
	size := int(p.arrayLength())
	b.count = resize(b.count, size)
	b.xors = resize(b.xors, size)
	b.stack = slices.Grow(b.stack[:0], size) // each slot's count falls to 1 once
	b.peeled = slices.Grow(b.peeled[:0], len(hashes))

	// Order the keys by the segment of their first slot (a counting sort),
	// so that the counting pass below sweeps the array from one end to the
	// other instead of jumping about it: at 1M keys, 10 ns a key for the
	// sort and 10 for the pass instead of 100 for a pass in key order.
	b.start = resize(b.start, int(p.segmentCount)+1)
	for _, h := range hashes {
		s0, _, _ := p.slots(base.Mix64(h + seed))
		b.start[s0>>p.segmentLog+1]++
	}
	for i := 1; i < len(b.start); i++ {
		b.start[i] += b.start[i-1]
	}
	b.xs = resize(b.xs, len(hashes))
	for _, h := range hashes {
		x := base.Mix64(h + seed)
		s0, _, _ := p.slots(x)
		seg := s0 >> p.segmentLog
		b.xs[b.start[seg]] = x
		b.start[seg]++
	}

	for _, x := range b.xs {
		s0, s1, s2 := p.slots(x)
		b.count[s0]++
		b.count[s1]++
		b.count[s2]++
		b.xors[s0] ^= x
		b.xors[s1] ^= x
		b.xors[s2] ^= x
	}

	for s, c := range b.count {
		if c == 1 {
			b.stack = append(b.stack, uint32(s))
		}
	}
	for len(b.stack) > 0 {
		s := b.stack[len(b.stack)-1]
		b.stack = b.stack[:len(b.stack)-1]
		if b.count[s] != 1 {
			continue // its key was peeled from another slot
		}
		x := b.xors[s]
		b.peeled = append(b.peeled, peeled{x: x, slot: s})
		s0, s1, s2 := p.slots(x)
		for _, t := range [3]uint32{s0, s1, s2} {
			b.count[t]--
			b.xors[t] ^= x
			if b.count[t] == 1 {
				b.stack = append(b.stack, t)
			}
		}
	}
	if len(b.peeled) != len(hashes) {
		return nil, false
	}

	data := encode(p, seed)
	fps := data[headerLen:]
	for i := len(b.peeled) - 1; i >= 0; i-- {
		x := b.peeled[i].x
		s0, s1, s2 := p.slots(x)
		// fps[slot] is still 0, so it drops out of the XOR.
		fps[b.peeled[i].slot] = fingerprint(x) ^ fps[s0] ^ fps[s1] ^ fps[s2]
	}
	return data, true
}

// resize returns s with length n, all zero, reusing its memory if it can.
func resize[T int | uint32 | uint64](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
