package vfs

import "testing"

// SetMapCalls replaces, for the rest of test t, the fallocate and mmap
// calls that the operating system's files make as Mappers, so that a test
// can refuse them the ways file systems do; a nil function keeps the real
// call. The replacements are package state: t must not run in parallel.
func SetMapCalls(t testing.TB,
	fa func(fd int, mode uint32, off, size int64) error,
	mm func(fd int, off int64, length, prot, flags int) ([]byte, error)) {
	oldFa, oldMm := fallocate, mmap
	t.Cleanup(func() { fallocate, mmap = oldFa, oldMm })
	if fa != nil {
		fallocate = fa
	}
	if mm != nil {
		mmap = mm
	}
}

// WaitPrepared waits until the window that f, an operating-system file
// being stored into, prepares in the background is ready, and reports
// whether it has one ready.
func WaitPrepared(f File) bool {
	n := f.(osFile).m.next
	if n == nil {
		return false
	}
	<-n.done
	return n.data != nil
}

// PreparedWindow returns the window that f, an operating-system file being
// stored into, has made ready in the background (see WaitPrepared), or
// nil.
func PreparedWindow(f File) []byte {
	if n := f.(osFile).m.next; n != nil {
		<-n.done
		return n.data
	}
	return nil
}
