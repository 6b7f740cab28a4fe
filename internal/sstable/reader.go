package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/manual"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/rangefilter"
)

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// FileNum is the table's file number, its key in Cache. Tables sharing a
	// cache must have distinct file numbers.
	FileNum uint64
	// Cache holds data blocks across reads. nil: every data block is read
	// from the file.
	Cache *cache.Cache
	// RowCache holds Get's answers across reads, keyed by FileNum and user
	// key. nil: no row cache.
	RowCache *RowCache
	// Filters are the filter policies the reader knows, matched by name. A
	// table whose filter is of none of them is read without its filter.
	Filters []filter.Policy
	// RangeFilterMap is the range filters' user map in use, if any. A table
	// whose range filter was built with another user map is read without
	// its range filter; one built with the dense map is always used.
	RangeFilterMap *rangefilter.UserMap
	// Stats, when not nil, is where the reader counts its work; several
	// readers may share one.
	Stats *Stats
	// OnWastedRead, when not nil, is called after each Get that read a data
	// block of the table (from the file or the cache) and found no entry
	// for the key: a filter's false positive, or any miss of a table
	// without a filter. It may be called from many Gets at once. The DB
	// counts these per table to pick read compactions.
	OnWastedRead func()
}

// Stats count what readers do. The fields are updated atomically. A Get's
// filter outcomes are not here: they are counted per table (see
// Reader.FilterCounts), once each, and the DB adds up its tables.
type Stats struct {
	// BlockReads counts blocks read from files, not served by the cache,
	// including the metaindex, index, properties and filter blocks that
	// Open reads.
	BlockReads atomic.Int64
	// CacheHits counts data blocks served by the cache.
	CacheHits atomic.Int64
	// PrefixChecks counts the MayContainPrefix calls that consulted a
	// table's filter, and PrefixSkips those answered "definitely not".
	PrefixChecks, PrefixSkips atomic.Int64
	// RangeFilterChecks counts the bounded reads that consulted a table's
	// range filter (RangeMayContain), and RangeFilterSkips those answered
	// "definitely not". RangeFilterFalsePositives is for the reader's
	// caller to count: the "maybe"s after which the table yielded no key
	// in the range.
	RangeFilterChecks         atomic.Int64
	RangeFilterSkips          atomic.Int64
	RangeFilterFalsePositives atomic.Int64
}

// GetTrace records what one Get did, for explaining a lookup.
type GetTrace struct {
	// FilterChecked is whether the table has a filter the reader knows, in
	// which case Get consulted it; FilterMayContain is its answer.
	FilterChecked    bool
	FilterMayContain bool
	// FalsePositive is whether the filter said "maybe" for a user key the
	// table holds no entry for.
	FalsePositive bool
	// RowCacheChecked is whether Get consulted the row cache (after the
	// filter said "maybe"); RowCacheHit is whether the row cache answered,
	// in which case no block was read.
	RowCacheChecked, RowCacheHit bool
	// BlocksFromDisk and BlocksFromCache count the data blocks Get read
	// from the file and from the cache.
	BlocksFromDisk, BlocksFromCache int
	// BlockOffsets are the offsets of those blocks, in the order visited.
	BlockOffsets []uint64
	// RangeDel is the table's range tombstone fragment that holds the key
	// and that the read sees, if any; RangeDelSeq is the newest seqnum of
	// it the read sees. A version of the key older than RangeDelSeq is
	// deleted.
	RangeDel    *rangedel.Span
	RangeDelSeq base.SeqNum
}

