package bloom

import (
	"encoding/binary"
	"sync"
	"testing"
)

// TestConcurrentMatchesFilter: a Concurrent filter answers as Filter does
// for the same items and size: the same layout, probed the same way.
func TestConcurrentMatchesFilter(t *testing.T) {
	const n = 20000
	c := NewConcurrent(n, 10)
	f := NewWithBitsPerKey(n, 10)
	key := func(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }
	for i := range n {
		c.Add(key(i))
		f.Add(key(i))
	}
	for i := range 10 * n {
		if got, want := c.MayContain(key(i)), f.MayContain(key(i)); got != want {
			t.Fatalf("item %d: Concurrent says %v, Filter %v", i, got, want)
		}
	}
	if c.Bytes() != len(f.bits.lines) {
		t.Fatalf("%d bytes of bits, Filter has %d", c.Bytes(), len(f.bits.lines))
	}
}

// TestConcurrentAddProbe: items added by one goroutine are never missed by
// probes running at the same time once their Add returned (run with -race).
func TestConcurrentAddProbe(t *testing.T) {
	const n = 5000
	c := NewConcurrent(n, 10)
	var added sync.WaitGroup
	done := make(chan int, n)
	added.Add(1)
	go func() {
		defer added.Done()
		defer close(done)
		for i := range n {
			c.Add(binary.BigEndian.AppendUint64(nil, uint64(i)))
			done <- i
		}
	}()
	for i := range done {
		if !c.MayContain(binary.BigEndian.AppendUint64(nil, uint64(i))) {
			t.Fatalf("item %d added and then missed", i)
		}
	}
	added.Wait()
}
