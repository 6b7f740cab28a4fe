package ycsb

import (
	"math"
	"math/rand/v2"
	"sync"
)

// ZipfianConstant is the skew YCSB's core workloads use: item i (from 0) is
// drawn with probability proportional to 1/(i+1)^0.99.
const ZipfianConstant = 0.99

// Zipfian draws integers from [min, min+items) with a Zipfian distribution
// of skew theta, by the method of Gray et al., "Quickly Generating
// Billion-Record Synthetic Databases" (SIGMOD 1994), which YCSB's
// ZipfianGenerator uses: the smallest values are the most popular. The
// item count may grow between draws (NextN), for the "latest" distribution;
// the normalising sum is then extended, not recomputed.
//
// A Zipfian is not safe for concurrent use: give each goroutine its own.
type Zipfian struct {
	min       int64
	items     int64 // the count zetan is summed over
	theta     float64
	alpha     float64 // 1 / (1 - theta)
	zeta2     float64 // zeta(2, theta)
	zetan     float64 // zeta(items, theta)
	eta       float64
	halfTheta float64 // 0.5^theta
}

// NewZipfian returns a generator of [min, min+items) with skew theta
// (0 < theta < 1). It sums items terms once, O(items).
func NewZipfian(min, items int64, theta float64) *Zipfian {
	return newZipfianWithZeta(min, items, theta, zeta(0, items, theta, 0))
}

// newZipfianWithZeta is NewZipfian for a zeta(items, theta) known already.
func newZipfianWithZeta(min, items int64, theta, zetan float64) *Zipfian {
	z := &Zipfian{
		min:       min,
		items:     items,
		theta:     theta,
		alpha:     1 / (1 - theta),
		zeta2:     zeta(0, 2, theta, 0),
		zetan:     zetan,
		halfTheta: math.Pow(0.5, theta),
	}
	z.setEta()
	return z
}

// zeta returns sum + the sum of 1/(i+1)^theta for i in [from, to).
func zeta(from, to int64, theta, sum float64) float64 {
	for i := from; i < to; i++ {
		sum += 1 / math.Pow(float64(i+1), theta)
	}
	return sum
}

func (z *Zipfian) setEta() {
	z.eta = (1 - math.Pow(2/float64(z.items), 1-z.theta)) / (1 - z.zeta2/z.zetan)
}

// Next draws a value from [min, min+items).
func (z *Zipfian) Next(rng *rand.Rand) int64 { return z.NextN(rng, z.items) }

// NextN draws a value from [min, min+items) after growing the item count
// to items if it is larger than before. (YCSB's generator never shrinks
// either: a smaller items is drawn over the larger count.)
func (z *Zipfian) NextN(rng *rand.Rand, items int64) int64 {
	if items > z.items {
		z.zetan = zeta(z.items, items, z.theta, z.zetan)
		z.items = items
		z.setEta()
	}
	u := rng.Float64()
	uz := u * z.zetan
	switch {
	case uz < 1:
		return z.min
	case uz < 1+z.halfTheta:
		return z.min + 1
	}
	return z.min + int64(float64(z.items)*math.Pow(z.eta*u-z.eta+1, z.alpha))
}

// scrambledItems and scrambledZeta are YCSB's ScrambledZipfianGenerator
// constants: it draws from a Zipfian over ten billion items, whose zeta for
// the constant 0.99 is precomputed, and hashes the draw into the range.
const (
	scrambledItems = 10_000_000_000
	scrambledZeta  = 26.46902820178302
)

// ScrambledZipfian draws integers from [min, max] with Zipfian popularity
// (constant ZipfianConstant) but with the popular values spread over the
// range instead of packed at its start, as YCSB's "zipfian" request
// distribution does: a Zipfian draw over ten billion items, hashed (FNV-1a
// 64) into the range. The most popular value gets item 0's share, about
// 1/26.5 of the draws, plus its part of the long tail, which lands nearly
// evenly on every value: a flatter distribution than a plain Zipfian over
// the range (over 100k values, about half of the draws fall in the tail).
//
// A ScrambledZipfian is not safe for concurrent use.
type ScrambledZipfian struct {
	min, items int64
	z          *Zipfian
}

// NewScrambledZipfian returns a generator of [min, max].
func NewScrambledZipfian(min, max int64) *ScrambledZipfian {
	return &ScrambledZipfian{
		min:   min,
		items: max - min + 1,
		z:     newZipfianWithZeta(0, scrambledItems, ZipfianConstant, scrambledZeta),
	}
}

// Next draws a value from [min, max].
func (s *ScrambledZipfian) Next(rng *rand.Rand) int64 {
	return s.min + fnvHash64(s.z.Next(rng))%s.items
}

// Latest draws record numbers skewed towards the most recently inserted, as
// YCSB's SkewedLatestGenerator does for workload D: with n the highest
// acknowledged record number, it returns n - z for z a Zipfian draw over
// [0, n). Record n is the most popular, then n-1, and so on.
//
// A Latest is not safe for concurrent use; its Counter is.
type Latest struct {
	counter *Counter
	z       *Zipfian
}

// NewLatest returns a generator over the records counter has acknowledged.
func NewLatest(counter *Counter) *Latest {
	return &Latest{counter: counter, z: NewZipfian(0, max(1, counter.Last()), ZipfianConstant)}
}

// Next draws a record number from [1, counter.Last()] (0 while Last is 0).
func (l *Latest) Next(rng *rand.Rand) int64 {
	last := l.counter.Last()
	if last < 1 {
		return 0
	}
	return last - l.z.NextN(rng, last)
}

// Counter hands out the record numbers of inserts in order and tracks
// which have been acknowledged (written), as YCSB's
// AcknowledgedCounterGenerator does: Last is the highest number below which
// every insert is acknowledged, so readers choose only records that exist
// even while concurrent inserts complete out of order. Safe for concurrent
// use.
type Counter struct {
	mu      sync.Mutex
	next    int64
	limit   int64 // every number < limit is acknowledged
	pending map[int64]bool
}

// NewCounter returns a counter whose first number is start; the records
// below start are taken as written.
func NewCounter(start int64) *Counter {
	return &Counter{next: start, limit: start, pending: map[int64]bool{}}
}

// Next returns the next record number to insert.
func (c *Counter) Next() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.next
	c.next++
	return n
}

// Acknowledge records that the insert of record n is written.
func (c *Counter) Acknowledge(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[n] = true
	for c.pending[c.limit] {
		delete(c.pending, c.limit)
		c.limit++
	}
}

// Last returns the highest record number below which every insert is
// acknowledged (start-1 before any).
func (c *Counter) Last() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit - 1
}

// fnvHash64 is YCSB's Utils.fnvhash64: FNV-1a over the eight bytes of v,
// least significant first, made non-negative (as Java's Math.abs does; the
// one value it cannot negate stays negative there, and is taken modulo 2^63
// here).
func fnvHash64(v int64) int64 {
	const (
		offsetBasis = 0xCBF29CE484222325
		prime       = 1099511628211
	)
	h := uint64(offsetBasis)
	for range 8 {
		h ^= uint64(v) & 0xff
		h *= prime
		v >>= 8
	}
	s := int64(h)
	if s < 0 {
		s = -s
	}
	return s & math.MaxInt64
}
