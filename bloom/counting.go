package bloom

import "github.com/shale-db/shale/filter"

// Counting is a counting Bloom filter: the blocked layout of Filter with a
// 4-bit counter in place of each bit (two to a byte, format.go layout 2), so
// that items can be removed. It holds as many counters as a Filter of the
// same expectedItems and rate holds bits, in 4 times the memory, and has the
// same false-positive rate.
//
// Add increments the item's k counters and Remove decrements them. A
// counter saturates at 15: once there, neither Add nor Remove changes it, and
// the cell stays set for good (a few more false positives, never a false
// negative). The guarantee:
//
//   - If every Remove(x) is for an x added more often than removed before,
//     there are no false negatives: MayContain(y) is true for every y added
//     more often than removed.
//   - Remove(x) of an x not currently in the filter (never added, or already
//     removed as often as added) returns false and changes nothing when
//     MayContain(x) is false, which is the usual case. When MayContain(x) is
//     a false positive, which happens at about the filter's rate, Remove
//     cannot tell, decrements x's counters, which count other items, and
//     returns true; each of those items whose counter reaches 0 is from then
//     on a false negative. Saturated counters are the only ones safe from
//     this. So the check in Remove stops most such mistakes, not all: the
//     caller must remove only what it added.
//
// Use NewCounting or UnmarshalBinary to make one. A Counting is not safe
// for concurrent use.
type Counting struct {
	counters []byte // 256 bytes a line
	numLines uint32
	k        int
	keys     uint64 // items the filter was sized for
}

// NewCounting returns an empty counting filter for expectedItems items (at
// least 1) at false-positive rate p, sized as New sizes a Filter. It panics
// unless 0 < p < 1.
func NewCounting(expectedItems int, p float64) *Counting {
	bitsPerKey, k := blockedSizing(p)
	n := max(expectedItems, 1)
	lines := linesFor(n, bitsPerKey)
	return &Counting{counters: make([]byte, int(lines)*countingLineBytes), numLines: lines, k: k, keys: uint64(n)}
}

// probe calls f with the byte and the shift of each of the k counters of
// hash h, in probe order, until f returns false.
func (c *Counting) probe(h uint64, f func(b *byte, shift uint) bool) {
	line, g, step := locate(h, c.numLines)
	l := (*[countingLineBytes]byte)(c.counters[line*countingLineBytes:])
	for range c.k {
		i := cell(g)
		if !f(&l[i/2], uint(i%2)*4) {
			return
		}
		g += step
	}
}

// Add adds item: it increments each of item's counters that is below 15.
func (c *Counting) Add(item []byte) { c.add(filter.Hash(item)) }

func (c *Counting) add(h uint64) {
	c.probe(h, func(b *byte, shift uint) bool {
		if *b>>shift&15 < 15 {
			*b += 1 << shift
		}
		return true
	})
}

// MayContain reports whether item may be in the filter: false only if it
// was never added, or (see Counting) removed as often as added.
func (c *Counting) MayContain(item []byte) bool { return c.mayContain(filter.Hash(item)) }

func (c *Counting) mayContain(h uint64) bool {
	all := true
	c.probe(h, func(b *byte, shift uint) bool {
		all = *b>>shift&15 != 0
		return all
	})
	return all
}

// Remove removes item, if MayContain(item), by decrementing each of its
// counters that is neither 0 nor saturated, and reports whether it did. See
// Counting for what removing an item that is not in the filter does.
func (c *Counting) Remove(item []byte) bool { return c.remove(filter.Hash(item)) }

func (c *Counting) remove(h uint64) bool {
	if !c.mayContain(h) {
		return false
	}
	c.probe(h, func(b *byte, shift uint) bool {
		// A counter can be 0 here only if a cell repeats among the probes
		// of an item that was never added; it stays 0.
		if v := *b >> shift & 15; v != 0 && v != 15 {
			*b -= 1 << shift
		}
		return true
	})
	return true
}

// K returns the number of counters per item.
func (c *Counting) K() int { return c.k }

// MarshalBinary returns the filter in the format at the top of format.go,
// layout 2.
func (c *Counting) MarshalBinary() ([]byte, error) {
	t := trailer{keys: c.keys, lines: c.numLines, k: c.k, layout: layoutCount}
	return t.appendTo(append(make([]byte, 0, len(c.counters)+trailerLen), c.counters...)), nil
}

// UnmarshalBinary replaces c with the filter encoded in data, which it
// copies. Malformed data gives an error matching shale.ErrCorruption and
// leaves c unchanged.
func (c *Counting) UnmarshalBinary(data []byte) error {
	t, counters, err := parseTrailer(data, layoutCount, "counting bloom filter")
	if err != nil {
		return err
	}
	*c = Counting{counters: append([]byte(nil), counters...), numLines: t.lines, k: t.k, keys: t.keys}
	return nil
}
