// Package filtertest holds what the filter packages' tests share: the key
// families they measure with (random keys, and sequential decimal keys,
// the trap for weak hashes) and the datadriven commands every filter
// format answers the same way. Key i of a family is a function of i, so
// keys [0, n) can be added to a filter and keys [n, n+m) probed as keys
// never added.
package filtertest

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"

	"github.com/shale-db/shale/filter"
)

// Set is one family of keys.
type Set struct {
	Name string
	Key  func(i int) []byte

	once   sync.Once
	cached []uint64 // the hashes of keys [0, cachedKeys)
}

// Sets are the families every filter test runs over.
var Sets = []*Set{
	// 16 random bytes, from a generator seeded with i.
	{Name: "random", Key: func(i int) []byte {
		var r rand.PCG
		r.Seed(uint64(i), 0x5eed)
		b := binary.LittleEndian.AppendUint64(nil, r.Uint64())
		return binary.LittleEndian.AppendUint64(b, r.Uint64())
	}},
	// Sequential decimal keys, fmt.Sprintf("key%010d", i).
	{Name: "seq", Key: func(i int) []byte {
		b := []byte("key0000000000")
		for j := len(b) - 1; i > 0; j-- {
			b[j] = byte('0' + i%10)
			i /= 10
		}
		return b
	}},
}

// cachedKeys is how many hashes of each set are computed once and shared:
// enough for 200,000 keys added and 1,000,000 probed.
const cachedKeys = 1_200_000

// Hashes returns the filter.Hash of keys [from, to). The slice may be
// shared; callers must not modify it.
func (s *Set) Hashes(from, to int) []uint64 {
	if to <= cachedKeys {
		s.once.Do(func() { s.cached = s.compute(0, cachedKeys) })
		return s.cached[from:to:to]
	}
	return s.compute(from, to)
}

func (s *Set) compute(from, to int) []uint64 {
	hs := make([]uint64, 0, to-from)
	for i := from; i < to; i++ {
		hs = append(hs, filter.Hash(s.Key(i)))
	}
	return hs
}

// PositiveRate returns the fraction of hashes f may contain.
func PositiveRate(f filter.Filter, hashes []uint64) float64 {
	n := 0
	for _, h := range hashes {
		if f.MayContain(h) {
			n++
		}
	}
	return float64(n) / float64(len(hashes))
}
