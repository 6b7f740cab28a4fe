package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How an operating-system file is mapped for Mapper. Stores go into a
// window of mapWindow bytes (more if one store needs it, less on a disk too
// full to allocate a step ahead: see remap) that slides along
// the file, so that the pages a process keeps mapped, and its resident set,
// stay within a window whatever the file's size. The file is allocated
// ahead with fallocate in steps that double with the file, from
// allocStepMin to allocStepMax: a few calls per file, and a full disk fails
// fallocate with an error rather than a store with SIGBUS.
//
// Once stores have filled half a window, the next window is made ready off
// the storing goroutine (see prepare): allocated, mapped from
// prepareOverlap before the current window's end, and its pages faulted
// in. The store that reaches past the window then only switches windows,
// and the old one is unmapped in the background too. A window that remap
// maps for a store is faulted in the same way (see populate). Unmapping a
// window of dirty pages and mapping the next landed on the one store that
// crossed into it, and the page faults on every fourth 1 KiB store; they
// were the costliest part of a store (see docs/performance.md, "Writes of
// 1 KB values and their tail").
const (
	mapWindow    = 1 << 20
	allocStepMin = 1 << 20
	allocStepMax = 16 << 20

	// prepareOverlap is how far before the current window's end the next
	// one starts: a store that starts before it and reaches past the
	// window (one larger than prepareOverlap) finds the prepared window
	// too late, and remaps. Started where the stores were at the half,
	// windows advanced by half a window, and there were twice as many.
	prepareOverlap = 64 << 10
)

// The system calls remap makes, as variables so that a test can make them
// fail the ways file systems do.
var (
	fallocate = unix.Fallocate
	mmap      = unix.Mmap
)

// mapping is an operating-system file's state as a Mapper.
type mapping struct {
	data      []byte // the mapped window; nil if none
	off       int64  // the file offset of data[0], a multiple of the page size
	allocated int64  // the file's length as fallocate left it

	// next is the window being made ready in the background, or nil (see
	// prepare); retiring counts the old windows being unmapped in the
	// background. Only the storing goroutine reads or changes either, and
	// it waits for both before it unmaps, cuts or closes, as it waits for
	// populating before it unmaps the current window.
	next       *nextWindow
	retiring   sync.WaitGroup
	populating sync.WaitGroup // see populate
}

// nextWindow is a window that prepare's goroutine allocates, maps and
// faults in. Its fields are the goroutine's until done is closed.
type nextWindow struct {
	off       int64  // the file offset of data[0], a page boundary
	data      []byte // nil if a step failed
	allocated int64  // the file's length once allocated for the window
	done      chan struct{}
}

// StoreAt implements Mapper. Durability needs only Sync (fsync): on Linux a
// page written through a shared mapping is marked dirty in the page cache
// when first written, so fsync writes it back as it does one written with
// write(2). (Mapper's WriteAt is the embedded *os.File's: pwrite(2).)
func (f osFile) StoreAt(p []byte, off int64) error {
	m := f.m
	if m == nil {
		return &os.PathError{Op: "store", Path: f.Name(), Err: errors.New("file opened for reading")}
	}
	end := off + int64(len(p))
	if m.data == nil || off < m.off || end > m.off+int64(len(m.data)) {
		if !m.switchWindow(off, end) {
			if err := f.remap(off, end); err != nil {
				return err
			}
			m.populate(end)
		}
	}
	if err := storeGuarded(m.data[off-m.off:end-m.off], p, f.Name()); err != nil {
		return err
	}
	if m.next == nil && 2*(end-m.off) > int64(len(m.data)) {
		f.prepare(max(end, m.off+int64(len(m.data))-prepareOverlap))
	}
	return nil
}

// prepare starts a goroutine that makes ready the window to follow the
// current one, for the stores from offset from on: it allocates the file
// as remap would, maps mapWindow bytes from the page holding from, and
// faults the window's pages in writable (MADV_POPULATE_WRITE), so that the
// stores into it take no page faults. (Faulting them in only readable made
// the stores slower than no faulting at all.) The pages are then dirty:
// zeros, which the file holds there anyway, that a Sync would write. Cut
// discards those past the last store, so a caller that cuts before it
// syncs (the WAL's MarkEnd) writes none of them. If a step fails, the
// window is not used, and remap, at the store that needs it, makes the
// calls again and meets any error itself; the failure of the fault-in
// alone (a kernel without MADV_POPULATE_WRITE) is ignored.
func (f osFile) prepare(from int64) {
	m := f.m
	page := int64(os.Getpagesize())
	n := &nextWindow{off: from / page * page, allocated: m.allocated, done: make(chan struct{})}
	m.next = n
	fd := int(f.Fd())
	go func() {
		defer close(n.done)
		if end := n.off + mapWindow; end > n.allocated {
			step := min(max(n.allocated, allocStepMin), allocStepMax)
			alloc := (end + step - 1) / step * step
			if allocate(fd, alloc) != nil {
				return
			}
			n.allocated = alloc
		}
		data, err := mmap(fd, n.off, mapWindow, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return
		}
		unix.Madvise(data, unix.MADV_POPULATE_WRITE) // see above: an error leaves the faults to the stores
		n.data = data
	}()
}