// String describes the trace on one line, e.g.
// "filter: maybe; blocks: 1 from disk, 0 from cache (offsets 4096)".
func (t *GetTrace) String() string {
	filter := "none"
	switch {
	case t.FalsePositive:
		filter = "maybe (false positive)"
	case t.FilterChecked && t.FilterMayContain:
		filter = "maybe"
	case t.FilterChecked:
		filter = "definitely not"
	}
	s := fmt.Sprintf("filter: %s; ", filter)
	switch {
	case t.RowCacheHit:
		s += "row cache: hit; "
	case t.RowCacheChecked:
		s += "row cache: miss; "
	}
	s += fmt.Sprintf("blocks: %d from disk, %d from cache", t.BlocksFromDisk, t.BlocksFromCache)
	if len(t.BlockOffsets) > 0 {
		s += fmt.Sprintf(" (offsets %s)", strings.Trim(fmt.Sprint(t.BlockOffsets), "[]"))
	}
	if t.RangeDel != nil {
		s += fmt.Sprintf("; range tombstone %s covers the key at seqnum %d", t.RangeDel, t.RangeDelSeq)
	}
	return s
}

// Reader reads one table. It holds the table's index and filter in memory
// and reads data blocks through the cache. A Reader is safe for concurrent
// use; its iterators are each for one goroutine.
//
// The index and filter bytes live outside the Go heap (internal/manual),
// in one buffer per table that Close frees: a byte of them costs one byte
// of process memory, not the two a heap byte costs under the collector's
// headroom. So Close is the end of every use of the Reader: no call may
// run, and no iterator of it may be used, during or after Close, or the
// process faults. Nothing the Reader hands out aliases that buffer (an
// iterator's keys are copies; values alias data blocks, which are on the
// heap; properties and range tombstones are decoded onto the heap), so
// what a caller kept from a Reader outlives it; only the Reader and its
// iterators themselves must not.
type Reader struct {
	f     File
	view  ViewFile // f, if it is a ViewFile: data blocks are read through it (viewBlock)
	name  string
	opts  ReaderOptions
	stats *Stats // never nil: opts.Stats or a private one
	// blocksEnd is where the footer starts; every block lies before it.
	blocksEnd uint64

	// pinned is the manual memory holding index and the bytes filter
	// probes, freed by Close; nil once freed.
	pinned      []byte
	index       []byte // index block contents, in pinned
	indexOffset int64
	filter      filter.Filter // nil: no filter, or one of an unknown policy; probes pinned
	filterSize  int
	rangeFilter *rangefilter.KeyFilter // nil: none, or of another user map
	props       *Properties
	rangeDels   rangedel.Spans // the range tombstones, fragmented
	// filterCounts counts this table's filter outcomes: each Get that
	// consults the filter adds 1 to skips ("definitely not") or to maybes,
	// and a "maybe" for a key the table does not hold adds 1 to
	// falsePositives too.
	filterCounts struct{ skips, maybes, falsePositives atomic.Int64 }
}

// File is what a Reader needs of its file. A vfs.File is one; so is a
// handle that opens the file only while it is read (the DB's table cache).
type File interface {
	io.ReaderAt
	io.Closer
	// Size returns the file's length in bytes.
	Size() (int64, error)
}

// ViewFile is implemented by a File that can show its bytes in place,
// without a system call or a copy into a buffer of the reader's: the DB's
// table cache when it reads through memory mappings (a vfs.ReadMapper). A
// Reader reads data blocks through ViewAt, copying each block out before
// it checks and decodes it (see Reader.viewBlock), and its other blocks,
// read once at Open, with ReadAt.
type ViewFile interface {
	File
	// ViewAt calls fn with the n bytes at off, which fn must neither
	// modify nor keep after it returns, and returns fn's error or the
	// read's (one naming the file). ok false, with fn not called, says the
	// file does not show its bytes in place: the caller reads with ReadAt.
	ViewAt(off int64, n int, fn func(b []byte) error) (ok bool, err error)
}

// Open reads a table's footer, metaindex, index, properties and filter
// (checking every checksum) and returns a Reader for it. fileName names the
// file in errors. Once Open succeeds the Reader owns f and Close closes it;
// after a failed Open, f is still the caller's to close (and the Reader
// holds no memory). Corrupt bytes give an error matching
// base.ErrCorruption.
func Open(f File, fileName string, opts ReaderOptions) (*Reader, error) {
	r := &Reader{f: f, name: fileName, opts: opts, stats: opts.Stats}
	r.view, _ = f.(ViewFile)
	if r.stats == nil {
		r.stats = &Stats{}
	}
	if err := r.open(); err != nil {
		manual.Free(r.pinned)
		return nil, err
	}
	return r, nil
}

