// Package manual allocates byte buffers outside the Go heap, for memory a
// store holds for a long time and frees at a moment it knows: a table's
// pinned filter and index, freed when the last version using the table
// lets go of it, and a memtable's slabs, freed when the flush that wrote
// the memtable out, or the last reader of it, lets go of it.
//
// # Why
//
// With the default GOGC the garbage collector lets the heap grow to twice
// what is live before it collects, so every byte a store keeps on the heap
// costs about two bytes of process memory. Memory from here is not heap:
// the collector neither counts nor scans it, and it costs what it holds
// (rounded up to whole pages). Pebble keeps its block cache and memtable
// arenas outside the heap for the same reason.
//
// # Rules
//
// A buffer from New must be given to Free exactly once, whole, and never
// touched afterwards: its pages go back to the kernel, and a later access
// faults and kills the process (it cannot be recovered from). Only bytes
// belong in it: a Go pointer stored in manual memory is invisible to the
// collector, which may free what it points to. A buffer that is never
// freed leaks until the process ends.
//
// Tests call CheckUseAfterFree, which makes freed pages inaccessible
// instead of returning them, so that a use after Free faults at once
// rather than reading memory the kernel has handed to someone else.
//
// # When the kernel refuses
//
// Each buffer is a mapping of its own, and Linux limits a process's
// mappings (vm.max_map_count, 65,530 by default; neighbouring mappings
// merge, so this takes tens of thousands of live tables). A New the kernel
// refuses with ENOMEM returns a buffer from the Go heap instead, which Free
// then leaves to the collector, and a Free the kernel refuses with ENOMEM
// (unmapping part of a merged mapping needs one more) leaves the buffer
// mapped, lost until the process ends; Fallbacks counts both. Either way
// the store goes on rather than the process dying.
//
// The package uses mmap and munmap (golang.org/x/sys/unix, which has them
// on every Unix system), as the engine's vfs (file locks) ties it to Unix
// systems already.
package manual

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

var pageSize = os.Getpagesize()

// inUse counts the bytes handed out by New and not yet freed.
var inUse atomic.Int64

// mmap and munmap are the kernel's calls, variables so that a test can
// refuse them (TestKernelRefuses).
var (
	mmap   = unix.Mmap
	munmap = unix.Munmap
)

// onHeap holds the buffers New took from the Go heap, by address, until
// Free; heapNewCount and lostFreeCount count the refusals (see Fallbacks).
var (
	onHeap                      sync.Map
	heapNewCount, lostFreeCount atomic.Int64
)

// New returns a zeroed buffer of n bytes outside the Go heap, with
// len(b) == cap(b) == n; n == 0 gives nil. The buffer starts on a page
// boundary; if the kernel refuses the mapping with ENOMEM it comes from the
// Go heap instead, aligned to 8 bytes. Any other refusal panics, as the
// runtime does when the heap cannot grow.
func New(n int) []byte {
	if n == 0 {
		return nil
	}
	if n < 0 {
		panic(fmt.Sprintf("manual: New(%d)", n))
	}
	m, err := mmap(-1, 0, roundUp(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	switch {
	case errors.Is(err, unix.ENOMEM):
		m = make([]byte, n)
		onHeap.Store(unsafe.SliceData(m), m)
		heapNewCount.Add(1)
	case err != nil:
		panic(fmt.Sprintf("manual: out of memory: mapping %d bytes: %v", n, err))
	}
	inUse.Add(int64(n))
	return m[:n:n]
}

// Free returns b, which New gave, to the kernel. A nil b is a no-op.
func Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	inUse.Add(-int64(cap(b)))
	if _, ok := onHeap.LoadAndDelete(unsafe.SliceData(b)); ok {
		return
	}
	m := unsafe.Slice(unsafe.SliceData(b), roundUp(cap(b)))
	if checking.Load() {
		quarantine(m)
		return
	}
	err := munmap(m)
	if errors.Is(err, unix.ENOMEM) {
		lostFreeCount.Add(1)
		return
	}
	if err != nil {
		panic(fmt.Sprintf("manual: Free of a buffer New did not give: %v", err))
	}
}

// InUse returns the bytes New has handed out that are not yet freed.
func InUse() int64 { return inUse.Load() }

// Fallbacks returns how many buffers New took from the Go heap because the
// kernel refused a mapping, and how many Free left mapped because the
// kernel refused to unmap them (see the package comment).
func Fallbacks() (heapNews, lostFrees int64) {
	return heapNewCount.Load(), lostFreeCount.Load()
}

func roundUp(n int) int { return (n + pageSize - 1) &^ (pageSize - 1) }

// checking is whether Free quarantines instead of unmapping.
var checking atomic.Bool

// CheckUseAfterFree makes every later Free leave the buffer's pages mapped
// but inaccessible, so that a use after Free faults at once. The newest
// maxQuarantined buffers stay so; older ones are unmapped, as each mapping
// counts against the kernel's limit (vm.max_map_count, 65,530 by default).
// For tests.
func CheckUseAfterFree() { checking.Store(true) }

// Park tells the package that b, which New gave, is now kept for reuse by
// its owner and must not be read or written until Unpark. Under
// CheckUseAfterFree its pages are made inaccessible, so that a use by a
// reader that should have let go of it faults, as after Free; otherwise it
// does nothing.
func Park(b []byte) { setAccess(b, unix.PROT_NONE) }

// Unpark makes b, which Park was given, usable again.
func Unpark(b []byte) { setAccess(b, unix.PROT_READ|unix.PROT_WRITE) }

func setAccess(b []byte, prot int) {
	if cap(b) == 0 || !checking.Load() {
		return
	}
	if _, ok := onHeap.Load(unsafe.SliceData(b)); ok {
		return
	}
	if err := unix.Mprotect(unsafe.Slice(unsafe.SliceData(b), roundUp(cap(b))), prot); err != nil {
		panic(fmt.Sprintf("manual: Park or Unpark of a buffer New did not give: %v", err))
	}
}

// maxQuarantined bounds the freed buffers CheckUseAfterFree keeps mapped.
const maxQuarantined = 8192

var quarantined struct {
	sync.Mutex
	ring [maxQuarantined][]byte
	next int
}

func quarantine(m []byte) {
	if err := unix.Mprotect(m, unix.PROT_NONE); err != nil {
		panic(fmt.Sprintf("manual: Free of a buffer New did not give: %v", err))
	}
	q := &quarantined
	q.Lock()
	defer q.Unlock()
	if old := q.ring[q.next]; old != nil {
		if err := unix.Munmap(old); err != nil {
			panic(fmt.Sprintf("manual: unmapping a quarantined buffer: %v", err))
		}
	}
	q.ring[q.next] = m
	q.next = (q.next + 1) % maxQuarantined
}
