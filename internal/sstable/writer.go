// Package sstable reads and writes shale's sorted string tables: immutable
// files of internal keys and values in key order, cut into checksummed,
// optionally compressed (snappy or zstd) blocks, with an index of the
// blocks and a filter of the user keys that a reader keeps in memory.
//
// # File format (versions 1 to 3)
//
// A table is a sequence of blocks followed by a fixed-size footer:
//
//	[data block 0] ... [data block N-1]
//	[filter block]        only when written with a FilterPolicy
//	[range-filter block]  only when written with WriterOptions.RangeFilter
//	[index block]
//	[properties block]
//	[range-del block]     version 2 only
//	[metaindex block]
//	[footer]              56 bytes
//
// Version 2 is version 1 plus the range-deletion block, and a table is
// written in version 2 exactly when it holds range tombstones; a table
// without them is still written in version 1, which binaries from before
// range deletions read. Those binaries refuse a version 2 table by its
// footer rather than read it without its tombstones.
//
// Version 3 is version 2 plus zstd blocks (block type 2), with the
// range-deletion block present exactly when the table holds range
// tombstones; a table is written in version 3 exactly when its writer
// compresses with zstd (WriterOptions.Compression), whether or not any
// block ended up stored with zstd, so that which binaries can read a table
// depends on the option alone. Binaries from before zstd read a block type
// they do not know as corruption ("unknown block type 2"): they would open
// such a table (if its index and properties happened to be raw) and fail
// only at its first zstd data block, as if the table were damaged, which
// an operator might then act on by discarding it. Version 3 makes them
// refuse it at open, by its footer, with an error that names the version
// ("unknown format version 3"). Readers read every version, and take a
// block of any type in any of them.
//
// Integers are little-endian; a uvarint is encoding/binary's unsigned
// varint (1 to 10 bytes).
//
// Every block is stored as its contents followed by a 5-byte trailer:
//
//	contents   n bytes
//	type       1 byte: 0 = stored raw, 1 = snappy-compressed contents,
//	           2 = zstd-compressed contents (version 3)
//	checksum   4 bytes, uint32: the low 32 bits of xxhash64(contents || type)
//
// Snappy-compressed contents are snappy's block format, which starts with
// the uvarint decompressed length; a reader refuses a length above 512 MiB
// (maxBlockLen) or 22 times the stored length (maxSnappyRatio) before it
// allocates. Zstd-compressed contents are exactly one zstd frame (RFC
// 8878), without a dictionary or content checksum (the trailer's checksum
// covers the block), single-segment, so that its header holds the
// decompressed length; a reader refuses a frame without that length, a
// length above maxBlockLen or 32768 times the stored length
// (maxZstdRatio: zstd's densest block, RLE, turns 4 bytes into 128 KiB),
// and contents that decode to another length or hold more than the one
// frame. Every byte of a block passes its checksum before it reaches a
// decompressor, so those bounds guard against crafted files rather than
// damage.
//
// A block is compressed only when the compression makes it at least 12.5%
// smaller; otherwise it is stored raw, which is also how filter blocks are
// stored (their bits are random, so no compression shrinks them). A writer
// that finds its data incompressible also stores most data blocks raw
// without trying to compress them (see incompressibleRun); readers cannot
// tell the difference.
//
// A block handle locates a block: uvarint offset of its first byte in the
// file, then uvarint n, the length of its stored contents (the trailer not
// counted).
//
// Data, index, properties and metaindex blocks share one layout of key/value
// entries with prefix-compressed keys. Uncompressed, a block is:
//
//	entry 0 ... entry k-1
//	restart[0] ... restart[r-1]   uint32 each: offset in the block of a
//	                              restart entry; restart[0] = 0
//	r                             uint32, >= 1 (an empty block has r = 1)
//
// and each entry is:
//
//	shared     uvarint: length of the prefix this key shares with the
//	           previous entry's key; 0 at a restart entry
//	unshared   uvarint: length of the rest of the key
//	value_len  uvarint
//	key_delta  unshared bytes; key = previous key[:shared] + key_delta
//	value      value_len bytes
//
// Every RestartInterval-th entry is a restart entry holding its full key, so
// a reader binary-searches the restart array and then scans at most
// RestartInterval entries. Keys strictly increase within a block.
//
// Data blocks hold the table's entries: the key is the encoded internal key
// (user key, then the 8-byte trailer seqnum<<8 | kind), the value is the
// value (empty for a deletion). A data block is cut as soon as its
// uncompressed size reaches BlockSize, or before an entry that would take it
// past 512 MiB (maxBlockLen).
//
// The index block has one entry per data block, with restart interval 16
// (indexRestartInterval); tables written before that have interval 1 (no
// prefix compression). Every shale binary's reader searches an index block
// as it does a data block (binary search over the restart points, then a
// scan), so each reads both. An entry's key is a separator, an internal key
// >= every key of the block and < every key of the next block; its value
// is the block's handle. Between two blocks whose boundary keys have user
// keys a < b, the separator is s = a's common prefix with b plus a's next
// byte incremented, when that byte exists and stays below b's, with
// trailer (MaxSeqNum, KindMax) so that it sorts before every real entry
// for s; otherwise it is the block's last key. After the last block the
// separator is the shortest user key above the last user key (increment
// its first byte that is not 0xff and drop what follows), or the last key
// when there is none. Short separators, and the prefixes they share within
// a restart interval, keep the index, which readers hold in memory, small.
//
// The filter block holds what the FilterPolicy's writer returned after it
// was given filter.Hash of each distinct user key in the table, once. A
// table written with a prefix extractor (WriterOptions.PrefixLength) also
// gives it PrefixHash of each key's prefix, the first PrefixLength(key)
// bytes of the user key (none when that length is outside 1..len(key)),
// once per run of consecutive keys sharing it: for the usual extractors,
// whose prefixes of keys in order come in runs, once per distinct prefix.
// PrefixHash is filter.Hash XOR 0x9e3779b97f4a7c15, so that a prefix does
// not answer for a key of the same bytes. The policy sizes the filter for
// all it was given, keys plus prefixes, so its false-positive rate for keys
// is what it is without prefixes; num-prefixes counts them, and the
// prefix-extractor property names the extractor, whose prefixes a reader
// looks up only for a store using the extractor of that name. A binary
// from before prefix filters ignores both properties (readers skip names
// they do not know) and reads the filter as a filter of keys with more
// entries, which it is: no key is missing from it, so its lookups stay
// correct, at the rate of the keys-plus-prefixes sizing. When the writer
// cannot build a filter for what it was given (a binary fuse filter that no
// seed peels), the table has no filter block and no filter-policy,
// prefix-extractor or num-prefixes property, and filter-error says why.
//
// The range-deletion block holds the table's range tombstones, fragmented
// (they do not overlap one another), in the encoding that
// internal/rangedel/format.go describes byte by byte, stored like a data
// block (compressed as the data blocks are). A reader decodes it at open
// and keeps the tombstones in memory next to the index and filter. The
// tombstones of a table lie within its bounds: a compaction truncates them
// where it cuts its output into tables. The table's smallest and largest
// keys (properties smallest and largest) cover its tombstones: a tombstone
// [s, e) at seqnum t extends them to at least s#t,RANGEDEL and to
// e#MaxSeqNum,RANGEDEL, a sentinel key that sorts before every entry for e
// and says that the table's range ends just before e. Tombstones never
// appear in data blocks, and the filter holds point keys only: a filter's
// "definitely not" for a key does not say that no tombstone of the table
// covers it.
//
// The range-filter block holds a Grafite range filter (package
// rangefilter) of every user key the table holds: each distinct user key of
// its entries (values and deletions) and the start key of each of its
// range-tombstone fragments. It is stored raw, in the encoding of
// rangefilter.Builder.Finish, byte by byte:
//
//	map_name_len  uvarint
//	map_name      map_name_len bytes: the rangefilter.UserMap's name, or
//	              empty for the table's own dense map
//	map_len       uvarint                  } only when map_name is empty:
//	map           map_len bytes, the       } the keys' common prefix, then
//	              rangefilter.KeyMap       } per position of the window a
//	              (KeyMap.MarshalBinary)   } flags byte and a 32-byte set
//	filter        the rest (Filter.MarshalBinary): version byte 1, then
//	              uint64 n (distinct codes), r (code space), a and b
//	              (hash), then the codes' low and high words, Elias-Fano;
//	              or, for a filter of no keys, version byte 2 alone
//
// A reader whose user map has another name (or that has none) reads the
// table without its range filter, never with a wrong map. The filter does
// not guard the table's tombstones: an iterator applies a table's range
// tombstones whether or not its range filter ruled the table out, and a
// tombstone that starts before a scan's lower bound covers the scan all
// the same. The fragments' start keys are in the filter only to keep it
// conservative (a table is read when a scan meets a tombstone's start),
// at the price of a few false positives.
//
// The range-filter block needs no new format version: binaries from
// before it skip metaindex names they do not know, so they read such a
// table correctly, without its range filter (they never ask for one).
//
// The properties block maps names to values, sorted by name, restart
// interval 16 (readers scan it whole): numbers are uvarints, keys are encoded internal keys, strings are
// their bytes. The names and meanings are those of the Properties fields:
//
//	data-size         uvarint  Properties.DataSize
//	filter-error      bytes    Properties.FilterError (absent: none)
//	filter-policy     bytes    Properties.FilterPolicy (absent: no filter)
//	compression       bytes    Properties.Compression: "none" or "zstd"
//	                           (absent: "snappy")
//	filter-size       uvarint  Properties.FilterSize
//	format-version    uvarint  Properties.FormatVersion, = the footer's
//	index-size        uvarint  Properties.IndexSize
//	largest           ikey     Properties.Largest (absent when empty, with
//	                           neither entries nor tombstones; so smallest)
//	largest-seq       uvarint  Properties.LargestSeq
//	num-data-blocks   uvarint  Properties.NumDataBlocks
//	num-deletions     uvarint  Properties.NumDeletions
//	num-entries       uvarint  Properties.NumEntries
//	num-range-dels    uvarint  Properties.NumRangeDels (absent: 0)
//	num-prefixes      uvarint  Properties.NumPrefixes (absent: 0)
//	num-user-keys     uvarint  Properties.NumUserKeys
//	prefix-extractor  bytes    Properties.PrefixExtractor (absent: none)
//	raw-key-size      uvarint  Properties.RawKeySize
//	raw-value-size    uvarint  Properties.RawValueSize
//	smallest          ikey     Properties.Smallest (absent when empty)
//	smallest-seq      uvarint  Properties.SmallestSeq
//
// Readers ignore names they do not know, so properties can be added without
// a new format version.
//
// The metaindex block maps names to block handles, restart interval 16:
// "filter.<policy name>" (e.g. "filter.shale.bloom.v1") for the filter
// block when there is one, "properties", "rangedel" for the
// range-deletion block in version 2, and in version 3 when the table holds
// range tombstones (and only there), and
// "rangefilter.grafite.v1" for the range-filter block when there is one,
// in that order, which is the names' sorted order.
//
// The footer, the last 56 bytes of the file:
//
//	bytes  0-39   metaindex handle, then index handle, then zero padding
//	bytes 40-43   format version, uint32: 1, 2 or 3
//	bytes 44-47   checksum, uint32: low 32 bits of xxhash64(bytes 0-43)
//	bytes 48-55   magic, uint64 0x747373656c616873 (the bytes "shalesst")
//
// The footer's checksum (which LevelDB's footer lacks) makes a flipped bit in
// a handle an error at open rather than a read of some other bytes.
package sstable

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/golang/snappy"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/rangefilter"
	"github.com/shale-db/shale/vfs"
)