func (r *Reader) open() error {
	size, err := r.f.Size()
	if err != nil {
		return fmt.Errorf("sstable: %s: %w", r.name, err)
	}
	if size < footerLen {
		return base.CorruptionErrorf(r.name, 0, "file of %d bytes is too short for an sstable", size)
	}
	r.blocksEnd = uint64(size - footerLen)
	buf := make([]byte, footerLen)
	if err := r.readAt(buf, int64(r.blocksEnd)); err != nil {
		return err
	}
	ft, err := decodeFooter(r.name, int64(r.blocksEnd), buf)
	if err != nil {
		return err
	}

	meta, err := r.readBlock(ft.metaindex)
	if err != nil {
		return err
	}
	var it blockIter
	if err := it.init(r.name, int64(ft.metaindex.offset), meta); err != nil {
		return err
	}
	var propsHandle, filterHandle, rangeDelHandle, rangeFilterHandle *blockHandle
	var filterPolicy filter.Policy
	for valid := it.First(); valid; valid = it.Next() {
		h, n := decodeHandle(it.val)
		if n == 0 || n != len(it.val) {
			return base.CorruptionErrorf(r.name, int64(ft.metaindex.offset), "bad handle for %q in metaindex", it.key)
		}
		name := string(it.key)
		if name == propertiesName {
			propsHandle = &h
		} else if name == rangeDelName {
			rangeDelHandle = &h
		} else if name == rangeFilterName {
			rangeFilterHandle = &h
		} else if policyName, ok := strings.CutPrefix(name, "filter."); ok {
			for _, p := range r.opts.Filters {
				if p.Name() == policyName {
					filterHandle, filterPolicy = &h, p
				}
			}
		}
	}
	if it.err != nil {
		return it.err
	}
	if propsHandle == nil {
		return base.CorruptionErrorf(r.name, int64(ft.metaindex.offset), "metaindex has no properties block")
	}

	data, err := r.readBlock(*propsHandle)
	if err != nil {
		return err
	}
	if r.props, err = decodeProperties(r.name, int64(propsHandle.offset), data); err != nil {
		return err
	}
	if r.props.FormatVersion != ft.version {
		return base.CorruptionErrorf(r.name, int64(propsHandle.offset), "properties say format version %d, footer %d", r.props.FormatVersion, ft.version)
	}
	if wantRangeDels := ft.version == formatVersionRangeDels || (ft.version == FormatVersion && r.props.NumRangeDels > 0); (rangeDelHandle != nil) != wantRangeDels {
		return base.CorruptionErrorf(r.name, int64(ft.metaindex.offset), "format version %d table with %d range tombstones: range-deletion block present %v",
			ft.version, r.props.NumRangeDels, rangeDelHandle != nil)
	}
	if rangeDelHandle != nil {
		data, err := r.readBlock(*rangeDelHandle)
		if err != nil {
			return err
		}
		if r.rangeDels, err = rangedel.Decode(data); err != nil {
			return base.CorruptionErrorf(r.name, int64(rangeDelHandle.offset), "%v", err)
		}
		if n := uint64(r.rangeDels.Count()); n != r.props.NumRangeDels {
			return base.CorruptionErrorf(r.name, int64(rangeDelHandle.offset), "%d range tombstones, the properties say %d", n, r.props.NumRangeDels)
		}
	}

	// Every filter policy's Decode probes the bytes in place (bloom, fuse,
	// ribbon), so the filter is pinned with the index, first: at the start
	// of the buffer, which is page-aligned, a blocked Bloom filter's lines
	// each lie in one cache line.
	var pin []blockHandle
	if filterHandle != nil {
		pin = append(pin, *filterHandle)
	}
	blocks, err := r.readPinned(append(pin, ft.index))
	if err != nil {
		return err
	}
	r.index, r.indexOffset = blocks[len(pin)], int64(ft.index.offset)
	if err := it.init(r.name, r.indexOffset, r.index); err != nil {
		return err
	}
	if filterHandle != nil {
		data := blocks[0]
		if r.filter, err = filterPolicy.Decode(data); err != nil {
			return base.CorruptionErrorf(r.name, int64(filterHandle.offset), "filter: %v", err)
		}
		r.filterSize = len(data)
	}
	// The range filter's Decode copies what it keeps into words and
	// digits of its own, so it is read onto the heap, and stays there.
	if rangeFilterHandle != nil {
		data, err := r.readBlock(*rangeFilterHandle)
		if err != nil {
			return err
		}
		r.rangeFilter, err = rangefilter.Decode(data, r.opts.RangeFilterMap)
		if err != nil && !errors.Is(err, rangefilter.ErrUnknownMap) {
			return base.CorruptionErrorf(r.name, int64(rangeFilterHandle.offset), "range filter: %v", err)
		}
	}
	return nil
}

