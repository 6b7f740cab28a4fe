package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/vfs"
)

const benchKeys = 100_000

// benchTable writes benchKeys entries, keys "key%08d" of the even numbers
// (so odd ones are absent) and 100-byte values, and opens the table with a
// cache that holds all of it.
func benchTable(b *testing.B, policy filter.Policy) *Reader {
	fs := vfs.NewMem()
	f, _ := fs.Create("t.sst")
	w := NewWriter(f, WriterOptions{FilterPolicy: policy})
	value := make([]byte, 100)
	for i := range benchKeys {
		copy(value, fmt.Sprintf("value %d", i))
		if err := w.Add(base.MakeInternalKey(fmt.Appendf(nil, "key%08d", 2*i), base.SeqNum(i+1), base.KindSet), value); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return openTable(b, fs, "t.sst", ReaderOptions{
		FileNum: 1,
		Cache:   cache.New(64 << 20),
		Filters: []filter.Policy{bloom.NewPolicy(10)},
	})
}

func BenchmarkGet(b *testing.B) {
	for _, c := range []struct {
		name   string
		policy filter.Policy
	}{{"filter=none", nil}, {"filter=10", bloom.NewPolicy(10)}} {
		r := benchTable(b, c.policy)
		for _, present := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/present=%v", c.name, present), func(b *testing.B) {
				keys := make([][]byte, 1024)
				for i := range keys {
					n := 2 * (i * 7919 % benchKeys)
					if !present {
						n++
					}
					keys[i] = fmt.Appendf(nil, "key%08d", n)
				}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					_, _, found, err := r.Get(keys[i%len(keys)], base.MaxSeqNum, nil)
					if err != nil || found != present {
						b.Fatalf("Get: found %v, err %v", found, err)
					}
				}
			})
		}
		r.Close()
	}
}

func BenchmarkScan(b *testing.B) {
	r := benchTable(b, nil)
	defer r.Close()
	b.ReportAllocs()
	for b.Loop() {
		it := r.NewIter()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil || n != benchKeys {
			b.Fatalf("scan saw %d entries, err %v", n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchKeys), "ns/entry")
}

// BenchmarkSeekGE seeks an iterator to present keys, in an order that
// jumps between blocks, and reads the entry it lands on.
func BenchmarkSeekGE(b *testing.B) {
	r := benchTable(b, nil)
	defer r.Close()
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%08d", 2*(i*7919%benchKeys))
	}
	it := r.NewIter()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := keys[i%len(keys)]
		if !it.SeekGE(k) || !bytes.Equal(it.Key().UserKey, k) {
			b.Fatalf("SeekGE(%s): valid %v, err %v", k, it.Valid(), it.Error())
		}
	}
	if err := it.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWriter writes tables of 16-byte keys and 100-byte values, as
// kvbench's fills do, with random values (incompressible) and with values
// that snappy halves: the cost per entry of building a table, the file's
// writes left out.
func BenchmarkWriter(b *testing.B) {
	const entries = 20_000
	rng := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		name  string
		value func() []byte
	}{
		{"values=random", func() []byte {
			v := make([]byte, 100)
			for i := range v {
				v[i] = byte(rng.Uint32())
			}
			return v
		}},
		{"values=compressible", func() []byte {
			v := make([]byte, 100)
			for i := range 50 {
				v[i] = byte(rng.Uint32())
			}
			copy(v[50:], v[:50])
			return v
		}},
	} {
		values := make([][]byte, 1024)
		for i := range values {
			values[i] = tc.value()
		}
		keys := make([]base.InternalKey, entries)
		for i := range keys {
			keys[i] = base.MakeInternalKey(fmt.Appendf(nil, "%016d", i), base.SeqNum(i+1), base.KindSet)
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				w := NewWriter(&discardFile{}, WriterOptions{FilterPolicy: bloom.NewPolicy(10)})
				for i, k := range keys {
					if err := w.Add(k, values[i%len(values)]); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*entries), "ns/entry")
		})
	}
}

// discardFile is a vfs.File that keeps nothing.
type discardFile struct{ size int64 }

func (f *discardFile) Write(p []byte) (int, error) { f.size += int64(len(p)); return len(p), nil }
func (f *discardFile) ReadAt(p []byte, off int64) (int, error) {
	return 0, errors.New("discardFile: not readable")
}
func (f *discardFile) Close() error         { return nil }
func (f *discardFile) Sync() error          { return nil }
func (f *discardFile) Size() (int64, error) { return f.size, nil }