// populate faults in, in the background, the pages of the current window
// past the one holding offset from, as prepare does for a window it makes
// ready: the window remap mapped for a store (the first of a file, or one
// prepare could not make ready), whose later stores would otherwise take
// a page fault each.
func (m *mapping) populate(from int64) {
	page := int64(os.Getpagesize())
	start := (from - m.off + page - 1) / page * page
	if start >= int64(len(m.data)) {
		return
	}
	rest := m.data[start:]
	m.populating.Go(func() { unix.Madvise(rest, unix.MADV_POPULATE_WRITE) }) // an error leaves the faults to the stores
}

// switchWindow makes the prepared window, once ready, the current one if
// it holds [off, end), and unmaps the old one in the background. It
// reports whether it did; if not, it drops the prepared window, and the
// caller remaps.
func (m *mapping) switchWindow(off, end int64) bool {
	n := m.next
	if n == nil {
		return false
	}
	m.next = nil
	<-n.done
	m.allocated = max(m.allocated, n.allocated)
	if n.data == nil {
		return false
	}
	if off < n.off || end > n.off+int64(len(n.data)) {
		unix.Munmap(n.data)
		return false
	}
	if old := m.data; old != nil {
		m.populating.Wait()
		m.retiring.Go(func() { unix.Munmap(old) })
	}
	m.data, m.off = n.data, n.off
	return true
}

// remap maps the window that starts at the page holding off and reaches at
// least end, allocating the file that far first. If the file system cannot
// allocate ahead or map the file, the first store gets ErrNotMappable, with
// the file as empty as it found it, so that the caller can write it instead.
// If the kernel refuses the window for want of room among the process's
// mappings (ENOMEM), any store gets ErrMappingRefused, with the file as
// allocated, so that the caller can write the rest at its offsets.
func (f osFile) remap(off, end int64) error {
	m := f.m
	first := m.allocated == 0
	if err := m.unmap(); err != nil {
		return &os.PathError{Op: "munmap", Path: f.Name(), Err: err}
	}
	page := int64(os.Getpagesize())
	start := off / page * page
	size := max(mapWindow, (end-start+page-1)/page*page)
	if start+size > m.allocated {
		step := min(max(m.allocated, allocStepMin), allocStepMax)
		alloc := (start + size + step - 1) / step * step
		err := allocate(int(f.Fd()), alloc)
		if errors.Is(err, unix.ENOSPC) {
			// A disk too full for a step ahead: allocate and map only the
			// pages this store needs, so that the log fails where
			// write(2) would, not up to a step earlier.
			size = (end - start + page - 1) / page * page
			if alloc, err = start+size, nil; alloc > m.allocated {
				err = allocate(int(f.Fd()), alloc)
			}
		}
		if err != nil {
			if first && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS)) {
				return fmt.Errorf("%s: %w: fallocate: %v", f.Name(), ErrNotMappable, err)
			}
			return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
		}
		m.allocated = max(m.allocated, alloc)
	}
	data, err := mmap(int(f.Fd()), start, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		if first && (errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EINVAL)) {
			// A file system that takes no shared writable mappings
			// (a FUSE mount with direct I/O, for one): undo the
			// allocation, so that the file can be written from 0.
			if terr := f.File.Truncate(0); terr != nil {
				return terr
			}
			m.allocated = 0
			return fmt.Errorf("%s: %w: mmap: %v", f.Name(), ErrNotMappable, err)
		}
		if errors.Is(err, unix.ENOMEM) {
			return fmt.Errorf("%s: %w: mmap: %v", f.Name(), ErrMappingRefused, err)
		}
		return &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	m.data, m.off = data, start
	return nil
}

// allocate extends the file fd to size bytes with fallocate, allocating its
// blocks. It retries a call a signal interrupted, as the os package does
// its own calls: fallocate can fail with EINTR (tmpfs checks for signals as
// it allocates, and undoes what the call allocated), and the Go runtime
// signals its threads often (profiling, garbage collection). Allocating
// what is already allocated changes nothing, so a retry is safe.
func allocate(fd int, size int64) error {
	for {
		if err := fallocate(fd, 0, 0, size); err != unix.EINTR {
			return err
		}
	}
}

