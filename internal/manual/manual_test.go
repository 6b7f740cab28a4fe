package manual

import (
	"os"
	"testing"
	"unsafe"

	"github.com/shale-db/shale/internal/faulttest"
	"golang.org/x/sys/unix"
)

func TestNewFree(t *testing.T) {
	before := InUse()
	if b := New(0); b != nil {
		t.Fatalf("New(0) = %d bytes, want nil", len(b))
	}
	var bufs [][]byte
	for _, n := range []int{1, pageSize - 1, pageSize, pageSize + 1, 3 << 20} {
		b := New(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("New(%d): len %d cap %d", n, len(b), cap(b))
		}
		for i, c := range b {
			if c != 0 {
				t.Fatalf("New(%d)[%d] = %d, want a zeroed buffer", n, i, c)
			}
		}
		for i := range b {
			b[i] = byte(i)
		}
		bufs = append(bufs, b)
	}
	if got, want := InUse()-before, int64(1+pageSize-1+pageSize+pageSize+1+3<<20); got != want {
		t.Fatalf("InUse grew by %d, want %d", got, want)
	}
	for _, b := range bufs {
		if b[len(b)-1] != byte(len(b)-1) {
			t.Fatalf("a buffer of %d bytes lost its last byte", len(b))
		}
		Free(b)
	}
	Free(nil)
	if got := InUse(); got != before {
		t.Fatalf("InUse = %d after freeing everything, want %d", got, before)
	}
}

// TestUseAfterFreeFaults runs itself in a child process that reads a freed
// buffer under CheckUseAfterFree: the child must die of the fault.
func TestUseAfterFreeFaults(t *testing.T) {
	if os.Getenv("MANUAL_USE_AFTER_FREE") == "1" {
		CheckUseAfterFree()
		b := New(100)
		b[0] = 1
		Free(b)
		println("read after free:", b[0]) // faults
		os.Exit(0)
	}
	faulttest.ExpectFault(t, "MANUAL_USE_AFTER_FREE", "", "read after free:")
}

// TestParkedFaults runs itself in a child process under
// CheckUseAfterFree: a parked buffer is usable again once unparked, and a
// read of it while parked kills the child with a fault.
func TestParkedFaults(t *testing.T) {
	if os.Getenv("MANUAL_PARKED") == "1" {
		CheckUseAfterFree()
		b := New(100)
		b[0] = 1
		Park(b)
		Unpark(b)
		b[0]++
		println("unparked:", b[0])
		Park(b)
		println("read while parked:", b[0]) // faults
		os.Exit(0)
	}
	faulttest.ExpectFault(t, "MANUAL_PARKED", "unparked: 2", "read while parked:")
}

// TestKernelRefuses: a mapping the kernel refuses with ENOMEM (a process at
// its limit of mappings) comes from the Go heap instead, and an unmapping
// it refuses with ENOMEM leaves the buffer mapped; neither panics, and
// InUse and Fallbacks account for both. Other refusals still panic.
func TestKernelRefuses(t *testing.T) {
	realMmap, realMunmap := mmap, munmap
	t.Cleanup(func() { mmap, munmap = realMmap, realMunmap })
	before := InUse()
	heap0, lost0 := Fallbacks()

	mmap = func(int, int64, int, int, int) ([]byte, error) { return nil, unix.ENOMEM }
	b := New(3<<20 + 5)
	if len(b) != 3<<20+5 || cap(b) != len(b) {
		t.Fatalf("New from the heap: len %d, cap %d", len(b), cap(b))
	}
	if addr := uintptr(unsafe.Pointer(unsafe.SliceData(b))); addr%8 != 0 {
		t.Fatalf("New from the heap at %#x: not aligned to 8 bytes", addr)
	}
	for i := range b {
		if b[i] != 0 {
			t.Fatalf("New from the heap: byte %d is %d, want 0", i, b[i])
		}
		b[i] = byte(i)
	}
	mmap = realMmap
	c := New(100) // a mapping

	munmap = func([]byte) error { return unix.ENOMEM }
	Free(b)
	Free(c)
	if heap, lost := Fallbacks(); heap-heap0 != 1 || lost-lost0 != 1 {
		t.Fatalf("Fallbacks = %d from the heap, %d lost; want 1 and 1", heap-heap0, lost-lost0)
	}
	if got := InUse(); got != before {
		t.Fatalf("InUse = %d after freeing both, want %d", got, before)
	}
	if _, ok := onHeap.Load(unsafe.SliceData(b)); ok {
		t.Fatal("a heap buffer is still tracked after Free")
	}

	mmap = func(int, int64, int, int, int) ([]byte, error) { return nil, unix.EINVAL }
	defer func() {
		if recover() == nil {
			t.Fatal("New did not panic when the kernel refused a mapping with EINVAL")
		}
		if got := InUse(); got != before {
			t.Errorf("InUse = %d after a refused New, want %d", got, before)
		}
	}()
	New(100)
}
