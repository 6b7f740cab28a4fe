package bloom

import (
	"fmt"
	"math"
)

// The sizing math of a Bloom filter of m bits holding n keys with k probes
// per key, for a target false-positive rate p:
//
//	m = -n ln p / (ln 2)^2     bits
//	k = (m/n) ln 2             probes
//	p = (1 - e^(-k n/m))^k     expected false-positive rate
//
// These are the textbook formulas: every probe anywhere in the m bits. The
// blocked layout this package uses (every probe of a key inside one 512-bit
// line) has its own, slightly higher, expected rate: see blockedRate.

// BitsForKeys returns m, the number of bits a textbook Bloom filter needs to
// hold n keys at false-positive rate p, rounded up. It panics unless 0 < p < 1.
func BitsForKeys(n int, p float64) int {
	return int(math.Ceil(float64(n) * BitsPerKeyForRate(p)))
}

// BitsPerKeyForRate returns m/n = -ln p / (ln 2)^2 for false-positive rate p
// (9.59 for 1%). It panics unless 0 < p < 1.
func BitsPerKeyForRate(p float64) float64 {
	checkRate(p)
	return -math.Log(p) / (math.Ln2 * math.Ln2)
}

// ProbesForBitsPerKey returns k = round((m/n) ln 2), the number of probes
// that minimizes the textbook rate, clamped to [1, 30].
func ProbesForBitsPerKey(bitsPerKey float64) int {
	return min(max(int(math.Round(bitsPerKey*math.Ln2)), 1), maxProbes)
}

// ExpectedFalsePositiveRate returns (1 - e^(-k n/m))^k, the textbook
// false-positive rate at bitsPerKey = m/n with k probes.
func ExpectedFalsePositiveRate(bitsPerKey float64, k int) float64 {
	return math.Pow(1-math.Exp(-float64(k)/bitsPerKey), float64(k))
}

// maxProbes bounds k, here and in the encoded format.
const maxProbes = 30

func checkRate(p float64) {
	if !(p > 0 && p < 1) {
		panic(fmt.Sprintf("bloom: false-positive rate %v is not in (0, 1)", p))
	}
}

// blockedRate is the expected false-positive rate of the blocked layout at
// bitsPerKey with k probes. The number of keys x that hash to a line is
// Poisson distributed with mean λ = 512/bitsPerKey; a line holding x keys
// has a given bit still clear with probability q^x, where q = (1-1/512)^k,
// and an absent key that lands there passes all k probes with probability
// (1 - q^x)^k. The rate is the Poisson-weighted sum of that over x. Lines
// that draw more keys than average lose more than lines that draw fewer
// gain, which is why blocking costs accuracy; the measured rates in doc.go
// match this sum.
func blockedRate(bitsPerKey float64, k int) float64 {
	lambda := lineCells / bitsPerKey
	q := math.Pow(1-1.0/lineCells, float64(k))
	passes := func(x float64) float64 { return math.Pow(1-math.Pow(q, x), float64(k)) }

	// Sum outwards from the mode of the Poisson distribution; stop when a
	// term can no longer change the sum (the terms fall off faster than
	// geometrically on both sides).
	mode := math.Floor(lambda)
	lg, _ := math.Lgamma(mode + 1)
	pMode := math.Exp(mode*math.Log(lambda) - lambda - lg)
	sum := pMode * passes(mode)
	for x, px := mode+1, pMode; ; x++ {
		px *= lambda / x
		t := px * passes(x)
		sum += t
		if t <= sum*1e-12 {
			break
		}
	}
	for x, px := mode, pMode; x > 0; x-- {
		px *= x / lambda
		t := px * passes(x-1)
		sum += t
		if t <= sum*1e-12 {
			break
		}
	}
	return sum
}

// blockedProbes returns the k to use in the blocked layout at bitsPerKey:
// the smallest k whose expected rate is within 1% of the best k's. That is
// often one or two below the textbook k (6 instead of 7 at 10 bits/key, 9
// instead of 10 at 15): a crowded line gains little from more probes, and
// each probe costs time on every lookup of a present key.
func blockedProbes(bitsPerKey float64) int {
	// The rate falls with k down to the best k and rises after it, so the
	// scan stops at the first rise.
	var rates [maxProbes + 1]float64
	best := 1
	rates[1] = blockedRate(bitsPerKey, 1)
	for k := 2; k <= maxProbes; k++ {
		rates[k] = blockedRate(bitsPerKey, k)
		if rates[k] >= rates[best] {
			break
		}
		best = k
	}
	k := 1
	for rates[k] > rates[best]*1.01 {
		k++
	}
	return k
}

// maxBitsPerKey bounds the sizing search of blockedSizing: at 1024 bits per
// key a line holds half a key on average and the blocked rate at k = 30 is
// far below any rate worth asking for.
const maxBitsPerKey = 1024

// blockedSizing returns the bits per key and probes that give the blocked
// layout an expected rate of at most p: the least bits per key that does, to
// 1/1024 of a bit, found by bisection from the textbook bits per key, which
// is never more than the blocked layout needs. Rates below about 1e-19 are
// out of the layout's reach; for those it returns the larger of
// maxBitsPerKey and the textbook value.
func blockedSizing(p float64) (bitsPerKey float64, k int) {
	ok := func(bpk float64) bool { return blockedRate(bpk, blockedProbes(bpk)) <= p }
	lo := BitsPerKeyForRate(p)
	hi := lo
	for !ok(hi) && hi < maxBitsPerKey {
		lo, hi = hi, min(2*hi, maxBitsPerKey)
	}
	for hi-lo > 1.0/1024 {
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, blockedProbes(hi)
}