// storeGuarded copies src into dst, a mapped window of the file name, and
// returns an error instead of crashing the process if the copy faults: a
// page the file system could not back (a copy-on-write file system out of
// space despite fallocate, an I/O error, the file cut short by another
// process) raises SIGBUS, which the runtime turns into a panic on this
// goroutine only while SetPanicOnFault is set.
func storeGuarded(dst, src []byte, name string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("vfs: %s: storing through a mapping faulted at address %#x (a page the file system could not back)", name, fault.Addr())
		}
	}()
	copy(dst, src)
	return nil
}

// Cut implements Mapper.
func (f osFile) Cut(size int64) error {
	if err := f.m.unmap(); err != nil {
		return &os.PathError{Op: "munmap", Path: f.Name(), Err: err}
	}
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.m.allocated = size
	return nil
}

// unmap drops the window, if any, after waiting for the background work
// of prepare and switchWindow, and drops the prepared window too.
func (m *mapping) unmap() error {
	if m == nil {
		return nil
	}
	if n := m.next; n != nil {
		m.next = nil
		<-n.done
		m.allocated = max(m.allocated, n.allocated)
		if n.data != nil {
			unix.Munmap(n.data)
		}
	}
	m.retiring.Wait()
	m.populating.Wait()
	if m.data == nil {
		return nil
	}
	err := unix.Munmap(m.data)
	m.data = nil
	return err
}

// readMapping is an operating-system file's state as a ReadMapper: the
// whole file, as long as it was when mapped, read-only and shared, so that
// its pages are the page cache's own.
type readMapping struct {
	data []byte // nil until MapForReads
}

// MapForReads implements ReadMapper. The kernel's own readahead and
// fault-around apply to the mapping as they do to any file mapping.
func (f osFile) MapForReads() error {
	if f.r == nil {
		return &os.PathError{Op: "map", Path: f.Name(), Err: errors.New("file opened for writing")}
	}
	size, err := f.Size()
	if err != nil {
		return err
	}
	if size == 0 || int64(int(size)) != size {
		return fmt.Errorf("%s: %w: a file of %d bytes", f.Name(), ErrNotMappable, size)
	}
	data, err := mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	switch {
	case errors.Is(err, unix.ENOMEM):
		return fmt.Errorf("%s: %w: mmap: %v", f.Name(), ErrMappingRefused, err)
	case errors.Is(err, unix.ENODEV), errors.Is(err, unix.EACCES), errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%s: %w: mmap: %v", f.Name(), ErrNotMappable, err)
	case err != nil:
		return &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	f.r.data = data
	return nil
}

// ViewAt implements ReadMapper.
func (f osFile) ViewAt(off int64, n int, fn func(b []byte) error) error {
	if f.r == nil || f.r.data == nil {
		return &os.PathError{Op: "view", Path: f.Name(), Err: ErrNotMappable}
	}
	data := f.r.data
	if off < 0 || n < 0 || off > int64(len(data)) || int64(n) > int64(len(data))-off {
		return fmt.Errorf("%s: viewing %d bytes at offset %d of a mapping of %d: %w", f.Name(), n, off, len(data), io.ErrUnexpectedEOF)
	}
	return viewGuarded(data, data[off:off+int64(n):off+int64(n)], fn, f.Name(), off)
}

// viewGuarded calls fn with b, a part of the mapping of the file name at
// offset off, and returns an error instead of crashing the process if an
// access to the mapping faults: a page the file no longer backs (it was
// cut short) or one the device could not read raises SIGBUS, which the
// runtime turns into a panic on this goroutine only while SetPanicOnFault
// is set. A fault anywhere else is not this read's to excuse: it panics on.
func viewGuarded(mapping, b []byte, fn func([]byte) error, name string, off int64) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok || !within(fault.Addr(), mapping) {
				panic(r)
			}
			err = fmt.Errorf("%s: reading %d bytes at offset %d: %w (at address %#x)", name, len(b), off, ErrReadFault, fault.Addr())
		}
	}()
	return fn(b)
}

// within reports whether addr is the address of a byte of b.
func within(addr uintptr, b []byte) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return addr >= start && addr-start < uintptr(len(b))
}

// unmap drops the mapping, if any.
func (m *readMapping) unmap() error {
	if m == nil || m.data == nil {
		return nil
	}
	err := unix.Munmap(m.data)
	m.data = nil
	return err
}
