package ribbon

// The encoded filter, as the policy's writer and Filter.MarshalBinary write
// it:
//
//	offset  size  field
//	0       1     version: 1
//	1       8     seed, uint64 little-endian
//	9       8     n, the number of keys the filter was built for, uint64 little-endian
//	17      4     B, the number of blocks, uint32 little-endian: the filter has
//	              m = 64·B slots; 0 for a filter of no keys (whose other
//	              fields, but the version, are then 0 too)
//	21      1     r, the columns of the lower blocks, 0..31
//	22      4     U, the first upper block, uint32 little-endian, 0..B: blocks
//	              U..B-1 have r+1 columns, blocks 0..U-1 have r
//	26      8·W   the solution, block after block: a block of c columns is c
//	              little-endian uint64 words, word j holding column j of the
//	              block's 64 slots (bit i for slot 64·b+i); W = r·B + (B-U)
//
// A column is one bit of every slot; a key is checked against as many
// columns as its start block has, so the false-positive rate is 2^-r for a
// key starting in a lower block and 2^-(r+1) in an upper one, and r and U
// set the bits per key to any multiple of 64 bits in all.
//
// Probing a 64-bit key hash h (tablefilter.Hash):
//
//	a     = mix(h + seed)                   mix: MurmurHash3's 64-bit finalizer (base.Mix64)
//	start = a·(m-63) >> 64                  the key's first slot, 0..m-64
//	c     = mix(a ^ 0x2545f4914f6cdd1d) | 1  its 64 coefficients, for slots start..start+63
//	fp    = uint32(a)                       its fingerprint: bit j for column j
//
// The filter holds h if, for every column j of start's block, the parity of
// c AND the 64 solution bits of column j at slots start..start+63 is bit j
// of fp. The slots of a key span its start block and the next one, which
// has at least as many columns. A filter of no keys holds nothing; a filter
// whose blocks all have 0 columns holds everything.

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"

	"github.com/shale-db/shale/internal/base"
)

const (
	headerLen  = 26
	version    = 1
	maxColumns = 32      // the fingerprint's bits
	maxKeys    = 1 << 36 // keeps the blocks, at the largest slack, below 2^32
	coeffSalt  = 0x2545f4914f6cdd1d
)

// ErrBuildFailed reports that no seed solved the filter's system within the
// attempts allowed: for every seed, some rows combined to all-zero
// coefficients with a nonzero fingerprint, a local overload of the band.
// The slack makes that unlikely for a first seed and the growing slack of
// later attempts all but impossible; it has not been seen but in a test
// that gives the system fewer slots than keys. A table is then written
// without a filter.
var ErrBuildFailed = errors.New("ribbon: no seed solved the filter's system")

// shape is the size of a filter: blocks of 64 slots, the columns of the
// lower blocks, and the first upper block, which has one more.
type shape struct {
	blocks  uint32
	columns uint8
	upper   uint32
}

func (s shape) slots() int { return 64 * int(s.blocks) }

// starts is the number of slots a key may start at, m-63.
func (s shape) starts() uint64 { return uint64(s.slots()) - 63 }

// columnsOf returns the columns of block b.
func (s shape) columnsOf(b uint32) int {
	if b >= s.upper {
		return int(s.columns) + 1
	}
	return int(s.columns)
}

// words returns W, the solution's length in uint64 words.
func (s shape) words() int { return int(s.columns)*int(s.blocks) + int(s.blocks-s.upper) }

// wordOf returns the index of block b's first word.
func (s shape) wordOf(b uint32) int {
	return int(s.columns)*int(b) + int(b-min(b, s.upper))
}

// slack returns the room, above one slot a key, that a system of n keys is
// given so that it is solvable for a seed with good probability: a
// fraction of the keys that grows with log2 n, as a longer band of 64
// slots fills more unevenly somewhere. With this slack, a first seed solved
// every one of 20 sets of 10,000 and 100,000 random keys and of 6 sets of
// 1M; 2 points less failed 4 times in 20 at 100,000 keys and 5 in 6 at 1M
// (TestFirstSeed keeps an eye on it).
func slack(n int) float64 {
	return 0.04 + 0.0035*math.Log2(float64(max(n, 2)))
}

