package bloom

// The encoded Bloom filter, as written by the writer of the table policy
// (NewPolicy), by Filter.MarshalBinary and by Counting.MarshalBinary:
//
//	offset    size   field
//	0         S·L    L lines of S bytes each (S = 64 for bits, 256 for counters)
//	S·L       8      n, the number of keys the filter was sized for, uint64 little-endian
//	S·L+8     4      L, the number of lines, uint32 little-endian, at least 1
//	S·L+12    1      k, probes per key, 1..30
//	S·L+13    1      layout: 1 = bits (S = 64), 2 = 4-bit counters (S = 256)
//	S·L+14    1      version: 1
//
// A line holds 512 cells. With layout 1 a cell is a bit: cell c of line i is
// bit c%8 (bit 0 the least significant) of byte 64·i + c/8, so a line is
// one 64-byte cache line. With layout 2 (Counting) a cell is a 4-bit counter:
// cell c of line i is the low nibble of byte 256·i + c/2 for even c and the
// high nibble for odd c.
//
// The parameters sit in a trailer so that the cells start at offset 0 of the
// block that holds them. A reader takes L, k and the layout from the trailer
// and checks that the length of the data is exactly S·L + 15; n is not
// needed to probe and is kept so that a filter can report its bits per key.
//
// Probing a 64-bit key hash h (filter.Hash: xxhash64 of the key):
//
//	line   = (h>>32) · L >> 32            the high half of h, scaled to [0, L)
//	x      = uint32(h)                     the low half of h
//	step   = x · 0x85ebca6b | 1            an odd 32-bit step
//	probe i (0 ≤ i < k) reads cell  c_i = ((g ^ g>>16) · 0x9e3779b9) >> 23,
//	                          where g = x + i·step  (mod 2^32)
//
// The line and the cells come from disjoint halves of h, so which line a key
// lands in says nothing about which cells it sets there. g_0..g_{k-1} is
// double hashing, h1 + i·h2, on the low half; the step is a function of x,
// so two keys share a probe sequence only if their x are equal (a chance of
// 2^-32 a pair). The step is forced odd because
// an odd step is invertible mod 2^32, so the k values g_i are distinct; a
// step of 0 would make all k probes one probe and the filter as weak as a
// one-probe filter (a false positive whenever that one cell is set, about
// half the time at the usual load). Each g_i then goes through a
// xorshift-multiply mix whose top 9 bits name the cell. The mix matters:
// taking the cells straight from g_i (the top 9 bits of an arithmetic
// progression) makes two keys whose progressions are offset by one step
// share k-1 cells; when this scheme was chosen, that measured 1.02-1.05%
// false positives at 10 bits per key and 1M keys (and cells a + i·b mod 512,
// 1.07%), against 0.96% with the mix. After the mix, two keys share cells
// only by chance, so a line behaves as if probed at independent random
// cells, which is what blockedRate assumes.

import (
	"encoding/binary"
	"math"

	"github.com/shale-db/shale/internal/base"
)

const (
	lineCells = 512           // cells per line
	lineBytes = lineCells / 8 // bytes per line of layout 1: one cache line

	countingLineBytes = lineCells / 2 // bytes per line of layout 2

	trailerLen  = 15
	version     = 1
	layoutBits  = 1
	layoutCount = 2

	stepMul = 0x85ebca6b
	mixMul  = 0x9e3779b9
)

// trailer holds the parameters an encoded filter records about itself.
type trailer struct {
	keys   uint64 // n, the keys the filter was sized for
	lines  uint32 // L, at least 1
	k      int    // probes per key, 1..maxProbes
	layout byte
}

func (t trailer) appendTo(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, t.keys)
	dst = binary.LittleEndian.AppendUint32(dst, t.lines)
	return append(dst, byte(t.k), t.layout, version)
}

// lineSize returns S, the bytes per line of a layout.
func lineSize(layout byte) int {
	if layout == layoutCount {
		return countingLineBytes
	}
	return lineBytes
}

// parseTrailer checks that data is a filter of the given layout and returns
// its trailer and its lines. name is the file name in errors.
func parseTrailer(data []byte, layout byte, name string) (trailer, []byte, error) {
	if len(data) < trailerLen {
		return trailer{}, nil, base.CorruptionErrorf(name, -1, "%d bytes, shorter than the %d-byte trailer", len(data), trailerLen)
	}
	off := len(data) - trailerLen
	tr := data[off:]
	t := trailer{
		keys:   binary.LittleEndian.Uint64(tr[0:]),
		lines:  binary.LittleEndian.Uint32(tr[8:]),
		k:      int(tr[12]),
		layout: tr[13],
	}
	switch {
	case tr[14] != version:
		return trailer{}, nil, base.CorruptionErrorf(name, int64(off+14), "unknown version %d", tr[14])
	case t.layout != layout:
		return trailer{}, nil, base.CorruptionErrorf(name, int64(off+13), "layout %d, want %d", t.layout, layout)
	case t.k < 1 || t.k > maxProbes:
		return trailer{}, nil, base.CorruptionErrorf(name, int64(off+12), "%d probes per key, want 1..%d", t.k, maxProbes)
	case t.lines == 0:
		return trailer{}, nil, base.CorruptionErrorf(name, int64(off+8), "zero lines")
	case uint64(off) != uint64(t.lines)*uint64(lineSize(layout)):
		return trailer{}, nil, base.CorruptionErrorf(name, int64(off+8), "L=%d lines × %d bytes = %d bytes before the trailer, found %d", t.lines, lineSize(layout), uint64(t.lines)*uint64(lineSize(layout)), off)
	}
	return t, data[:off], nil
}

// linesFor returns the number of lines for n keys at bitsPerKey: enough for
// n·bitsPerKey cells, at least one, at most 2^32-1 (a 256 GiB filter).
func linesFor(n int, bitsPerKey float64) uint32 {
	return uint32(min(max(math.Ceil(float64(n)*bitsPerKey/lineCells), 1), math.MaxUint32))
}

// locate returns the line of hash h among numLines lines, and the start and
// the step of its probe sequence (see the top of this file).
func locate(h uint64, numLines uint32) (line int, x, step uint32) {
	line = int((h >> 32) * uint64(numLines) >> 32)
	x = uint32(h)
	return line, x, x*stepMul | 1
}

// cell maps the probe value g to a cell of a line, 0..511.
func cell(g uint32) uint32 { return (g ^ g>>16) * mixMul >> 23 }

// bitset is a filter of layout 1: lines of 512 bits, probed in place.
type bitset struct {
	lines    []byte // 64 bytes a line
	numLines uint32
	k        int
}

// newBitset returns an empty bitset with room after its lines for the
// trailer, so that encoding it does not copy it.
func newBitset(numLines uint32, k int) bitset {
	n := int(numLines) * lineBytes
	return bitset{lines: make([]byte, n, n+trailerLen), numLines: numLines, k: k}
}

func (b bitset) add(h uint64) {
	line, g, step := locate(h, b.numLines)
	l := (*[lineBytes]byte)(b.lines[line*lineBytes:])
	for range b.k {
		c := cell(g)
		l[c/8] |= 1 << (c % 8)
		g += step
	}
}

// MayContain reports whether the key with hash h may have been added.
func (b bitset) MayContain(h uint64) bool {
	line, g, step := locate(h, b.numLines)
	l := (*[lineBytes]byte)(b.lines[line*lineBytes:])
	for range b.k {
		c := cell(g)
		if l[c/8]&(1<<(c%8)) == 0 {
			return false
		}
		g += step
	}
	return true
}