// readAt reads exactly len(buf) bytes at off.
func (r *Reader) readAt(buf []byte, off int64) error {
	_, err := r.f.ReadAt(buf, off)
	return r.readError(buf, off, err)
}

// readError is the error of a read of buf at off that returned err.
func (r *Reader) readError(buf []byte, off int64, err error) error {
	if err != nil {
		return fmt.Errorf("sstable: %s: reading %d bytes at offset %d: %w", r.name, len(buf), off, err)
	}
	return nil
}

// readBlock reads the block h names from the file, checks it and returns
// its contents, decompressed. It counts one block read.
func (r *Reader) readBlock(h blockHandle) ([]byte, error) {
	if err := r.checkHandle(h); err != nil {
		return nil, err
	}
	buf := make([]byte, h.length+blockTrailerLen)
	if err := r.readAt(buf, int64(h.offset)); err != nil {
		return nil, err
	}
	r.stats.BlockReads.Add(1)
	return decodeBlock(r.name, int64(h.offset), buf)
}

// viewBlock is readBlock through r.view: the block as stored is copied
// out of the view onto the heap, then checked and decompressed as a block
// read with ReadAt is, so the bytes checked are the bytes used, and only
// a copy touches the view (an access to a mapping may fault and stop it).
// What it returns never aliases the file's mapping, which the table cache
// unmaps when it closes the file, so the block cache may hold it, and
// Get's value and an iterator's may keep it, for as long as they like. ok
// is false when the file does not show its bytes in place (see ViewFile).
func (r *Reader) viewBlock(h blockHandle) (b []byte, ok bool, err error) {
	if err := r.checkHandle(h); err != nil {
		return nil, true, err
	}
	var buf []byte
	n := int(h.length) + blockTrailerLen
	ok, err = r.view.ViewAt(int64(h.offset), n, func(stored []byte) error {
		buf = copyOf(stored)
		return nil
	})
	switch {
	case !ok:
		return nil, false, nil
	case err != nil:
		return nil, true, fmt.Errorf("sstable: %s: reading %d bytes at offset %d: %w", r.name, n, h.offset, err)
	}
	r.stats.BlockReads.Add(1)
	b, err = decodeBlock(r.name, int64(h.offset), buf)
	return b, true, err
}

