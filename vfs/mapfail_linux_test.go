package vfs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/shale-db/shale/internal/wal"
	"github.com/shale-db/shale/vfs"
	"golang.org/x/sys/unix"
)

// These tests refuse the fallocate and mmap calls of the operating
// system's Mapper (vfs.SetMapCalls) the ways file systems do, under the
// write-ahead log's mapped Writer, and check that no record it acknowledged
// is lost, duplicated or followed by anything but zeros.

// mapRecord returns record i of the log these tests write: 100 KiB, so that
// ten of them fill the operating system's 1 MiB window and its first
// allocation step, each one telling its number.
func mapRecord(i int) []byte {
	b := bytes.Repeat([]byte{byte('a' + i%26)}, 100<<10)
	binary.LittleEndian.PutUint32(b, uint32(i))
	return b
}

// readMapLog reads the log file name whole and returns its records, and
// whether it ended in a torn tail and whether that cut bytes off.
func readMapLog(t *testing.T, name string) (recs [][]byte, torn, cut bool) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	r := wal.NewReader(bytes.NewReader(b), name)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			_, torn = r.TornTail()
			return recs, torn, r.CutOff()
		}
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		recs = append(recs, bytes.Clone(rec))
	}
}

// checkMapLog fails t unless the log file name holds exactly want, with no
// bytes cut off, and is size bytes long.
func checkMapLog(t *testing.T, name string, want [][]byte, size int64) {
	t.Helper()
	recs, _, cut := readMapLog(t, name)
	if cut {
		t.Errorf("%s: the reader cut bytes off", name)
	}
	if len(recs) != len(want) {
		t.Fatalf("%s: read %d records, want %d", name, len(recs), len(want))
	}
	for i := range recs {
		if !bytes.Equal(recs[i], want[i]) {
			t.Fatalf("%s: record %d differs from the one written (it reads as record %d)", name, i, binary.LittleEndian.Uint32(recs[i]))
		}
	}
	if fi, err := os.Stat(name); err != nil || fi.Size() != size {
		t.Fatalf("%s: Stat = %v, %v; want %d bytes", name, fi.Size(), err, size)
	}
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
// (EOPNOTSUPP, ENOSYS) or a shared mapping (ENODEV, EACCES, EINVAL) gets
// the log written with write(2) from its first group on, the mapping tried
// once, nothing lost and no allocation left behind.
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
			name := filepath.Join(t.TempDir(), "log")
			f, err := vfs.Default.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			w := wal.NewMappedWriter(f)
			var want [][]byte
			for i := range 25 { // past the first window and allocation step
				want = append(want, mapRecord(i))
				if _, err := w.WriteRecord(want[i]); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if w.Mapped() {
					t.Fatalf("record %d: the writer still maps a file whose mapping was refused", i)
				}
			}
			if refused != 1 {
				t.Fatalf("the mapping was refused %d times, want once", refused)
			}
			// As a process crash leaves it: the log and nothing after it.
			checkMapLog(t, name, want, w.Size())
			if err := w.SyncClose(); err != nil {
				t.Fatal(err)
			}
			checkMapLog(t, name, want, w.Size())
		})
	}
}

