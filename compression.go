package shale

import (
	"fmt"

	"github.com/shale-db/shale/internal/sstable"
)

// Compression is how a new SSTable's blocks are compressed. A block is
// stored compressed only when that makes it at least 12.5% smaller, and raw
// otherwise. Every table records its compression (TableInfo.Compression)
// and each block how it is stored, so a store can mix compressions: a
// change of Options.Compression applies to the tables written from then on,
// and the others are read as they are.
//
// A Compression is also a CompressionPolicy that uses it at every level.
type Compression int

const (
	// SnappyCompression, the zero value and the default, compresses with
	// snappy: fast, and about 2x on text.
	SnappyCompression Compression = iota
	// NoCompression stores every block raw: no CPU spent, for values that
	// are random, encrypted or compressed already.
	NoCompression
	// ZstdCompression compresses with zstd at its default level (about the
	// reference library's level 3): smaller tables than snappy's on
	// compressible data, at more CPU per block written and read; see
	// docs/compression.md for measurements. Tables written with it are
	// format version 3, which shale binaries from before zstd refuse by
	// that version: a store holding them cannot be opened by such a binary.
	ZstdCompression
)

// String is the compression's name: "snappy", "none" or "zstd".
func (c Compression) String() string {
	if c < SnappyCompression || c > ZstdCompression {
		return fmt.Sprintf("Compression(%d)", int(c))
	}
	return c.table().String()
}

// table is c as the sstable package knows it.
func (c Compression) table() sstable.Compression {
	switch c {
	case SnappyCompression:
		return sstable.SnappyCompression
	case NoCompression:
		return sstable.NoCompression
	case ZstdCompression:
		return sstable.ZstdCompression
	}
	panic(fmt.Sprintf("shale: unknown compression %d", int(c)))
}

func (c Compression) compressionFor(int) Compression { return c }

// CompressionPolicy chooses the compression of each new SSTable by the
// level it is written to: one Compression for every level, or
// PerLevelCompression. As in RocksDB, a common choice is snappy above and
// zstd at the bottom level, which holds most of the data and is rewritten
// least often:
//
//	opts.Compression = shale.PerLevelCompression{6: shale.ZstdCompression}
//
// A table moved to another level without being rewritten (a move
// compaction) keeps its compression.
type CompressionPolicy interface {
	compressionFor(level int) Compression
}

// PerLevelCompression is a CompressionPolicy giving each level (index =
// level, L0 to L6) its compression; entries left zero are
// SnappyCompression. The bottom level is L6 (NumLevels-1): flushes write
// L0, and compactions move data down to L6 whatever the store's size.
type PerLevelCompression [NumLevels]Compression

func (p PerLevelCompression) compressionFor(level int) Compression { return p[level] }

// compressionFor returns the compression of a new table at level.
func (o *Options) compressionFor(level int) sstable.Compression {
	if o.Compression == nil {
		return sstable.SnappyCompression
	}
	return o.Compression.compressionFor(level).table()
}

// validateCompression refuses a policy that gives some level a value
// that is not one of the Compression constants.
func validateCompression(p CompressionPolicy) error {
	if p == nil {
		return nil
	}
	for level := range NumLevels {
		switch c := p.compressionFor(level); c {
		case SnappyCompression, NoCompression, ZstdCompression:
		default:
			return fmt.Errorf("shale: Options.Compression gives L%d unknown %v", level, c)
		}
	}
	return nil
}