// readPinned reads the blocks hs name into one buffer of manual memory,
// r.pinned, and returns their contents, decompressed, in the order of hs.
// The blocks as stored are read straight into the buffer; if one of them is
// compressed, all are then decompressed (or copied) into a second buffer of
// their decompressed size, which replaces the first. It counts one block
// read per block. On error r.pinned may hold memory, for Open to free.
func (r *Reader) readPinned(hs []blockHandle) ([][]byte, error) {
	size := 0
	for _, h := range hs {
		if err := r.checkHandle(h); err != nil {
			return nil, err
		}
		size += int(h.length) + blockTrailerLen
	}
	r.pinned = manual.New(size)
	contents := make([][]byte, len(hs))
	types := make([]byte, len(hs))
	dlens := make([]int, len(hs))
	off, decodedSize := 0, 0
	for i, h := range hs {
		buf := r.pinned[off : off+int(h.length)+blockTrailerLen]
		off += len(buf)
		if err := r.readAt(buf, int64(h.offset)); err != nil {
			return nil, err
		}
		r.stats.BlockReads.Add(1)
		var err error
		if contents[i], types[i], dlens[i], err = checkBlock(r.name, int64(h.offset), buf); err != nil {
			return nil, err
		}
		decodedSize += dlens[i]
	}
	if !slices.ContainsFunc(types, func(t byte) bool { return t != blockTypeRaw }) {
		return contents, nil
	}
	stored := r.pinned
	defer manual.Free(stored)
	r.pinned = manual.New(decodedSize)
	off = 0
	for i, h := range hs {
		dst := r.pinned[off : off+dlens[i] : off+dlens[i]]
		off += dlens[i]
		if types[i] == blockTypeRaw {
			copy(dst, contents[i])
		} else if _, err := decompress(r.name, int64(h.offset), types[i], dst, contents[i]); err != nil {
			return nil, err
		}
		contents[i] = dst
	}
	return contents, nil
}

// checkHandle returns a corruption error if the block h names, with its
// trailer, does not lie within the blocks.
func (r *Reader) checkHandle(h blockHandle) error {
	if h.offset > r.blocksEnd || h.length > r.blocksEnd-h.offset || r.blocksEnd-h.offset-h.length < blockTrailerLen {
		return base.CorruptionErrorf(r.name, int64(min(h.offset, r.blocksEnd)),
			"block handle (offset %d, length %d) runs past the blocks, which end at %d", h.offset, h.length, r.blocksEnd)
	}
	return nil
}

// dataBlock returns the contents of the data block h names, from the cache
// when it is there, else from the file: through the table's mapping when it
// has one (no system call, so no readahead either), else through ra when
// not nil, else with one read; and records the visit in trace (when not
// nil).
func (r *Reader) dataBlock(h blockHandle, trace *GetTrace, ra *readahead) ([]byte, error) {
	b, ok := r.opts.Cache.Get(r.opts.FileNum, h.offset)
	if ok {
		r.stats.CacheHits.Add(1)
	} else {
		viewed := false
		var err error
		if r.view != nil {
			b, viewed, err = r.viewBlock(h)
		}
		switch {
		case viewed || err != nil: // read through the mapping, or failed there
		case ra != nil:
			b, err = ra.block(r, h)
		default:
			b, err = r.readBlock(h)
		}
		if err != nil {
			return nil, err
		}
		r.opts.Cache.Set(r.opts.FileNum, h.offset, b)
	}
	if trace != nil {
		if ok {
			trace.BlocksFromCache++
		} else {
			trace.BlocksFromDisk++
		}
		trace.BlockOffsets = append(trace.BlockOffsets, h.offset)
	}
	return b, nil
}

