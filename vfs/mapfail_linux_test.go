package vfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/shale-db/shale/vfs"
	"golang.org/x/sys/unix"
)

// These tests refuse the fallocate and mmap calls of the operating
// system's Mapper (vfs.SetMapCalls) the ways file systems do, and check
// what a caller of StoreAt and Cut (the write-ahead log) relies on: the
// error it gets, and a file that holds each store that succeeded, once,
// followed by nothing but zeros until Cut.

// chunkSize is the size of the stores these tests make: ten of them fit in
// the operating system's 1 MiB window and its first allocation step, the
// eleventh reaches past both.
const chunkSize = 100 << 10

// chunk returns store i of these tests: chunkSize bytes that tell its
// number.
func chunk(i int) []byte {
	b := bytes.Repeat([]byte{byte('a' + i%26)}, chunkSize)
	b[0], b[1] = byte(i), byte(i>>8)
	return b
}

// createMapper creates a file in a new temporary directory with
// vfs.Default and returns it, its Mapper and its name. The file is closed
// when t ends.
func createMapper(t *testing.T) (vfs.File, vfs.Mapper, string) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "f")
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, ok := f.(vfs.Mapper)
	if !ok {
		t.Fatalf("%T is not a Mapper", f)
	}
	return f, m, name
}

// storeChunks stores chunks 0, 1, ... at consecutive offsets through m
// until a store fails or n are stored, and returns the bytes stored and
// the error of the store that failed, if any.
func storeChunks(m vfs.Mapper, n int) (stored []byte, err error) {
	for i := range n {
		p := chunk(i)
		if err := m.StoreAt(p, int64(len(stored))); err != nil {
			return stored, err
		}
		stored = append(stored, p...)
	}
	return stored, nil
}

// checkFile fails t unless the file name starts with want, exactly, and
// holds only zeros after it; with cut set, nothing may follow want.
func checkFile(t *testing.T, name string, want []byte, cut bool) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < len(want) {
		t.Fatalf("%s is %d bytes, shorter than the %d stored", name, len(b), len(want))
	}
	if !bytes.Equal(b[:len(want)], want) {
		i := 0
		for b[i] == want[i] {
			i++
		}
		t.Fatalf("%s differs from the bytes stored at offset %d", name, i)
	}
	if cut && len(b) != len(want) {
		t.Fatalf("%s is %d bytes after Cut, want the %d stored", name, len(b), len(want))
	}
	if i := bytes.IndexFunc(b[len(want):], func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("%s holds a nonzero byte at offset %d, past the %d stored", name, len(want)+i, len(want))
	}
}

// checkStoredThenCut checks that the file name holds stored followed by
// zeros, as a process crash would leave it, then cuts it through m at the
// end of stored, syncs it, and checks that nothing follows stored.
func checkStoredThenCut(t *testing.T, f vfs.File, m vfs.Mapper, name string, stored []byte) {
	t.Helper()
	checkFile(t, name, stored, false)
	if err := m.Cut(int64(len(stored))); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, name, stored, true)
}

// refuseFallocate returns a fallocate that fails with errno when asked to
// extend a file past from bytes, counting its refusals in n.
func refuseFallocate(errno unix.Errno, from int64, n *int) func(int, uint32, int64, int64) error {
	return func(fd int, mode uint32, off, size int64) error {
		if off+size > from {
			*n++
			return errno
		}
		return unix.Fallocate(fd, mode, off, size)
	}
}

// refuseMmap returns an mmap that fails with errno when asked to map a
// window at or past from, counting its refusals in n.
func refuseMmap(errno unix.Errno, from int64, n *int) func(int, int64, int, int, int) ([]byte, error) {
	return func(fd int, off int64, length, prot, flags int) ([]byte, error) {
		if off >= from {
			*n++
			return nil, errno
		}
		return unix.Mmap(fd, off, length, prot, flags)
	}
}