// shapeFor sizes a filter of n keys (n ≥ 1) at bitsPerKey with the given
// slack: n·(1+slack) slots, rounded up to whole blocks (at least one), and
// the n·bitsPerKey bits, rounded to whole words, spread over the blocks,
// the upper blocks taking one column more than the lower ones.
func shapeFor(n int, bitsPerKey, slack float64) shape {
	blocks := uint32(max(math.Ceil(float64(n)*(1+slack)/64), 1))
	words := uint64(math.Round(float64(n) * bitsPerKey / 64))
	words = min(words, uint64(blocks)*maxColumns)
	columns := words / uint64(blocks)
	extra := words % uint64(blocks)
	if columns == maxColumns {
		columns, extra = maxColumns-1, uint64(blocks)
	}
	return shape{blocks: blocks, columns: uint8(columns), upper: blocks - uint32(extra)}
}

// row returns key hash h's start slot, coefficients and fingerprint under
// seed, for a filter with the given number of starts.
func row(h, seed, starts uint64) (start int, coeff uint64, fp uint32) {
	return rowOf(base.Mix64(h+seed), starts)
}

// rowOf returns the row of the key whose mixed hash is a.
func rowOf(a, starts uint64) (start int, coeff uint64, fp uint32) {
	hi, _ := bits.Mul64(a, starts)
	return int(hi), base.Mix64(a^coeffSalt) | 1, uint32(a)
}

// filter probes an encoded filter in place.
type filter struct {
	shape
	seed     uint64
	solution []byte
}

// word returns word i of the solution.
func (f filter) word(i int) uint64 { return binary.LittleEndian.Uint64(f.solution[8*i:]) }

// MayContain reports whether the key with hash h may have been added.
func (f filter) MayContain(h uint64) bool {
	if f.blocks == 0 {
		return false
	}
	start, coeff, fp := row(h, f.seed, f.starts())
	b := uint32(start / 64)
	off := uint(start % 64)
	w0 := f.wordOf(b)
	cols := f.columnsOf(b)
	if off == 0 {
		for j := range cols {
			if uint32(bits.OnesCount64(coeff&f.word(w0+j))&1) != fp>>j&1 {
				return false
			}
		}
		return true
	}
	// The slots run on into block b+1, whose first word follows block b's.
	w1 := w0 + cols
	for j := range cols {
		window := f.word(w0+j)>>off | f.word(w1+j)<<(64-off)
		if uint32(bits.OnesCount64(coeff&window)&1) != fp>>j&1 {
			return false
		}
	}
	return true
}

// parse checks the header of data against its length and returns the
// filter it encodes and its number of keys. name is the file name in errors.
func parse(data []byte, name string) (filter, uint64, error) {
	if len(data) < headerLen {
		return filter{}, 0, base.CorruptionErrorf(name, -1, "%d bytes, shorter than the %d-byte header", len(data), headerLen)
	}
	if data[0] != version {
		return filter{}, 0, base.CorruptionErrorf(name, 0, "unknown version %d", data[0])
	}
	f := filter{
		shape: shape{
			blocks:  binary.LittleEndian.Uint32(data[17:]),
			columns: data[21],
			upper:   binary.LittleEndian.Uint32(data[22:]),
		},
		seed:     binary.LittleEndian.Uint64(data[1:]),
		solution: data[headerLen:],
	}
	keys := binary.LittleEndian.Uint64(data[9:])
	switch {
	case f.blocks == 0:
		if f.seed != 0 || keys != 0 || f.columns != 0 || f.upper != 0 || len(f.solution) != 0 {
			return filter{}, 0, base.CorruptionErrorf(name, 1, "a filter of no blocks with other fields set or %d bytes of solution", len(f.solution))
		}
		return f, 0, nil
	case f.columns >= maxColumns:
		return filter{}, 0, base.CorruptionErrorf(name, 21, "%d columns, want 0..%d", f.columns, maxColumns-1)
	case f.upper > f.blocks:
		return filter{}, 0, base.CorruptionErrorf(name, 22, "first upper block %d of %d blocks", f.upper, f.blocks)
	case uint64(len(f.solution)) != 8*uint64(f.words()):
		return filter{}, 0, base.CorruptionErrorf(name, 17, "%d blocks of %d columns, %d with one more, are %d words, but %d bytes follow the header",
			f.blocks, f.columns, f.blocks-f.upper, f.words(), len(f.solution))
	}
	return f, keys, nil
}