// Get returns the newest entry for ukey with seqnum <= seq. found reports
// whether there is one; kind says whether it is a value or a deletion (whose
// value is empty). The filter is consulted first and a "definitely not"
// costs no I/O; then the row cache, if the reader has one and seq is at or
// above the table's largest seqnum; otherwise the in-memory index names the
// data block holding the newest version of ukey, and later blocks are read
// only when versions newer than seq fill the rest of that block.
//
// The table's range tombstones, in memory, apply whatever the filter or the
// row cache says: when one that the read sees covers ukey and is newer than
// the entry found (or there is none), Get returns found true with kind
// base.KindRangeDelete. So the answer is the table's alone, complete for
// the table; tombstones of newer tables are the caller's to apply, before
// it asks this older table.
//
// value aliases memory that nobody modifies (a cached block or row, or a
// block read for this call alone); it stays valid, and the caller must not
// modify it. trace, when not nil, records the lookup.
func (r *Reader) Get(ukey []byte, seq base.SeqNum, trace *GetTrace) (value []byte, kind base.Kind, found bool, err error) {
	var cover base.SeqNum
	if i := r.rangeDels.Find(ukey); i >= 0 {
		if cover = r.rangeDels[i].CoverSeq(seq); cover > 0 && trace != nil {
			trace.RangeDel, trace.RangeDelSeq = &r.rangeDels[i], cover
		}
	}
	if r.filter != nil {
		may := r.filter.MayContain(filter.Hash(ukey))
		if trace != nil {
			trace.FilterChecked, trace.FilterMayContain = true, may
		}
		if !may {
			r.filterCounts.skips.Add(1)
			return rangeDeleted(cover)
		}
		r.filterCounts.maybes.Add(1)
	}
	// Every entry of the table is visible at seq, so the answer is the same
	// for every such read and may be cached (see RowCache).
	rc := r.opts.RowCache
	if rc != nil && seq >= r.props.LargestSeq {
		if trace != nil {
			trace.RowCacheChecked = true
		}
		if cached, ok := rc.Get(r.opts.FileNum, string(ukey)); ok {
			if trace != nil {
				trace.RowCacheHit = true
			}
			if !cached.held {
				r.countFalsePositive(trace)
			}
			return cached.value, cached.kind, cached.found, nil
		}
	} else {
		rc = nil
	}
	value, kind, found, held, err := r.find(ukey, seq, cover, trace)
	if err != nil {
		return nil, 0, false, err
	}
	if !held {
		r.countFalsePositive(trace)
	}
	if rc != nil {
		rc.Set(r.opts.FileNum, string(ukey), row{value: append([]byte(nil), value...), kind: kind, found: found, held: held})
	}
	return value, kind, found, nil
}

// find reads the blocks that hold ukey's versions: the newest one visible
// at seq and newer than cover (the seqnum of the table's newest tombstone
// covering ukey, 0 for none), or a range deletion if cover hides them all,
// or nothing. held reports whether the table holds any version of ukey,
// which a filter's "maybe" then was not a false positive for. A search
// that read a block and found no version is reported to OnWastedRead.
func (r *Reader) find(ukey []byte, seq, cover base.SeqNum, trace *GetTrace) (value []byte, kind base.Kind, found, held bool, err error) {
	// The block the index names holds the newest version of ukey if the
	// table holds any: when that block has no entry >= the search key, its
	// separator is a shortened user key below every key of the next block
	// (see the format), so ukey is absent and the next block is not read.
	it := getIters.Get().(*tableIter)
	defer releaseGetIter(it)
	it.r, it.trace = r, trace
	it.seekBlock(base.MakeSearchKey(ukey, base.MaxSeqNum))
	for ok := it.settle(); ok; ok = it.Next() {
		if !bytes.Equal(it.key.UserKey, ukey) {
			break
		}
		held = true
		if it.key.Visible(seq) {
			if it.key.SeqNum() < cover {
				break
			}
			return it.Value(), it.key.Kind(), true, true, nil
		}
	}
	if it.err != nil {
		return nil, 0, false, held, it.err
	}
	if !held && it.dataLoaded && r.opts.OnWastedRead != nil {
		r.opts.OnWastedRead()
	}
	value, kind, found, _ = rangeDeleted(cover)
	return value, kind, found, held, nil
}

// getIters pools Get's table iterators, so that a lookup reuses the key
// buffers of an earlier one instead of allocating its own. What Get returns
// aliases a block, never an iterator's buffer.
var getIters = sync.Pool{New: func() any { return new(tableIter) }}

// releaseGetIter empties it, keeping only its key buffers (so that the pool
// pins no reader or block), and returns it to getIters.
func releaseGetIter(it *tableIter) {
	*it = tableIter{index: blockIter{key: it.index.key[:0]}, data: blockIter{key: it.data.key[:0]}}
	getIters.Put(it)
}

// rangeDeleted is Get's answer when the table holds no entry for the key
// that the read sees and that is newer than cover, the seqnum of the
// table's newest tombstone covering it (0: none).
func rangeDeleted(cover base.SeqNum) ([]byte, base.Kind, bool, error) {
	if cover > 0 {
		return nil, base.KindRangeDelete, true, nil
	}
	return nil, 0, false, nil
}

