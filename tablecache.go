package shale

// The table cache: a bound on the table files the DB holds open.
//
// A live table keeps its reader, with its filter and index, in memory for
// as long as some version includes it (see table); only its file
// descriptor comes and goes. The cache keeps at most Options.MaxOpenFiles
// descriptors open, the least recently used closed first, and a read of a
// table whose descriptor was closed opens the file again (a reopen: one
// open(2) before the read, and a close(2) for the one it displaces).
//
// Every read of a table goes through the cache, compactions' sequential
// scans (sstable.Reader.NewScanIter) included: their reads are of 32 to
// 256 KiB, so a reopen costs them little, while descriptors of their own
// would break the bound by the number of inputs a compaction merges. But
// only the reads of Gets and iterators are uses, which make a file the
// most recently used: a scan's read (ScanReadAt), and the reads that open
// a table (sstable.Open's, before tableOpened), leave an open descriptor
// where it is in the recency order, and one they open goes last, first to
// be closed. So a compaction that merges many inputs, or writes many
// outputs, does not push out the files that reads keep coming back to;
// its own files rather displace each other, once colder ones are closed.
//
// A descriptor is borrowed for one ReadAt and returned after it, never
// held across calls, so an iterator left open pins no descriptor; a
// descriptor in use is never closed, and a reader that finds every
// descriptor in use waits for one to be returned (reads never wait on
// anything else while they hold one, so this cannot deadlock).
//
// Unless Options.DisableMmapReads, each descriptor the cache opens is
// also mapped, read-only, whole (vfs.ReadMapper), and the data blocks of
// Gets and iterators are read through the mapping (sstable.ViewFile)
// rather than with pread(2). The mapping lives exactly as long as its
// descriptor, so the cache's bound on open files bounds the mappings too,
// and closing a descriptor unmaps its file. A view borrows the descriptor
// as a read does, so no mapping is unmapped while a read is in it, and
// nothing a read returns aliases a mapping (sstable.Reader.viewBlock). A
// file the kernel will not map (another file system, the process at its
// limit of mappings) is read with pread(2) until the cache next opens it.
// Scans and the reads that open a table use pread(2) whatever the option:
// they read each block once, in large reads.

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/sstable"
	"github.com/shale-db/shale/vfs"
)

// tableCache bounds the table files open at once. It is safe for
// concurrent use.
type tableCache struct {
	fs  vfs.FS
	max int
	// mapReads maps each descriptor opened, for data block reads through
	// ViewAt (not Options.DisableMmapReads).
	mapReads bool

	mu sync.Mutex
	// cond is broadcast when a descriptor is returned or closed, or an
	// open finishes: what a reader waiting for a slot or for another
	// reader's open waits on.
	cond sync.Cond
	// open counts the descriptors open and being opened; never above max.
	open int
	// lru is the sentinel of the ring of files with an open descriptor,
	// most recently used first.
	lru tableFile

	hits    atomic.Int64 // reads that found their file's descriptor open
	reopens atomic.Int64 // reads that had to open the file again
}

func newTableCache(fsys vfs.FS, maxOpen int, mapReads bool) *tableCache {
	c := &tableCache{fs: fsys, max: maxOpen, mapReads: mapReads}
	c.cond.L = &c.mu
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	return c
}

// tableFile is a table's file as its sstable.Reader sees it: each ReadAt
// borrows the descriptor from the cache, opening the file again if the
// cache closed it. Close closes the descriptor for good.
type tableFile struct {
	c    *tableCache
	name string
	size int64

	// Guarded by c.mu.
	fd vfs.File // nil while closed
	// view is fd's mapping, nil if fd is not mapped. Set with fd; read
	// without c.mu by a reader that borrowed fd, during which it cannot
	// change.
	view       vfs.ReadMapper
	busy       int  // reads (ReadAt, ViewAt) using fd
	opening    bool // a reader is opening the file
	wasOpen    bool // fd was set once, so a new open is a reopen
	closed     bool // Close was called
	ready      bool // the table is open: ReadAt is a use (see tableOpened)
	prev, next *tableFile
}

// A scan of a table reads it through ScanReadAt; Gets and iterators read
// data blocks through ViewAt.
var (
	_ sstable.ScanFile = (*tableFile)(nil)
	_ sstable.ViewFile = (*tableFile)(nil)
)

