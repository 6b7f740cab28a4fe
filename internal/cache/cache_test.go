package cache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func block(n int, fill byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = fill
	}
	return b
}

// keys lists a single-shard cache's keys, most recently used first.
func keys(c *Cache) []string {
	var out []string
	s := &c.shards[0]
	for e := s.head.next; e != &s.head; e = e.next {
		out = append(out, fmt.Sprintf("%d/%d", e.fileNum, e.key))
	}
	return out
}

func TestLRUOrder(t *testing.T) {
	c := newSharded(300, 1)
	c.Set(1, 0, block(100, 'a'))
	c.Set(1, 100, block(100, 'b'))
	c.Set(2, 0, block(100, 'c'))
	if got, want := keys(c), []string{"2/0", "1/100", "1/0"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	// A Get makes 1/0 the most recently used, so 1/100 is evicted next.
	if b, ok := c.Get(1, 0); !ok || b[0] != 'a' {
		t.Fatalf("Get(1,0) = %q, %v", b, ok)
	}
	c.Set(3, 0, block(100, 'd'))
	if got, want := keys(c), []string{"3/0", "1/0", "2/0"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if _, ok := c.Get(1, 100); ok {
		t.Fatal("1/100 should have been evicted")
	}
	if hits, misses := c.Stats(); hits != 1 || misses != 1 {
		t.Fatalf("stats %d hits %d misses, want 1 and 1", hits, misses)
	}
}

func TestCapacity(t *testing.T) {
	c := newSharded(1000, 1)
	for i := range 100 {
		c.Set(1, uint64(i), block(1+i%300, byte(i)))
		if c.Size() > 1000 {
			t.Fatalf("after %d sets size %d > capacity 1000", i+1, c.Size())
		}
	}
	// A block larger than the capacity is not cached and drops the block
	// it would have replaced.
	c.Set(7, 0, block(10, 'x'))
	c.Set(7, 0, block(1001, 'y'))
	if _, ok := c.Get(7, 0); ok {
		t.Fatal("oversized block was cached")
	}
	// Replacing a block charges the new length only.
	before := c.Size()
	c.Set(8, 0, block(50, 'a'))
	c.Set(8, 0, block(20, 'b'))
	if b, _ := c.Get(8, 0); len(b) != 20 || c.Size() > before+20 {
		t.Fatalf("replace: got len %d, size %d (before %d)", len(b), c.Size(), before)
	}
}

func TestZeroCapacityAndNil(t *testing.T) {
	for _, c := range []*Cache{nil, New(0), New(-5)} {
		c.Set(1, 0, block(1, 'a'))
		if _, ok := c.Get(1, 0); ok {
			t.Fatal("cache without capacity returned a block")
		}
		c.EvictFile(1)
		if c.Size() != 0 {
			t.Fatalf("size %d", c.Size())
		}
	}
	if hits, misses := (*Cache)(nil).Stats(); hits != 0 || misses != 0 {
		t.Fatal("nil cache counted")
	}
}

func TestEvictFile(t *testing.T) {
	c := New(8 << 20)
	for f := uint64(1); f <= 3; f++ {
		for off := uint64(0); off < 100*4096; off += 4096 {
			c.Set(f, off, block(4096, byte(f)))
		}
	}
	c.EvictFile(2)
	if got, want := c.Size(), int64(2*100*4096); got != want {
		t.Fatalf("size after EvictFile %d, want %d", got, want)
	}
	for off := uint64(0); off < 100*4096; off += 4096 {
		if _, ok := c.Get(2, off); ok {
			t.Fatalf("block 2/%d survived EvictFile", off)
		}
		if b, ok := c.Get(3, off); !ok || b[0] != 3 {
			t.Fatalf("block 3/%d lost", off)
		}
	}
}

func TestShardCount(t *testing.T) {
	for _, tc := range []struct{ capacity, shards int }{
		{0, 1}, {256 << 10, 1}, {512 << 10, 2}, {1 << 20, 4}, {8 << 20, 16}, {1 << 30, 16},
	} {
		if got := len(New(tc.capacity).shards); got != tc.shards {
			t.Errorf("New(%d): %d shards, want %d", tc.capacity, got, tc.shards)
		}
	}
}

// TestRandomAgainstModel drives a one-shard cache and a plain slice LRU with
// the same random operations and compares every answer.
func TestRandomAgainstModel(t *testing.T) {
	type item struct {
		file, off uint64
		n         int
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const capacity = 2000
	c := newSharded(capacity, 1)
	var model []item // most recently used first
	find := func(f, o uint64) int {
		return slices.IndexFunc(model, func(it item) bool { return it.file == f && it.off == o })
	}
	for i := range 20000 {
		f, o := rng.Uint64N(4), rng.Uint64N(20)
		switch rng.IntN(10) {
		case 0:
			c.EvictFile(f)
			model = slices.DeleteFunc(model, func(it item) bool { return it.file == f })
		case 1, 2, 3, 4:
			n := rng.IntN(400)
			c.Set(f, o, block(n, byte(i)))
			if j := find(f, o); j >= 0 {
				model = slices.Delete(model, j, j+1)
			}
			if n <= capacity {
				model = slices.Insert(model, 0, item{f, o, n})
			}
			total := 0
			for j, it := range model {
				total += it.n
				if total > capacity {
					model = model[:j]
					break
				}
			}
		default:
			b, ok := c.Get(f, o)
			j := find(f, o)
			if ok != (j >= 0) {
				t.Fatalf("op %d: Get(%d,%d) ok=%v, model has it: %v", i, f, o, ok, j >= 0)
			}
			if ok {
				if len(b) != model[j].n {
					t.Fatalf("op %d: Get(%d,%d) len %d, want %d", i, f, o, len(b), model[j].n)
				}
				it := model[j]
				model = slices.Insert(slices.Delete(model, j, j+1), 0, it)
			}
		}
	}
}

func TestConcurrent(t *testing.T) {
	c := New(1 << 20)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for range 5000 {
				f, off := rng.Uint64N(8), rng.Uint64N(64)*4096
				switch rng.IntN(20) {
				case 0:
					c.EvictFile(f)
				case 1, 2, 3, 4, 5:
					c.Set(f, off, block(4096, byte(f^off>>12)))
				default:
					if b, ok := c.Get(f, off); ok && (len(b) != 4096 || b[0] != byte(f^off>>12)) {
						t.Errorf("Get(%d,%d) returned the wrong block", f, off)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if c.Size() > 1<<20 {
		t.Fatalf("size %d over capacity", c.Size())
	}
}

// BenchmarkCacheParallel measures hits from all cores at once, with one
// mutex and with the sharded default.
func BenchmarkCacheParallel(b *testing.B) {
	const blocks = 1024
	for _, shards := range []int{1, maxShards} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			c := newSharded(8<<20, shards)
			for i := range blocks {
				c.Set(uint64(i%8), uint64(i)*4096, block(4096, 0))
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := rand.Uint64()
				for pb.Next() {
					i++
					if _, ok := c.Get(i%8, (i%blocks)*4096); !ok {
						b.Error("miss")
						return
					}
				}
			})
		})
	}
}
