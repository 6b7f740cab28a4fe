package memtable

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/internal/base"
)

// benchRotate is the Size at which BenchmarkAdd starts a new memtable, as a
// DB would, so memory stays bounded however large b.N grows.
const benchRotate = 64 << 20

// BenchmarkAdd inserts 16-byte keys with 100-byte values, in random order
// and in ascending order.
func BenchmarkAdd(b *testing.B) {
	for _, order := range []string{"random", "sequential"} {
		b.Run(order, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			key := make([]byte, 16)
			value := make([]byte, 100)
			m := New()
			defer func() { m.Free() }()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if order == "random" {
					binary.BigEndian.PutUint64(key, rng.Uint64())
					binary.BigEndian.PutUint64(key[8:], rng.Uint64())
				} else {
					binary.BigEndian.PutUint64(key[8:], uint64(i))
				}
				m.Add(base.SeqNum(i+1), base.KindSet, key, value)
				if m.Size() >= benchRotate {
					m.Free()
					m = New()
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "inserts/s")
		})
	}
}

// benchMemTable returns a memtable of n random 16-byte keys with 100-byte
// values, and the keys.
func benchMemTable(b *testing.B, n int) (*MemTable, [][]byte) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := NewFiltered(n*212, nil) // Size of n such entries
	b.Cleanup(m.Free)
	keys := make([][]byte, n)
	value := make([]byte, 100)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, rng.Uint64()), rng.Uint64())
		m.Add(base.SeqNum(i+1), base.KindSet, keys[i], value)
	}
	return m, keys
}

// BenchmarkGet looks up keys in a memtable of 100k entries, with and
// without a key filter (NewFiltered, sized as a DB sizes it for a memtable
// of that many entries): keys it holds, and keys it does not (each one byte
// off a present key).
func BenchmarkGet(b *testing.B) {
	const n = 100_000
	filtered, keys := benchMemTable(b, n)
	plain := New()
	defer plain.Free()
	for i, k := range keys {
		plain.Add(base.SeqNum(i+1), base.KindSet, k, make([]byte, 100))
	}
	absent := make([][]byte, n)
	for i, k := range keys {
		absent[i] = append(k[:15:15], k[15]^1)
	}
	for _, c := range []struct {
		name string
		m    *MemTable
		keys [][]byte
		want bool
	}{
		{"present", filtered, keys, true}, {"absent", filtered, absent, false},
		{"present/nofilter", plain, keys, true}, {"absent/nofilter", plain, absent, false},
	} {
		m := c.m
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, _, ok := m.Get(c.keys[i%n], base.MaxSeqNum); ok != c.want {
					b.Fatalf("Get(%x) ok = %t", c.keys[i%n], ok)
				}
			}
		})
	}
}

// BenchmarkIter scans a memtable of 100k entries, forward and backward; one
// op is one whole scan.
func BenchmarkIter(b *testing.B) {
	const n = 100_000
	m, _ := benchMemTable(b, n)
	for _, dir := range []string{"forward", "backward"} {
		b.Run(dir, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				it := m.NewIter()
				count := 0
				if dir == "forward" {
					for ok := it.First(); ok; ok = it.Next() {
						count++
					}
				} else {
					for ok := it.Last(); ok; ok = it.Prev() {
						count++
					}
				}
				if count != n {
					b.Fatalf("scanned %d entries, want %d", count, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
		})
	}
}
