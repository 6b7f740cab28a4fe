package bloom

import (
	"fmt"
	"sync/atomic"

	"github.com/shale-db/shale/filter"
)

// Concurrent is a Bloom filter that goroutines may add to and probe at the
// same time without a lock: the memtable's filter of its keys, which the
// commit path adds to while reads probe it. It is Filter's blocked layout,
// probed the same way (format.go), with each 512-bit line held as eight
// 64-bit words: Add sets bits with atomic ORs and MayContain reads them
// with atomic loads, so a probe that starts after an Add returned sees
// every bit the Add set. It lives in memory only; it has no encoding.
type Concurrent struct {
	words    []atomic.Uint64 // wordsPerLine words a line; cell c of a line is bit c%64 of its word c/64
	numLines uint32
	k        int
}

const wordsPerLine = lineCells / 64

// NewConcurrent returns an empty filter of bitsPerKey bits for each of
// expectedItems items (at least 1), with NewWithBitsPerKey's number of
// probes. It panics unless 1 <= bitsPerKey <= 1024.
func NewConcurrent(expectedItems int, bitsPerKey float64) *Concurrent {
	if !(bitsPerKey >= 1 && bitsPerKey <= maxBitsPerKey) {
		panic(fmt.Sprintf("bloom: %v bits per key is not in [1, %d]", bitsPerKey, maxBitsPerKey))
	}
	n := linesFor(max(expectedItems, 1), bitsPerKey)
	return &Concurrent{words: make([]atomic.Uint64, int(n)*wordsPerLine), numLines: n, k: blockedProbes(bitsPerKey)}
}

// Add adds item.
func (c *Concurrent) Add(item []byte) {
	line, g, step := locate(filter.Hash(item), c.numLines)
	l := c.words[line*wordsPerLine : (line+1)*wordsPerLine]
	for range c.k {
		b := cell(g)
		l[b/64].Or(1 << (b % 64))
		g += step
	}
}

// MayContain reports false only if item was never added.
func (c *Concurrent) MayContain(item []byte) bool {
	line, g, step := locate(filter.Hash(item), c.numLines)
	l := c.words[line*wordsPerLine : (line+1)*wordsPerLine]
	for range c.k {
		b := cell(g)
		if l[b/64].Load()&(1<<(b%64)) == 0 {
			return false
		}
		g += step
	}
	return true
}

// Bytes returns the memory the filter's bits take.
func (c *Concurrent) Bytes() int { return len(c.words) * 8 }