// openFile opens the table file name, taking a slot of the cache, the
// least recently used until the table is open (tableOpened) and read.
func (c *tableCache) openFile(name string) (*tableFile, error) {
	f := &tableFile{c: c, name: name}
	fd, err := f.acquire(false)
	if err != nil {
		return nil, err
	}
	f.size, err = fd.Size()
	f.release()
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// tableOpened marks the end of the table's opening: from now on ReadAt
// is a use.
func (f *tableFile) tableOpened() {
	f.c.mu.Lock()
	f.ready = true
	f.c.mu.Unlock()
}

// acquire returns f's descriptor, open, for one read; release returns it.
// A use makes f the most recently used file; otherwise (a scan's read, or
// one before tableOpened) f keeps its place, or goes last if the read
// opens it.
func (f *tableFile) acquire(use bool) (vfs.File, error) {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	use = use && f.ready
	for {
		switch {
		case f.closed:
			return nil, fmt.Errorf("shale: reading %s: %w", f.name, fs.ErrClosed)
		case f.fd != nil:
			f.busy++
			if use {
				f.unlink()
				c.pushFront(f)
			}
			c.hits.Add(1)
			return f.fd, nil
		case !f.opening && (c.open < c.max || c.evictIdle()):
			return f.openLocked(use)
		default:
			// Another reader is opening f, or every slot is in a read.
			c.cond.Wait()
		}
	}
}

// openLocked opens f's file in a slot it takes, with c.mu held except
// during the open itself, and returns the descriptor borrowed. f goes
// first in the recency order for a use, last otherwise.
func (f *tableFile) openLocked(use bool) (vfs.File, error) {
	c := f.c
	c.open++
	f.opening = true
	c.mu.Unlock()
	fd, err := c.fs.Open(f.name)
	var view vfs.ReadMapper
	if m, ok := fd.(vfs.ReadMapper); ok && c.mapReads && err == nil {
		// A file that cannot be mapped is read with pread(2) (see
		// above): an error here is no read's.
		if m.MapForReads() == nil {
			view = m
		}
	}
	c.mu.Lock()
	f.opening = false
	c.cond.Broadcast()
	if err != nil {
		c.open--
		if f.wasOpen && errors.Is(err, fs.ErrNotExist) {
			return nil, base.CorruptionErrorf(f.name, -1, "live table's file is missing: %v", err)
		}
		return nil, err
	}
	if f.wasOpen {
		c.reopens.Add(1)
	}
	f.fd, f.wasOpen, f.busy = fd, true, 1
	f.view = view
	if use {
		c.pushFront(f)
	} else {
		c.pushBack(f)
	}
	return fd, nil
}

func (f *tableFile) release() {
	c := f.c
	c.mu.Lock()
	f.busy--
	if f.busy == 0 {
		c.cond.Broadcast()
	}
	c.mu.Unlock()
}

// evictIdle closes the least recently used descriptor that no read is
// using, if there is one, freeing its slot.
func (c *tableCache) evictIdle() bool {
	for f := c.lru.prev; f != &c.lru; f = f.prev {
		if f.busy == 0 {
			// A read-only descriptor has nothing left to write: an error
			// closing it loses nothing, and no caller waits for it.
			_ = f.closeFD()
			return true
		}
	}
	return false
}

// closeFD closes f's open descriptor (c.mu held, f not busy).
func (f *tableFile) closeFD() error {
	f.unlink()
	f.c.open--
	f.c.cond.Broadcast()
	err := f.fd.Close()
	f.fd, f.view = nil, nil
	return err
}

func (c *tableCache) pushFront(f *tableFile) {
	f.prev, f.next = &c.lru, c.lru.next
	f.prev.next, f.next.prev = f, f
}

func (c *tableCache) pushBack(f *tableFile) {
	f.prev, f.next = c.lru.prev, &c.lru
	f.prev.next, f.next.prev = f, f
}

func (f *tableFile) unlink() {
	if f.prev != nil {
		f.prev.next, f.next.prev = f.next, f.prev
		f.prev, f.next = nil, nil
	}
}

// ReadAt reads from the table's file, opening it again if the cache
// closed it, and, once the table is open, makes it the most recently used.
func (f *tableFile) ReadAt(p []byte, off int64) (int, error) { return f.readAt(p, off, true) }

// ScanReadAt is ReadAt for a scan (sstable.ScanFile): it leaves the file
// where it is in the recency order, or last if it opens it.
func (f *tableFile) ScanReadAt(p []byte, off int64) (int, error) { return f.readAt(p, off, false) }

func (f *tableFile) readAt(p []byte, off int64, use bool) (int, error) {
	fd, err := f.acquire(use)
	if err != nil {
		return 0, err
	}
	defer f.release()
	return fd.ReadAt(p, off)
}

// ViewAt implements sstable.ViewFile, as a use: with mapped reads on, it
// calls fn with the bytes in the file's mapping, opening the file again if
// the cache closed it. ok is false when mapped reads are off, or the file
// could not be mapped: the caller reads with ReadAt.
func (f *tableFile) ViewAt(off int64, n int, fn func(b []byte) error) (ok bool, err error) {
	if !f.c.mapReads {
		return false, nil
	}
	if _, err := f.acquire(true); err != nil {
		return true, err
	}
	defer f.release()
	if f.view == nil {
		return false, nil
	}
	return true, f.view.ViewAt(off, n, fn)
}

// Size is the file's size when it was opened: tables are immutable.
func (f *tableFile) Size() (int64, error) { return f.size, nil }

// Close closes the descriptor, if open, once no read uses it; later reads
// fail.
func (f *tableFile) Close() error {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for f.busy > 0 || f.opening {
		c.cond.Wait()
	}
	f.closed = true
	if f.fd != nil {
		return f.closeFD()
	}
	return nil
}

// openFiles is the number of table descriptors open now.
func (c *tableCache) openFiles() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}
