package sstable

import (
	"bytes"
	"sync"
)

// Readahead sizes of an iterator walking from block to block (tableIter):
// the first read past a block the iterator stepped into is
// iterReadaheadMin bytes, and each further one doubles, up to
// iterReadaheadMax.
const (
	iterReadaheadMin = 16 << 10
	iterReadaheadMax = 128 << 10
)

// readaheadBufs holds the buffers of readaheads, iterReadaheadMax bytes
// each: a short scan opens its iterators afresh, and would otherwise make a
// buffer of garbage per table it walks.
var readaheadBufs = sync.Pool{New: func() any {
	b := make([]byte, iterReadaheadMax)
	return &b
}}

// readahead serves the data blocks that an iterator reaches by stepping
// from one block to the next (or, backward, the previous) and that the
// block cache does not hold: instead of one read per block, it reads the
// file ahead of the step, in the direction of travel, in reads of growing
// size, and serves the following steps' blocks from what it read. Each
// block is checked (checksum, then decompression) as it is served, and
// handed out in memory of its own, as a block read alone would be, for the
// block cache to keep; the buffer is the readahead's, reused.
//
// A seek does not read ahead: it lands on one block, and a short scan may
// end there. The first step to a neighbouring block does: a scan that
// leaves its first block is likely to go on. The buffer is held from that
// first read to the iterator's next seek or its Close, so an open
// iterator holds at most iterReadaheadMax bytes per table it walks.
type readahead struct {
	buf     *[]byte // from readaheadBufs; nil until the first read
	off     uint64  // the file offset of (*buf)[0]
	n       uint64  // the bytes of *buf that hold the file from off
	size    uint64  // the next read's size; 0 before the first
	forward bool    // the direction of the step being served
}

// block returns the contents of the data block h names, decompressed and
// in memory of their own, reading from the file, ahead of h in the
// direction of travel, unless the buffer holds h. It counts one block
// read.
func (ra *readahead) block(r *Reader, h blockHandle) ([]byte, error) {
	if err := r.checkHandle(h); err != nil {
		return nil, err
	}
	n := h.length + blockTrailerLen
	if n > iterReadaheadMax {
		return r.readBlock(h)
	}
	if ra.buf == nil || h.offset < ra.off || h.offset+n > ra.off+ra.n {
		if err := ra.read(r, h.offset, n); err != nil {
			return nil, err
		}
	}
	r.stats.BlockReads.Add(1)
	stored := (*ra.buf)[h.offset-ra.off : h.offset-ra.off+n]
	contents, typ, dlen, err := checkBlock(r.name, int64(h.offset), stored)
	if err != nil {
		return nil, err
	}
	if typ == blockTypeRaw {
		return bytes.Clone(contents), nil
	}
	return decompress(r.name, int64(h.offset), typ, make([]byte, dlen), contents)
}

// read fills the buffer with ra.size bytes of the data blocks from the n
// bytes at off onwards (forward) or up to them (backward), and doubles
// the size of the next read.
func (ra *readahead) read(r *Reader, off, n uint64) error {
	if ra.buf == nil {
		ra.buf = readaheadBufs.Get().(*[]byte)
	}
	ra.size = min(max(2*ra.size, iterReadaheadMin), iterReadaheadMax)
	start, end := off, off+n
	if ra.forward {
		// The data blocks end at DataSize, unless that property is
		// damaged; the read takes at least the block.
		end = max(min(off+ra.size, r.props.DataSize, r.blocksEnd), end)
	} else {
		start = end - min(max(ra.size, n), end)
	}
	buf := (*ra.buf)[:end-start]
	if err := r.readAt(buf, int64(start)); err != nil {
		ra.n = 0
		return err
	}
	ra.off, ra.n = start, end-start
	return nil
}

// release returns the buffer to the pool, and starts the next read at the
// smallest size.
func (ra *readahead) release() {
	if ra.buf != nil {
		readaheadBufs.Put(ra.buf)
	}
	*ra = readahead{}
}
