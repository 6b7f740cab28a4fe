package bloom

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/shale-db/shale/internal/base"
)

// keySet names a family of keys: key i is a function of i, so keys
// [0, n) can be added and keys [n, n+m) probed as keys never added.
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
	// Sequential decimal keys, fmt.Sprintf("key%010d", i): the trap for
	// weak hashes.
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

// build returns the table filter of hashes at bitsPerKey, decoded.
func build(tb testing.TB, bitsPerKey int, hashes []uint64) base.Filter {
	tb.Helper()
	p := NewPolicy(bitsPerKey)
	w := p.NewWriter()
	for _, h := range hashes {
		w.AddHash(h)
	}
	f, err := p.Decode(w.Finish())
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// positiveRate returns the fraction of hashes f may contain.
func positiveRate(f base.Filter, hashes []uint64) float64 {
	n := 0
	for _, h := range hashes {
		if f.MayContain(h) {
			n++
		}
	}
	return float64(n) / float64(len(hashes))
}

// checkMeasuredRate fails tb unless got, a rate measured over probes absent
// keys, is within 4 standard deviations of the binomial count, plus 2% of
// want for the model, of want. The keys are fixed, so the check is
// deterministic; a fresh set of keys would fail it by chance about once in
// 16,000 times.
func checkMeasuredRate(tb testing.TB, what string, got, want float64, probes int) {
	tb.Helper()
	sigma := math.Sqrt(want * (1 - want) / float64(probes))
	if tol := 4*sigma + 0.02*want; math.Abs(got-want) > tol {
		tb.Errorf("%s: measured false-positive rate %.4f%%, want %.4f%% ± %.4f%%", what, 100*got, 100*want, 100*tol)
	} else {
		tb.Logf("%s: measured false-positive rate %.4f%%, want %.4f%% ± %.4f%%", what, 100*got, 100*want, 100*tol)
	}
}

func TestSeqKeys(t *testing.T) {
	for _, i := range []int{0, 7, 1234567890} {
		if got, want := string(keySets[1].key(i)), fmt.Sprintf("key%010d", i); got != want {
			t.Fatalf("key %d is %q, want %q", i, got, want)
		}
	}
}