// Compression says how a Writer stores data, index and properties blocks.
// A compressed block is kept only when it saves at least 12.5%; otherwise
// the block is stored raw.
type Compression int

const (
	// SnappyCompression, the default, compresses each block with snappy.
	SnappyCompression Compression = iota
	// NoCompression stores every block raw.
	NoCompression
	// ZstdCompression compresses each block with zstd at its default
	// level (SpeedDefault, about zstd's level 3). The table is written in
	// format version 3.
	ZstdCompression
)

// String is the name tables record in their compression property:
// "snappy", "none" or "zstd".
func (c Compression) String() string {
	switch c {
	case SnappyCompression:
		return "snappy"
	case NoCompression:
		return "none"
	case ZstdCompression:
		return "zstd"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// WriterOptions configure a Writer. The zero value gives the defaults.
type WriterOptions struct {
	// BlockSize is the uncompressed size at which a data block is cut.
	// 0: 4096.
	BlockSize int
	// RestartInterval is the number of entries between full keys in a data
	// block. 0: 16.
	RestartInterval int
	// FilterPolicy builds the table's filter. nil: no filter.
	FilterPolicy filter.Policy
	// RangeFilter, when set, makes the table carry a range filter of its
	// keys built with these options (see the format). nil: none.
	RangeFilter *rangefilter.Options
	// Compression of blocks. The zero value is SnappyCompression. NewWriter
	// panics on a value that is not one of the constants.
	Compression Compression
	// PrefixLength, with FilterPolicy, also puts each key's prefix, its
	// first PrefixLength(key) bytes, in the filter (see the format); a
	// result outside 1..len(key) means the key has no prefix. PrefixName
	// names the function, and the table records it. nil: keys only.
	PrefixLength func(key []byte) int
	PrefixName   string
	// BytesPerSync, when > 0, makes the writer push the file's data towards
	// the device each time that many more bytes have been written, so that
	// the table's writeback is spread over its writing instead of all left
	// to Close's sync: it starts the writeback of the new bytes without
	// waiting for it when the file can (vfs.WritebackStarter), and syncs
	// the file otherwise. 0: only Close syncs. Close syncs in every case.
	BytesPerSync int
}

// Writer writes one table. Add entries in strictly increasing order, then
// Close; or Abort to give up. A Writer is for one goroutine.
type Writer struct {
	f    vfs.File
	w    *bufio.Writer
	opts WriterOptions

	offset uint64 // bytes written so far
	synced uint64 // bytes pushed to the file system as of the last BytesPerSync
	data   blockWriter
	index  blockWriter
	filter filter.Writer
	// rangeFilter builds the range filter; nil: the table has none.
	rangeFilter *rangefilter.Builder
	props       Properties
	lastKey     base.InternalKey // owned copy of the last key added
	// lastPrefix is the prefix last added to the filter, and hasPrefix
	// whether there is one.
	lastPrefix []byte
	hasPrefix  bool
	// rangeDels are the table's range tombstones (SetRangeDels).
	rangeDels rangedel.Spans
	// pending is the handle of a flushed data block whose index entry waits
	// for the next key, from which its separator is made.
	pending    *blockHandle
	keyBuf     []byte
	sepBuf     []byte
	compressed []byte
	digest     *xxhash.Digest
	// rawRun counts the data blocks stored raw since the last one stored
	// compressed; it decides which ones the writer tries to compress
	// (incompressibleRun).
	rawRun int

	err  error // the first write error; the table is lost
	done bool  // Close or Abort was called
}

// indexRestartInterval is the restart interval of index blocks, chosen by
// measurement. On kvbench's 2 MiB tables (16-byte decimal keys, 100-byte
// values, 4 KiB blocks) an index entry costs, per data block, 36.0 bytes at
// interval 1 (key 16, trailer 8, handle 5, entry header 3, restart offset
// 4), 22.8 at 4, 20.6 at 8, 19.5 at 16 and 18.9 at 32; a 1M-key kvbench
// fill pins 986, 635, 576, 546 and 532 KB of index. A present-key Get and
// a SeekGE in one table held in cache (BenchmarkGet, BenchmarkSeekGE) cost
// 2-4% more at 16 than at 1, about 20% more at 32; kvbench's readrandom and
// seekrandom show no difference above the noise. So 16, the data blocks'
// default too: 45% less index than 1, for about 30 ns per cached lookup.
const indexRestartInterval = 16

// Random, encrypted or already compressed values make snappy fail on every
// data block: 1M-key fills of random 100-byte values spent 5-9% of their
// CPU in snappy for nothing (issue 10), and zstd fails at a higher price.
// So once incompressibleRun data blocks in a row have been stored raw, the
// writer tries to compress one data block in incompressibleProbe only (the
// others are stored raw untried), and
// tries every block again from the first that compresses, as file systems
// do (btrfs's compression heuristic, ZFS's early abort). Data that
// compresses never trips it, so it costs nothing there; data that turns
// compressible within a table loses the compression of at most
// incompressibleProbe-1 blocks. Each table starts by trying every block.
// Index and meta blocks are always tried.
const (
	incompressibleRun   = 4
	incompressibleProbe = 16
)

// errWriterDone is returned by calls after Close or Abort.
var errWriterDone = errors.New("sstable: writer already closed")

// NewWriter returns a Writer that writes a table to f, which it owns: Close
// and Abort close it. Range-filter options that rangefilter.NewBuilder
// refuses make every Add and Close fail.
func NewWriter(f vfs.File, opts WriterOptions) *Writer {
	if opts.BlockSize <= 0 {
		opts.BlockSize = 4096
	}
	opts.BlockSize = min(opts.BlockSize, maxBlockSize)
	if opts.RestartInterval <= 0 {
		opts.RestartInterval = 16
	}
	w := &Writer{
		f:      f,
		w:      bufio.NewWriterSize(f, 64<<10),
		opts:   opts,
		data:   blockWriter{restartInterval: opts.RestartInterval},
		index:  blockWriter{restartInterval: indexRestartInterval},
		digest: xxhash.New(),
	}
	switch opts.Compression {
	case SnappyCompression, NoCompression:
		w.props.FormatVersion = formatVersionNoRangeDels
	case ZstdCompression:
		w.props.FormatVersion = FormatVersion
	default:
		panic(fmt.Sprintf("sstable: unknown %v", opts.Compression))
	}
	w.props.Compression = opts.Compression.String()
	if opts.FilterPolicy != nil {
		w.filter = opts.FilterPolicy.NewWriter()
		w.props.FilterPolicy = opts.FilterPolicy.Name()
		if opts.PrefixLength != nil {
			w.props.PrefixExtractor = opts.PrefixName
		}
	}
	if opts.RangeFilter != nil {
		w.rangeFilter, w.err = rangefilter.NewBuilder(opts.RangeFilter)
	}
	return w
}

// Add appends an entry. key must sort after every key added before it (by
// base.Compare) and have a valid kind; value is copied. An out-of-order key
// is refused with an error and leaves the table as it was.
func (w *Writer) Add(key base.InternalKey, value []byte) error {
	switch {
	case w.done:
		return errWriterDone
	case w.err != nil:
		return w.err
	case key.Kind() > base.KindMax:
		return fmt.Errorf("sstable: key %s has an invalid kind", key)
	case w.props.NumEntries > 0 && base.Compare(key, w.lastKey) <= 0:
		return fmt.Errorf("sstable: key %s added after %s: keys must strictly increase", key, w.lastKey)
	case key.EncodedLen()+len(value) > MaxEntryLen:
		return fmt.Errorf("sstable: entry of %d bytes is too large", key.EncodedLen()+len(value))
	}
	// Cut the block before an entry that would take it past maxBlockLen,
	// which readers refuse to decompress beyond.
	if w.data.entries > 0 && w.data.estimatedSize()+key.EncodedLen()+len(value)+3*binary.MaxVarintLen32 > maxBlockLen {
		if err := w.flushData(); err != nil {
			return err
		}
	}
	if w.pending != nil {
		w.addIndexEntry(separator(w.sepBuf[:0], w.lastKey, key))
	}
	if w.props.NumEntries == 0 || !bytes.Equal(key.UserKey, w.lastKey.UserKey) {
		w.props.NumUserKeys++
		if w.filter != nil {
			w.filter.AddHash(filter.Hash(key.UserKey))
			w.addPrefix(key.UserKey)
		}
		if w.rangeFilter != nil {
			w.rangeFilter.Add(key.UserKey)
		}
	}
	w.keyBuf = key.Append(w.keyBuf[:0])
	w.data.add(w.keyBuf, value)

	p := &w.props
	if p.NumEntries == 0 {
		p.Smallest = key.Clone()
		p.SmallestSeq, p.LargestSeq = key.SeqNum(), key.SeqNum()
	}
	p.NumEntries++
	if key.Kind() == base.KindDelete {
		p.NumDeletions++
	}
	p.SmallestSeq = min(p.SmallestSeq, key.SeqNum())
	p.LargestSeq = max(p.LargestSeq, key.SeqNum())
	p.RawKeySize += uint64(key.EncodedLen())
	p.RawValueSize += uint64(len(value))
	w.lastKey.UserKey = append(w.lastKey.UserKey[:0], key.UserKey...)
	w.lastKey.Trailer = key.Trailer

	if w.data.estimatedSize() >= w.opts.BlockSize {
		return w.flushData()
	}
	return nil
}

// addPrefix adds ukey's prefix to the filter unless ukey has none or it
// is the prefix added last.
func (w *Writer) addPrefix(ukey []byte) {
	if w.props.PrefixExtractor == "" {
		return
	}
	n := w.opts.PrefixLength(ukey)
	if n <= 0 || n > len(ukey) || (w.hasPrefix && bytes.Equal(w.lastPrefix, ukey[:n])) {
		return
	}
	w.lastPrefix, w.hasPrefix = append(w.lastPrefix[:0], ukey[:n]...), true
	w.props.NumPrefixes++
	w.filter.AddHash(PrefixHash(w.lastPrefix))
}

// SetRangeDels gives the table its range tombstones, fragmented; they
// replace any set before. The writer keeps s (not a copy) until Close.
// Tombstones make the table version 2 and extend its bounds (see the
// format).
func (w *Writer) SetRangeDels(s rangedel.Spans) {
	w.rangeDels = s
}

// EstimatedSize is roughly the size the file would have if closed now: the
// bytes written plus the unwritten data block (uncompressed) and index.
func (w *Writer) EstimatedSize() uint64 {
	n := w.offset + uint64(w.index.estimatedSize())
	if w.data.entries > 0 {
		n += uint64(w.data.estimatedSize())
	}
	return n
}

// flushData writes the current data block; its index entry waits for the
// next key.
func (w *Writer) flushData() error {
	c := w.opts.Compression
	if w.rawRun >= incompressibleRun && w.rawRun%incompressibleProbe != 0 {
		c = NoCompression
	}
	contents := w.data.finish()
	h, err := w.writeBlock(contents, c)
	w.data.reset()
	if err != nil {
		return err
	}
	// A block is stored compressed exactly when that made it shorter.
	if h.length < uint64(len(contents)) {
		w.rawRun = 0
	} else {
		w.rawRun++
	}
	w.pending = &h
	w.props.NumDataBlocks++
	return nil
}

func (w *Writer) addIndexEntry(sep []byte) {
	w.sepBuf = sep
	w.index.add(sep, w.pending.append(nil))
	w.pending = nil
}

// writeBlock writes contents and its trailer, compressing as c says, and
// returns the block's handle. A write error is kept in w.err.
func (w *Writer) writeBlock(contents []byte, c Compression) (blockHandle, error) {
	stored, typ := contents, byte(blockTypeRaw)
	// A block larger than maxBlockLen (only an index of huge keys can be)
	// is stored raw: readers bound a raw block by the file's size, and
	// refuse to decompress one that large.
	if c != NoCompression && len(contents) <= maxBlockLen {
		ctyp := byte(blockTypeSnappy)
		if c == ZstdCompression {
			w.compressed, ctyp = zstdEncoder().EncodeAll(contents, w.compressed[:0]), blockTypeZstd
		} else {
			w.compressed = snappy.Encode(w.compressed[:cap(w.compressed)], contents)
		}
		if len(w.compressed) <= len(contents)-len(contents)/8 {
			stored, typ = w.compressed, ctyp
		}
	}
	var trailer [blockTrailerLen]byte
	trailer[0] = typ
	w.digest.Reset()
	w.digest.Write(stored)
	w.digest.Write(trailer[:1])
	sum := uint32(w.digest.Sum64())
	trailer[1], trailer[2], trailer[3], trailer[4] = byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24)

	h := blockHandle{offset: w.offset, length: uint64(len(stored))}
	if _, err := w.w.Write(stored); err != nil {
		w.err = err
		return h, err
	}
	if _, err := w.w.Write(trailer[:]); err != nil {
		w.err = err
		return h, err
	}
	w.offset += uint64(len(stored)) + blockTrailerLen
	if w.opts.BytesPerSync > 0 && w.offset-w.synced >= uint64(w.opts.BytesPerSync) {
		if err := w.writeback(); err != nil {
			w.err = err
			return h, err
		}
	}
	return h, nil
}

// writeback writes out the buffer and starts the writeback of the bytes
// written since the last call, or syncs the file when it cannot. A failure
// to start the writeback is not an error (it is a hint): Close's sync
// reports whatever went wrong.
func (w *Writer) writeback() error {
	if err := w.w.Flush(); err != nil {
		return err
	}
	from := w.synced
	w.synced = w.offset
	if ws, ok := w.f.(vfs.WritebackStarter); ok {
		ws.StartWriteback(int64(from), int64(w.offset-from))
		return nil
	}
	return w.f.Sync()
}

// Close writes the rest of the table (the last data block, filter, index,
// properties, metaindex and footer), syncs and closes the file, and returns
// the table's properties. The file is closed even when Close fails.
func (w *Writer) Close() (*Properties, error) {
	if w.done {
		return nil, errWriterDone
	}
	w.done = true
	err := w.err
	if err == nil {
		err = w.finish()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	props := w.props
	return &props, nil
}

func (w *Writer) finish() error {
	if w.data.entries > 0 {
		if err := w.flushData(); err != nil {
			return err
		}
	}
	if w.pending != nil {
		w.addIndexEntry(successor(w.sepBuf[:0], w.lastKey))
	}
	if w.props.NumEntries > 0 {
		w.props.Largest = w.lastKey.Clone()
	}
	w.props.addRangeDelBounds(w.rangeDels)
	w.props.DataSize = w.offset

	meta := blockWriter{restartInterval: 16}
	if w.filter != nil {
		if err := w.writeFilter(&meta); err != nil {
			return err
		}
	}

	var rangeFilterHandle blockHandle
	if w.rangeFilter != nil {
		var err error
		if rangeFilterHandle, err = w.writeRangeFilter(); err != nil {
			return err
		}
	}

	index := w.index.finish()
	w.props.IndexSize = uint64(len(index))
	indexHandle, err := w.writeBlock(index, w.opts.Compression)
	if err != nil {
		return err
	}
	h, err := w.writeBlock(w.props.encode(), w.opts.Compression)
	if err != nil {
		return err
	}
	meta.add([]byte(propertiesName), h.append(nil))
	if len(w.rangeDels) > 0 {
		h, err := w.writeBlock(w.rangeDels.Encode(nil), w.opts.Compression)
		if err != nil {
			return err
		}
		meta.add([]byte(rangeDelName), h.append(nil))
	}
	// The metaindex's names are added in order: filter.*, properties,
	// rangedel, rangefilter.*.
	if w.rangeFilter != nil {
		meta.add([]byte(rangeFilterName), rangeFilterHandle.append(nil))
	}
	metaHandle, err := w.writeBlock(meta.finish(), w.opts.Compression)
	if err != nil {
		return err
	}
	if _, err := w.w.Write(footer{metaindex: metaHandle, index: indexHandle, version: w.props.FormatVersion}.encode()); err != nil {
		return err
	}
	if err := w.w.Flush(); err != nil {
		return err
	}
	return w.f.Sync()
}

// writeFilter writes the filter block and adds it to meta. A filter that
// cannot be built for these keys is not an error: the table goes without
// one, and its properties say so and why.
func (w *Writer) writeFilter(meta *blockWriter) error {
	f, err := w.filter.Finish()
	if err != nil {
		w.props.FilterError = fmt.Sprintf("%s: %v", w.props.FilterPolicy, err)
		w.props.FilterPolicy, w.props.PrefixExtractor, w.props.NumPrefixes = "", "", 0
		return nil
	}
	w.props.FilterSize = uint64(len(f))
	h, err := w.writeBlock(f, NoCompression)
	if err != nil {
		return err
	}
	meta.add([]byte("filter."+w.props.FilterPolicy), h.append(nil))
	return nil
}

// writeRangeFilter writes the range-filter block, of the table's user keys
// and its tombstones' start keys, and returns its handle.
func (w *Writer) writeRangeFilter() (blockHandle, error) {
	for _, s := range w.rangeDels {
		w.rangeFilter.Add(s.Start)
	}
	f, err := w.rangeFilter.Finish()
	if err != nil {
		return blockHandle{}, err
	}
	return w.writeBlock(f, NoCompression)
}

// Abort gives up on the table: it closes the file without finishing it. The
// caller removes the file. Abort after Close does nothing.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
}

// Names in the metaindex.
const (
	propertiesName  = "properties"
	rangeDelName    = "rangedel"
	rangeFilterName = "rangefilter.grafite.v1"
)

// separator appends to dst an encoded internal key k with a <= k < b, short
// when the user keys allow it (see the format description).
func separator(dst []byte, a, b base.InternalKey) []byte {
	au, bu := a.UserKey, b.UserKey
	n := 0
	for n < len(au) && n < len(bu) && au[n] == bu[n] {
		n++
	}
	if n < len(au) && n < len(bu) && au[n] < 0xff && au[n]+1 < bu[n] {
		dst = append(dst, au[:n+1]...)
		dst[len(dst)-1]++
		return base.MakeSearchKey(nil, base.MaxSeqNum).Append(dst)
	}
	return a.Append(dst)
}

// successor appends to dst an encoded internal key k >= a with a short user
// key, for the index entry of the last block.
func successor(dst []byte, a base.InternalKey) []byte {
	for i, c := range a.UserKey {
		if c != 0xff {
			dst = append(dst, a.UserKey[:i+1]...)
			dst[len(dst)-1]++
			return base.MakeSearchKey(nil, base.MaxSeqNum).Append(dst)
		}
	}
	return a.Append(dst)
}
