package sstable

import "github.com/shale-db/shale/internal/base"

// Readahead sizes of a scan (Reader.NewScanIter): the first read past a
// block is ScanReadaheadMin bytes, and each further one doubles, up to the
// scan's bound, at most ScanReadaheadMax. Starting small bounds the memory
// of a compaction that opens many inputs at once and reads few of them
// far; the bound lets the inputs of one compaction share a budget.
const (
	ScanReadaheadMin = 32 << 10
	ScanReadaheadMax = 256 << 10
)

// scanReader serves a table's data blocks, read front to back, from large
// sequential reads instead of one read per block, and without the block
// cache, so that a compaction neither pays a read per block nor evicts the
// blocks readers need. Each block's checksum is verified as it is served.
//
// A block it serves is valid until it serves the next: reads reuse buf and
// decompression reuses decoded, so that a compaction makes no garbage per
// block or per read (it used to allocate every read afresh, 40% of the
// bytes a fill allocated).
type scanReader struct {
	r *Reader
	// buf holds the file's bytes from off.
	buf       []byte
	off       uint64
	readahead uint64 // the size of the next read
	maxAhead  uint64 // the bound of readahead
	decoded   []byte // the last block decompressed
}

// block returns the contents of the data block h names, reading the file
// from h onwards when the buffer does not hold h.
func (s *scanReader) block(h blockHandle) ([]byte, error) {
	r := s.r
	if err := r.checkHandle(h); err != nil {
		return nil, err
	}
	n := h.length + blockTrailerLen
	if h.offset < s.off || h.offset+n > s.off+uint64(len(s.buf)) {
		// Read ahead within the data blocks (which end at DataSize, unless
		// that property is damaged), and at least the whole block.
		end := min(r.props.DataSize, r.blocksEnd)
		end = max(min(h.offset+s.readahead, end), h.offset+n)
		buf := s.buf[:0]
		if uint64(cap(buf)) < end-h.offset {
			buf = make([]byte, end-h.offset)
		}
		buf = buf[:end-h.offset]
		if err := r.scanReadAt(buf, int64(h.offset)); err != nil {
			s.buf = nil // partly overwritten
			return nil, err
		}
		s.buf, s.off = buf, h.offset
		s.readahead = min(2*s.readahead, s.maxAhead)
	}
	r.stats.BlockReads.Add(1)
	start := h.offset - s.off
	b, err := decodeBlockInto(r.name, int64(h.offset), s.buf[start:start+n], s.decoded)
	if err == nil && len(b) > 0 && &b[0] != &s.buf[start] {
		s.decoded = b
	}
	return b, err
}

// release drops the buffers, at the end of the table: a compaction keeps
// its exhausted inputs until it ends, and each would hold its last read,
// up to its readahead bound.
func (s *scanReader) release() { s.buf, s.decoded = nil, nil }

// ScanFile is a File that tells a scan's reads from other reads: a scan
// (NewScanIter) reads its table through ScanReadAt when the table's File
// has it, so that a cache of open files (the DB's table cache) does not
// count a table read once, front to back, as a table in use, and keeps
// the files that reads come back to.
type ScanFile interface {
	File
	ScanReadAt(p []byte, off int64) (int, error)
}

// scanReadAt is readAt for a scan: through ScanReadAt if the file has it.
func (r *Reader) scanReadAt(buf []byte, off int64) error {
	f, ok := r.f.(ScanFile)
	if !ok {
		return r.readAt(buf, off)
	}
	_, err := f.ScanReadAt(buf, off)
	return r.readError(buf, off, err)
}

// NewScanIter returns an iterator over the whole table for reading it once,
// front to back, as a compaction does: data blocks come from sequential
// reads of up to maxReadahead bytes (clamped to [ScanReadaheadMin,
// ScanReadaheadMax]), bypassing the block cache (neither looking blocks
// up nor inserting them), each block's checksum verified. It supports every
// move, but seeks and backward moves re-read the file where they land.
// Unlike NewIter's, its Value is valid only until the next move (the
// InternalIterator contract): the buffers it aliases are reused.
func (r *Reader) NewScanIter(maxReadahead int) base.InternalIterator {
	return &tableIter{r: r, scan: newScanReader(r, maxReadahead)}
}

// newScanReader returns a scanReader whose reads grow to maxReadahead
// bytes, clamped to [ScanReadaheadMin, ScanReadaheadMax].
func newScanReader(r *Reader, maxReadahead int) *scanReader {
	return &scanReader{r: r, readahead: ScanReadaheadMin, maxAhead: uint64(min(max(maxReadahead, ScanReadaheadMin), ScanReadaheadMax))}
}
