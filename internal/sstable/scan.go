package sstable

import "github.com/shale-db/shale/internal/base"

// Readahead sizes of a scan (Reader.NewScanIter): the first read past a
// block is scanReadaheadMin bytes, and each further one doubles, up to
// scanReadaheadMax. Starting small bounds the memory of a compaction that
// opens many inputs at once and reads few of them far.
const (
	scanReadaheadMin = 32 << 10
	scanReadaheadMax = 256 << 10
)

// scanReader serves a table's data blocks, read front to back, from large
// sequential reads instead of one read per block, and without the block
// cache, so that a compaction neither pays a read per block nor evicts the
// blocks readers need. Each block's checksum is verified as it is served.
type scanReader struct {
	r *Reader
	// buf holds the file's bytes from off. Every read allocates a new buf,
	// so blocks served from an older one stay valid (tableIter's Value
	// outlives its moves).
	buf       []byte
	off       uint64
	readahead uint64 // the size of the next read
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
		buf := make([]byte, end-h.offset)
		if err := r.readAt(buf, int64(h.offset)); err != nil {
			return nil, err
		}
		s.buf, s.off = buf, h.offset
		s.readahead = min(2*s.readahead, scanReadaheadMax)
	}
	r.stats.BlockReads.Add(1)
	start := h.offset - s.off
	return decodeBlock(r.name, int64(h.offset), s.buf[start:start+n])
}

// NewScanIter returns an iterator over the whole table for reading it once,
// front to back, as a compaction does: data blocks come from sequential
// reads of up to 256 KiB, bypassing the block cache (neither looking blocks
// up nor inserting them), each block's checksum verified. It supports every
// move, but seeks and backward moves re-read the file where they land.
func (r *Reader) NewScanIter() base.InternalIterator {
	return &tableIter{r: r, scan: &scanReader{r: r, readahead: scanReadaheadMin}}
}