// countFalsePositive counts a filter's "maybe" for a key the table holds no
// entry for.
func (r *Reader) countFalsePositive(trace *GetTrace) {
	if r.filter == nil {
		return
	}
	r.filterCounts.falsePositives.Add(1)
	if trace != nil {
		trace.FalsePositive = true
	}
}

// NewIter returns an iterator over the whole table.
func (r *Reader) NewIter() base.InternalIterator { return r.NewIterBounds(nil, nil) }

// NewIterBounds returns an iterator over the entries whose user keys are in
// [lower, upper); a nil bound is no bound. The iterator does not read data
// blocks that lie wholly past upper.
func (r *Reader) NewIterBounds(lower, upper []byte) base.InternalIterator {
	return &tableIter{r: r, lower: lower, upper: upper}
}

// TraceIter is NewIterBounds recording the data blocks the iterator reads
// in t: their count, from the file and from the cache, and their offsets.
func (r *Reader) TraceIter(lower, upper []byte, t *GetTrace) base.InternalIterator {
	return &tableIter{r: r, lower: lower, upper: upper, trace: t}
}

// RangeDels returns the table's range tombstones, fragmented and within the
// table's bounds. The caller must not modify them.
func (r *Reader) RangeDels() rangedel.Spans { return r.rangeDels }

// Properties returns the table's properties. The caller must not modify
// them.
func (r *Reader) Properties() *Properties { return r.props }

// FilterSize is the number of bytes of filter the reader holds in memory (0
// when it uses no filter), range filter included: the filter outside the Go
// heap, the range filter on it.
func (r *Reader) FilterSize() int { return r.filterSize + r.RangeFilterSize() }

// RangeMayContain consults the table's range filter for the user keys in
// [lower, upper), counting the check (and a skip) in the Stats. checked is false when
// the reader has no range filter for the table, in which case may is true. may false is certain: the table
// holds no entry there. It says nothing of the table's range tombstones,
// which apply whatever it answers.
func (r *Reader) RangeMayContain(lower, upper []byte) (checked, may bool) {
	if r.rangeFilter == nil {
		return false, true
	}
	r.stats.RangeFilterChecks.Add(1)
	may = r.rangeFilter.MayContain(lower, upper)
	if !may {
		r.stats.RangeFilterSkips.Add(1)
	}
	return true, may
}

// FilterCounts returns this table's filter outcomes since the Reader was
// opened: the Gets that consulted its filter (checks), those it answered
// "definitely not" (skips), and those it answered "maybe" for a user key
// the table holds no entry for, at any seqnum (falsePositives). Counted
// while Gets run, they are consistent with each other all the same:
// skips+falsePositives <= checks. They stay readable after Close.
func (r *Reader) FilterCounts() (checks, skips, falsePositives int64) {
	// A false positive is counted after its "maybe": loaded first, it is
	// never ahead of the maybes loaded after it.
	falsePositives = r.filterCounts.falsePositives.Load()
	maybes := r.filterCounts.maybes.Load()
	skips = r.filterCounts.skips.Load()
	return skips + maybes, skips, falsePositives
}

// IndexSize is the number of bytes of index the reader holds in memory,
// outside the Go heap.
func (r *Reader) IndexSize() int { return len(r.index) }

// Close frees the index and filter and closes the file. Nothing may use the
// Reader or its iterators during or after Close (see Reader). Closing twice
// frees once. It does not evict the table's blocks and rows from the
// caches: the table may be opened again (EvictFile is for deleted tables).
func (r *Reader) Close() error {
	manual.Free(r.pinned)
	r.pinned = nil
	return r.f.Close()
}

// RangeFilterSize is the number of bytes of range filter (and its key map)
// the reader holds in memory, 0 when it uses none. FilterSize counts them
// too.
func (r *Reader) RangeFilterSize() int {
	if r.rangeFilter == nil {
		return 0
	}
	return r.rangeFilter.SizeBytes()
}