// TestMapRefusedAtFirstStore: a file system that refuses fallocate
// (EOPNOTSUPP, ENOSYS) or a shared mapping (ENODEV, EACCES, EINVAL) fails
// the first store with ErrNotMappable after one try of the refused call,
// and leaves the file empty (an mmap refusal undoes the allocation), so
// that the caller can write the file with Write from offset 0 instead, past
// a window and an allocation step, and find exactly what it wrote.
func TestMapRefusedAtFirstStore(t *testing.T) {
	var refused int
	for _, tc := range []struct {
		name string
		set  func(t *testing.T)
	}{
		{"fallocate EOPNOTSUPP", func(t *testing.T) { vfs.SetMapCalls(t, refuseFallocate(unix.EOPNOTSUPP, 0, &refused), nil) }},
		{"fallocate ENOSYS", func(t *testing.T) { vfs.SetMapCalls(t, refuseFallocate(unix.ENOSYS, 0, &refused), nil) }},
		{"mmap ENODEV", func(t *testing.T) { vfs.SetMapCalls(t, nil, refuseMmap(unix.ENODEV, 0, &refused)) }},
		{"mmap EACCES", func(t *testing.T) { vfs.SetMapCalls(t, nil, refuseMmap(unix.EACCES, 0, &refused)) }},
		{"mmap EINVAL", func(t *testing.T) { vfs.SetMapCalls(t, nil, refuseMmap(unix.EINVAL, 0, &refused)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused = 0
			tc.set(t)
			f, m, name := createMapper(t)
			err := m.StoreAt(chunk(0), 0)
			if !errors.Is(err, vfs.ErrNotMappable) {
				t.Fatalf("first StoreAt: %v, want ErrNotMappable", err)
			}
			if refused != 1 {
				t.Fatalf("the refused call was made %d times, want once", refused)
			}
			checkFile(t, name, nil, true) // empty: no allocation left behind
			var want []byte
			for i := range 25 { // past the first window and allocation step
				p := chunk(i)
				if n, err := f.Write(p); err != nil || n != len(p) {
					t.Fatalf("Write %d after ErrNotMappable: %d, %v", i, n, err)
				}
				want = append(want, p...)
			}
			checkFile(t, name, want, true)
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			checkFile(t, name, want, true)
		})
	}
}

// TestMapRefusedLater: when the file system refuses to extend the file or
// to map a later window after stores through an earlier one, the store
// fails with an error that is neither ErrNotMappable (the caller must not
// switch to Write halfway) nor ErrMappingRefused (the kernel's limit of
// mappings, see TestMapRefusedWindow), the file holds each earlier store,
// once, followed by zeros, and Cut leaves exactly those stores.
func TestMapRefusedLater(t *testing.T) {
	var refused int
	for _, tc := range []struct {
		name string
		set  func(t *testing.T)
		// refusals counts the preparation of the second window in the
		// background, which fails and leaves the store that needs the window
		// to make the calls itself: ENOSPC is then refused twice, a step
		// ahead and the bytes the store needs.
		refusals int
	}{
		{"fallocate ENOSPC", func(t *testing.T) { vfs.SetMapCalls(t, refuseFallocate(unix.ENOSPC, 1<<20, &refused), nil) }, 3},
		{"fallocate EOPNOTSUPP", func(t *testing.T) { vfs.SetMapCalls(t, refuseFallocate(unix.EOPNOTSUPP, 1<<20, &refused), nil) }, 2},
		{"mmap ENODEV", func(t *testing.T) { vfs.SetMapCalls(t, nil, refuseMmap(unix.ENODEV, 1, &refused)) }, 2},
		{"mmap EAGAIN", func(t *testing.T) { vfs.SetMapCalls(t, nil, refuseMmap(unix.EAGAIN, 1, &refused)) }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused = 0
			tc.set(t)
			f, m, name := createMapper(t)
			stored, err := storeChunks(m, 25)
			if err == nil || refused != tc.refusals {
				t.Fatalf("after %d stores: error %v, %d refusals; want the refused store to fail after %d", len(stored)/chunkSize, err, refused, tc.refusals)
			}
			if errors.Is(err, vfs.ErrNotMappable) || errors.Is(err, vfs.ErrMappingRefused) {
				t.Fatalf("a refusal after stores reads as ErrNotMappable or ErrMappingRefused: %v", err)
			}
			if n := len(stored) / chunkSize; n < 10 {
				t.Fatalf("only %d stores before the refusal: the test never stored through a first window", n)
			}
			checkStoredThenCut(t, f, m, name, stored)
		})
	}
}

// TestMapAllocateInterrupted: fallocate interrupted by a signal (EINTR,
// which tmpfs returns, and the Go runtime signals its threads often) is
// retried, at the first store and at later ones, not taken for a refusal.
func TestMapAllocateInterrupted(t *testing.T) {
	var calls, interrupts int
	vfs.SetMapCalls(t, func(fd int, mode uint32, off, size int64) error {
		calls++
		if calls%3 != 0 { // each allocation is interrupted twice
			interrupts++
			return unix.EINTR
		}
		return unix.Fallocate(fd, mode, off, size)
	}, nil)
	f, m, name := createMapper(t)
	stored, err := storeChunks(m, 25) // past the first allocation step
	if err != nil {
		t.Fatalf("after %d stores, %d interrupts: %v", len(stored)/chunkSize, interrupts, err)
	}
	if interrupts < 4 {
		t.Fatalf("%d interrupts: the test did not interrupt a later allocation", interrupts)
	}
	checkStoredThenCut(t, f, m, name, stored)
}