// TestMapRefusedLater: when the file system refuses to extend the file or
// to map a later window after groups were stored through an earlier one,
// the group being stored fails with an error (the log is not switched to
// write(2) halfway), every later write fails too, and the file holds each
// group stored before, once, followed by zeros until Close cuts them.
func TestMapRefusedLater(t *testing.T) {
	var refused int
	for _, tc := range []struct {
		name     string
		set      func(t *testing.T)
		refusals int // ENOSPC is refused twice: a step ahead, then the bytes the store needs
	}{
		{"fallocate ENOSPC", func(t *testing.T) { vfs.SetMapCalls(t, refuseFallocate(unix.ENOSPC, 1<<20, &refused), nil) }, 2},
		{"fallocate EOPNOTSUPP", func(t *testing.T) { vfs.SetMapCalls(t, refuseFallocate(unix.EOPNOTSUPP, 1<<20, &refused), nil) }, 1},
		{"mmap ENODEV", func(t *testing.T) { vfs.SetMapCalls(t, nil, refuseMmap(unix.ENODEV, 1, &refused)) }, 1},
		{"mmap ENOMEM", func(t *testing.T) { vfs.SetMapCalls(t, nil, refuseMmap(unix.ENOMEM, 1, &refused)) }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused = 0
			tc.set(t)
			name := filepath.Join(t.TempDir(), "log")
			f, err := vfs.Default.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			w := wal.NewMappedWriter(f)
			var acked [][]byte
			var failed error
			for i := 0; i < 25 && failed == nil; i++ {
				rec := mapRecord(i)
				if _, failed = w.WriteRecord(rec); failed == nil {
					acked = append(acked, rec)
				}
			}
			if failed == nil || refused != tc.refusals {
				t.Fatalf("after %d records: error %v, %d refusals; want the refused store to fail after %d", len(acked), failed, refused, tc.refusals)
			}
			if errors.Is(failed, vfs.ErrNotMappable) {
				t.Fatalf("a refusal after stores reads as ErrNotMappable: %v", failed)
			}
			if len(acked) < 9 {
				t.Fatalf("only %d records stored before the refusal: the test never stored through a first window", len(acked))
			}
			if _, err := w.WriteRecord(mapRecord(99)); err == nil {
				t.Fatal("a write after the failed store succeeded")
			}
			// As a process crash leaves it: the stored groups, then zeros.
			recs, _, cut := readMapLog(t, name)
			if cut || len(recs) != len(acked) {
				t.Fatalf("before Close: read %d records (cut %v), want the %d stored", len(recs), cut, len(acked))
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			checkMapLog(t, name, acked, w.Size())
		})
	}
}

// TestMapAllocateInterrupted: fallocate interrupted by a signal (EINTR,
// which tmpfs returns, and the Go runtime signals its threads often) is
// retried, not taken for a failure that makes the log unusable.
func TestMapAllocateInterrupted(t *testing.T) {
	interrupts := 0
	vfs.SetMapCalls(t, func(fd int, mode uint32, off, size int64) error {
		if interrupts < 3 {
			interrupts++
			return unix.EINTR
		}
		return unix.Fallocate(fd, mode, off, size)
	}, nil)
	name := filepath.Join(t.TempDir(), "log")
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := wal.NewMappedWriter(f)
	want := [][]byte{mapRecord(0)}
	if _, err := w.WriteRecord(want[0]); err != nil {
		t.Fatalf("a store whose fallocate a signal interrupted: %v", err)
	}
	if !w.Mapped() || interrupts != 3 {
		t.Fatalf("Mapped %v after %d interrupts; want the log mapped after 3", w.Mapped(), interrupts)
	}
	if err := w.SyncClose(); err != nil {
		t.Fatal(err)
	}
	checkMapLog(t, name, want, w.Size())
}

// TestMapFirstMmapFails: an mmap that fails at the first store for a
// reason other than a file system that takes no shared mappings (ENOMEM)
// fails the store; Close then leaves the file empty, with nothing of the
// allocation behind it.
func TestMapFirstMmapFails(t *testing.T) {
	var refused int
	vfs.SetMapCalls(t, nil, refuseMmap(unix.ENOMEM, 0, &refused))
	name := filepath.Join(t.TempDir(), "log")
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := wal.NewMappedWriter(f)
	if _, err := w.WriteRecord(mapRecord(0)); err == nil || refused != 1 {
		t.Fatalf("WriteRecord: %v after %d refusals; want an error", err, refused)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkMapLog(t, name, nil, 0)
}

// TestMapNearlyFullDisk: on a disk with room for the log but not for a
// step of allocation ahead, the mapped log keeps storing records until the
// bytes they need run out, as write(2) would, and then fails with nothing
// lost.
func TestMapNearlyFullDisk(t *testing.T) {
	const room = 1<<20 + 450<<10 // bytes the disk can give the file
	var refused int
	vfs.SetMapCalls(t, refuseFallocate(unix.ENOSPC, room, &refused), nil)
	name := filepath.Join(t.TempDir(), "log")
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := wal.NewMappedWriter(f)
	var acked [][]byte
	var failed error
	for i := 0; i < 25 && failed == nil; i++ {
		rec := mapRecord(i)
		if _, failed = w.WriteRecord(rec); failed == nil {
			acked = append(acked, rec)
		}
	}
	if !errors.Is(failed, unix.ENOSPC) {
		t.Fatalf("after %d records: error %v, want ENOSPC", len(acked), failed)
	}
	// Each 100 KiB record takes its framing too: 14 fit in the room.
	if want := 14; len(acked) != want {
		t.Fatalf("stored %d records before the disk was full, want %d (%d refusals)", len(acked), want, refused)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkMapLog(t, name, acked, w.Size())
}
