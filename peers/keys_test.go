package peers

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

// numKeys is the number of keys in every filter and every store.
const numKeys = 1_000_000

// seqKey is the sequential decimal key i, as in DESIGN.md.
func seqKey(i int) []byte { return fmt.Appendf(nil, "key%010d", i) }

// seqKeys returns seqKey(lo) .. seqKey(hi-1).
func seqKeys(lo, hi int) [][]byte {
	ks := make([][]byte, 0, hi-lo)
	for i := lo; i < hi; i++ {
		ks = append(ks, seqKey(i))
	}
	return ks
}

// randomKeys returns n random 16-byte keys. The top bit of the first byte is
// fixed to topBit, so sets drawn with different topBit never share a key.
func randomKeys(n int, seed uint64, topBit byte) [][]byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ks := make([][]byte, n)
	for i := range ks {
		k := make([]byte, 16)
		for j := 0; j < 16; j += 8 {
			v := r.Uint64()
			for b := 0; b < 8; b++ {
				k[j+b] = byte(v >> (8 * b))
			}
		}
		k[0] = k[0]&0x7f | topBit
		ks[i] = k
	}
	return ks
}

// value returns the 100-byte value of key i: pseudo-random bytes, so that
// snappy cannot shrink the data to nothing and every engine stores about
// the same number of bytes.
func value(i int) []byte {
	v := make([]byte, 100)
	x := uint64(i)*0x9e3779b97f4a7c15 + 1
	for j := range v {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[j] = byte(x)
	}
	return v
}

// shuffled returns keyFn(i) for every i in [0, n), in a fixed random order.
func shuffled(n int, seed uint64, keyFn func(int) []byte) [][]byte {
	r := rand.New(rand.NewPCG(seed, 1))
	ks := make([][]byte, n)
	for j, i := range r.Perm(n) {
		ks[j] = keyFn(i)
	}
	return ks
}

var tempDirs []string

func tempDir(prefix string) string {
	d, err := os.MkdirTemp("", "shale-peers-"+prefix+"-")
	if err != nil {
		panic(err)
	}
	tempDirs = append(tempDirs, d)
	return d
}

func TestMain(m *testing.M) {
	code := m.Run()
	closeEngines()
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