// TestMapRefusedWindow: a window the kernel refuses to map for want of
// room among the process's mappings (ENOMEM, at vm.max_map_count), the
// first or a later one, fails its store with ErrMappingRefused (not
// ErrNotMappable) after one try (for a later window, after one more by
// its preparation in the background), storing nothing and keeping the
// file's allocation; WriteAt then writes that store and the rest at their
// offsets, past windows and allocation steps, and Cut leaves exactly what
// was stored and written.
func TestMapRefusedWindow(t *testing.T) {
	for _, from := range []int64{0, 1} { // the first window; the second
		t.Run(fmt.Sprintf("from %d", from), func(t *testing.T) {
			var refused int
			vfs.SetMapCalls(t, nil, refuseMmap(unix.ENOMEM, from, &refused))
			f, m, name := createMapper(t)
			stored, err := storeChunks(m, 25)
			wantRefused := 1 + int(from) // a later window's preparation is refused first
			if !errors.Is(err, vfs.ErrMappingRefused) || errors.Is(err, vfs.ErrNotMappable) || refused != wantRefused {
				t.Fatalf("after %d stores: error %v, %d refusals; want ErrMappingRefused after %d", len(stored)/chunkSize, err, refused, wantRefused)
			}
			if n := len(stored) / chunkSize; from == 0 && n != 0 || from > 0 && n < 10 {
				t.Fatalf("%d stores before the refusal of the window from offset %d", n, from)
			}
			checkFile(t, name, stored, false) // the refused store left nothing
			want := stored
			for i := len(stored) / chunkSize; i < 25; i++ {
				p := chunk(i)
				if n, err := m.WriteAt(p, int64(len(want))); err != nil || n != len(p) {
					t.Fatalf("WriteAt of chunk %d after the refusal: %d, %v", i, n, err)
				}
				want = append(want, p...)
			}
			if refused != wantRefused {
				t.Fatalf("%d mmap refusals: WriteAt tried to map", refused)
			}
			checkStoredThenCut(t, f, m, name, want)
		})
	}
}

// TestMapNearlyFullDisk: on a disk with room for the stores but not for a
// step of allocation ahead, the Mapper allocates only the pages each store
// needs, so that stores succeed until the bytes they need run out, as
// write(2) would, and then fail with ENOSPC with every store before intact.
func TestMapNearlyFullDisk(t *testing.T) {
	const room = 1<<20 + 450<<10 // bytes the disk can give the file
	var refused int
	vfs.SetMapCalls(t, refuseFallocate(unix.ENOSPC, room, &refused), nil)
	f, m, name := createMapper(t)
	stored, err := storeChunks(m, 25)
	if !errors.Is(err, unix.ENOSPC) || errors.Is(err, vfs.ErrNotMappable) {
		t.Fatalf("after %d stores: error %v, want ENOSPC", len(stored)/chunkSize, err)
	}
	// A store fits if its end, rounded up to a page, is within the room.
	page := os.Getpagesize()
	fit := 0
	for (fit+1)*chunkSize <= room/page*page {
		fit++
	}
	if fit <= 10 {
		t.Fatalf("%d stores fit in the room with %d-byte pages: none past the first allocation step", fit, page)
	}
	if n := len(stored) / chunkSize; n != fit {
		t.Fatalf("%d stores before the disk was full, want %d (%d refusals)", n, fit, refused)
	}
	checkStoredThenCut(t, f, m, name, stored)
}

// TestMapWindowPrepared: once stores have filled half a window, the next
// one is allocated, mapped and faulted in in the background, so that the
// store that reaches past the window makes neither call itself, and the
// file still holds exactly what was stored.
func TestMapWindowPrepared(t *testing.T) {
	var calls atomic.Int64
	vfs.SetMapCalls(t,
		func(fd int, mode uint32, off, size int64) error {
			calls.Add(1)
			return unix.Fallocate(fd, mode, off, size)
		},
		func(fd int, off int64, length, prot, flags int) ([]byte, error) {
			calls.Add(1)
			return unix.Mmap(fd, off, length, prot, flags)
		})
	f, m, name := createMapper(t)
	stored, err := storeChunks(m, 10) // the first window, past its half
	if err != nil {
		t.Fatal(err)
	}
	if !vfs.WaitPrepared(f) {
		t.Fatal("no window prepared after stores filled most of the first")
	}
	// The window's pages were faulted in ahead of the stores: each is in
	// the page cache, which a page of an allocated file is not until it is
	// touched.
	window := vfs.PreparedWindow(f)
	resident := make([]byte, (len(window)+os.Getpagesize()-1)/os.Getpagesize())
	if len(window) == 0 {
		t.Fatal("no prepared window")
	}
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&window[0])), uintptr(len(window)), uintptr(unsafe.Pointer(&resident[0]))); errno != 0 {
		t.Fatal(errno)
	}
	for i, r := range resident {
		if r&1 == 0 {
			t.Fatalf("page %d of %d of the prepared window is not resident: it was not faulted in", i, len(resident))
		}
	}
	before := calls.Load()
	p := chunk(10) // reaches past the first window
	if err := m.StoreAt(p, int64(len(stored))); err != nil {
		t.Fatal(err)
	}
	stored = append(stored, p...)
	if n := calls.Load() - before; n != 0 {
		t.Fatalf("the store past the first window made %d fallocate or mmap calls, want none: the prepared window was not used", n)
	}
	checkStoredThenCut(t, f, m, name, stored)
}
