package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// memFile is a vfs.File that keeps what is written in memory, counts calls
// and fails on demand. Its zero value is an empty file.
type memFile struct {
	data       bytes.Buffer
	writes     int
	syncs      int
	shortWrite bool  // write one byte less than asked, without an error
	failWrite  error // returned by the next Write
	failSync   error // returned by the next Sync
	closed     bool
}

var _ vfs.File = (*memFile)(nil)

func (f *memFile) Write(p []byte) (int, error) {
	f.writes++
	if err := f.failWrite; err != nil {
		f.failWrite = nil
		return 0, err
	}
	if f.shortWrite {
		p = p[:len(p)-1]
	}
	return f.data.Write(p)
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(f.data.Bytes()).ReadAt(p, off)
}

func (f *memFile) Sync() error {
	f.syncs++
	err := f.failSync
	f.failSync = nil
	return err
}

func (f *memFile) Size() (int64, error) { return int64(f.data.Len()), nil }

func (f *memFile) Close() error {
	if f.closed {
		return errors.New("closed twice")
	}
	f.closed = true
	return nil
}

// TestWriterOneWritePerRecord checks that each record, whatever its size,
// reaches the file in one Write call, and that Sync is one file Sync.
func TestWriterOneWritePerRecord(t *testing.T) {
	f := &memFile{}
	w := NewWriter(f)
	records := sizedRecords(0, 100, 32755, 100_000, 5)
	for i, rec := range records {
		if _, err := w.WriteRecord(rec); err != nil {
			t.Fatal(err)
		}
		if f.writes != i+1 {
			t.Fatalf("after %d records, %d Write calls", i+1, f.writes)
		}
	}
	if err := w.Sync(); err != nil || f.syncs != 1 {
		t.Fatalf("Sync() = %v after %d file syncs, want nil after 1", err, f.syncs)
	}
	if w.Size() != int64(f.data.Len()) {
		t.Fatalf("Size() = %d, file holds %d bytes", w.Size(), f.data.Len())
	}
	res := read(t, f)
	checkRecords(t, "read back", res.records, records)
}

// TestWriterErrorsAreSticky checks that after a failed Write or Sync the
// Writer writes nothing more: appending after a partial record would turn a
// torn tail into corruption.
func TestWriterErrorsAreSticky(t *testing.T) {
	errDisk := errors.New("disk on fire")
	for _, tc := range []struct {
		name string
		fail func(*memFile, *Writer) error
		want error
	}{
		{"write", func(f *memFile, w *Writer) error {
			f.failWrite = errDisk
			_, err := w.WriteRecord([]byte("lost"))
			return err
		}, errDisk},
		{"short write", func(f *memFile, w *Writer) error {
			f.shortWrite = true
			_, err := w.WriteRecord([]byte("lost"))
			return err
		}, io.ErrShortWrite},
		{"sync", func(f *memFile, w *Writer) error {
			f.failSync = errDisk
			return w.Sync()
		}, errDisk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &memFile{}
			w := NewWriter(f)
			if _, err := w.WriteRecord([]byte("kept")); err != nil {
				t.Fatal(err)
			}
			size := w.Size()
			if err := tc.fail(f, w); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			writes, syncs := f.writes, f.syncs
			if _, err := w.WriteRecord([]byte("more")); !errors.Is(err, tc.want) {
				t.Fatalf("WriteRecord after the failure: %v, want %v", err, tc.want)
			}
			if err := w.Sync(); !errors.Is(err, tc.want) {
				t.Fatalf("Sync after the failure: %v, want %v", err, tc.want)
			}
			if f.writes != writes || f.syncs != syncs {
				t.Fatal("the Writer used the file after it failed")
			}
			if w.Size() != size {
				t.Fatalf("Size() = %d, want %d: the failed record counts", w.Size(), size)
			}
			if err := w.Close(); err != nil || !f.closed {
				t.Fatalf("Close() = %v, file closed %t", err, f.closed)
			}
		})
	}
}

// TestSyncedGroupOneWrite: a group that a Sync follows costs one write call
// when the caller says so, even after groups that carried no COMMIT, and
// the log reads back whole and clean.
func TestSyncedGroupOneWrite(t *testing.T) {
	f := &memFile{}
	w := NewWriter(f)
	records := sizedRecords(10, 20, 30, 40)
	for _, p := range records[:3] { // the first carries a COMMIT, the others none
		if err := w.WriteGroup([][]byte{p}, false); err != nil {
			t.Fatal(err)
		}
	}
	writes := f.writes
	if err := w.WriteGroup(records[3:], true); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := f.writes - writes; n != 1 {
		t.Fatalf("a synced group after groups without a COMMIT took %d write calls, want 1", n)
	}
	res := read(t, f)
	checkRecords(t, "read back", res.records, records)
	if res.err != io.EOF || res.torn || res.ended {
		t.Fatalf("ended with %v, torn %t, Ended() = %t; want a clean end", res.err, res.torn, res.ended)
	}
}

// TestWriteGroupOneWrite checks that a group of records, whatever their
// sizes, reaches the file in one Write call, that an empty group writes
// nothing, and that the group reads back in order.
func TestWriteGroupOneWrite(t *testing.T) {
	f := &memFile{}
	w := NewWriter(f)
	records := sizedRecords(0, 100, 32755, 100_000, 5)
	if err := w.WriteGroup(records, false); err != nil || f.writes != 1 {
		t.Fatalf("WriteGroup() = %v after %d Write calls, want nil after 1", err, f.writes)
	}
	if err := w.WriteGroup(nil, false); err != nil || f.writes != 1 {
		t.Fatalf("WriteGroup(nil) = %v after %d Write calls, want nil after 1", err, f.writes)
	}
	if w.Size() != int64(f.data.Len()) {
		t.Fatalf("Size() = %d, file holds %d bytes", w.Size(), f.data.Len())
	}
	res := read(t, f)
	checkRecords(t, "read back", res.records, records)
	if res.err != io.EOF || res.torn || res.ended {
		t.Fatalf("ended with %v, torn %t, Ended() = %t; want a clean end", res.err, res.torn, res.ended)
	}
}

// TestMarkEnd checks that MarkEnd syncs before and after writing the END (so
// that the END never reaches the disk before what it claims is durable),
// that the Reader stops there with Ended, and that nothing can be written
// after it.
func TestMarkEnd(t *testing.T) {
	f := &memFile{}
	w := NewWriter(f)
	if _, err := w.WriteRecord([]byte("a")); err != nil {
		t.Fatal(err)
	}
	size := f.data.Len()
	if err := w.MarkEnd(); err != nil {
		t.Fatal(err)
	}
	if f.syncs != 2 || f.writes != 2 || f.data.Len() != size+endSize {
		t.Fatalf("MarkEnd: %d syncs, %d writes, %d bytes added; want 2, 2, %d",
			f.syncs, f.writes, f.data.Len()-size, endSize)
	}
	if _, err := w.WriteRecord([]byte("b")); !errors.Is(err, errEnded) {
		t.Fatalf("WriteRecord after MarkEnd: %v", err)
	}
	if err := w.WriteGroup([][]byte{[]byte("b")}, false); !errors.Is(err, errEnded) {
		t.Fatalf("WriteGroup after MarkEnd: %v", err)
	}
	if err := w.MarkEnd(); !errors.Is(err, errEnded) {
		t.Fatalf("MarkEnd after MarkEnd: %v", err)
	}
	if f.writes != 2 {
		t.Fatal("the Writer wrote after the END")
	}
	if err := w.Close(); err != nil || !f.closed {
		t.Fatalf("Close() = %v, file closed %t", err, f.closed)
	}
	res := read(t, f)
	checkRecords(t, "read back", res.records, [][]byte{[]byte("a")})
	if res.err != io.EOF || res.torn || !res.ended {
		t.Fatalf("ended with %v, torn %t, Ended() = %t; want the end marker", res.err, res.torn, res.ended)
	}

	// A failed first sync writes no END.
	f = &memFile{failSync: errors.New("disk on fire")}
	w = NewWriter(f)
	if _, err := w.WriteRecord([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := w.MarkEnd(); err == nil || f.writes != 1 {
		t.Fatalf("MarkEnd() = %v after %d writes, want an error and only the record's", err, f.writes)
	}

	// A log the last Sync covered whole needs no sync before its END.
	f = &memFile{}
	w = NewWriter(f)
	if _, err := w.WriteRecord([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.MarkEnd(); err != nil || f.syncs != 2 || f.writes != 2 {
		t.Fatalf("MarkEnd() = %v; %d syncs, %d writes in all, want 2 and 2", err, f.syncs, f.writes)
	}
}

func TestWriterClose(t *testing.T) {
	f := &memFile{}
	w := NewWriter(f)
	if _, err := w.WriteRecord([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if f.syncs != 0 {
		t.Fatal("Close synced the file")
	}
	if err := w.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
	if _, err := w.WriteRecord([]byte("b")); err == nil {
		t.Fatal("WriteRecord after Close succeeded")
	}
	if err := w.Sync(); err == nil {
		t.Fatal("Sync after Close succeeded")
	}
}

// discardFile is a vfs.File that drops what is written: the benchmarks and
// the allocation test measure the framing, not a file system.
type discardFile struct{ vfs.File }

func (discardFile) Write(p []byte) (int, error) { return len(p), nil }

// TestWriterReusesBuffer checks that writing a record or a group allocates
// nothing once the Writer's buffer has grown, and that the buffer is not
// kept after a group too large to keep it for.
func TestWriterReusesBuffer(t *testing.T) {
	w := NewWriter(discardFile{})
	rec := make([]byte, 4<<10)
	if allocs := testing.AllocsPerRun(100, func() { w.WriteRecord(rec) }); allocs != 0 {
		t.Fatalf("WriteRecord allocates %.1f times per record", allocs)
	}
	group := [][]byte{rec, rec[:100], rec}
	if allocs := testing.AllocsPerRun(100, func() { w.WriteGroup(group, false) }); allocs != 0 {
		t.Fatalf("WriteGroup allocates %.1f times per group", allocs)
	}
	w.WriteRecord(make([]byte, 2*maxRetainedBuf))
	if cap(w.buf) > maxRetainedBuf {
		t.Fatalf("kept a %d-byte buffer", cap(w.buf))
	}
}

func BenchmarkWriteRecord(b *testing.B) {
	for _, size := range []int{100, 4 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			w := NewWriter(discardFile{})
			rec := pattern(0, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.WriteRecord(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReader(b *testing.B) {
	for _, size := range []int{100, 4 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			records := make([][]byte, (16<<20)/size) // a 16 MiB log
			for i := range records {
				records[i] = pattern(i, size)
			}
			log := bytes.NewReader(writeLog(b, records))
			r := NewReader(log, testFile)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				_, err := r.Next()
				if err == io.EOF {
					r = NewReader(log, testFile)
					_, err = r.Next()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSaltPerLog checks that every log gets a salt of its own: a COMMIT
// copied from one log into another must not pass as the other's.
func TestSaltPerLog(t *testing.T) {
	salts := map[uint64]bool{}
	for range 20 {
		f := &memFile{}
		if _, err := NewWriter(f).WriteRecord([]byte("x")); err != nil {
			t.Fatal(err)
		}
		frags, _, problem := walk(f.data.Bytes())
		if problem != "" || frags[0].typ != typeLog {
			t.Fatalf("log starts with %s (%s)", typeName(frags[0].typ), problem)
		}
		salts[binary.LittleEndian.Uint64(frags[0].payload[4:])] = true
	}
	if len(salts) != 20 {
		t.Fatalf("20 logs have %d salts", len(salts))
	}
}

// writebackFile is a memFile that can start writeback: it records the
// ranges asked of it, holds each call until the test releases it, and
// notes calls that come while or after the file is closed.
type writebackFile struct {
	*memFile
	mu      sync.Mutex
	ranges  [][2]int64 // [from, to) of each call
	late    bool       // a call came after Close
	calls   chan struct{}
	release chan struct{}
}

func (f *writebackFile) StartWriteback(off, n int64) error {
	f.calls <- struct{}{}
	<-f.release
	f.mu.Lock()
	defer f.mu.Unlock()
	f.late = f.late || f.closed
	f.ranges = append(f.ranges, [2]int64{off, off + n})
	return nil
}

// Close races with StartWriteback unless the Writer waits for its calls.
func (f *writebackFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.memFile.Close()
}

// TestWriterStartsWriteback checks that a log on a file that can start
// writeback asks for it as it grows, off the writer's goroutine: over
// contiguous whole pages from offset 0, each time at least writebackStep
// more were written; that calls still running do not hold up the writer,
// and that Close waits for them rather than closing the file under them.
func TestWriterStartsWriteback(t *testing.T) {
	f := &writebackFile{memFile: &memFile{}, calls: make(chan struct{}), release: make(chan struct{})}
	w := NewWriter(f)
	rec := bytes.Repeat([]byte("x"), 1000)
	// writeTo writes groups of one record until the log is size bytes.
	writeTo := func(size int64) {
		for w.Size() < size {
			if err := w.WriteGroup([][]byte{rec}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeTo(writebackStep - 2*claimPage)
	select {
	case <-f.calls:
		t.Fatalf("writeback asked for after %d bytes, fewer than %d", w.Size(), writebackStep)
	case <-time.After(10 * time.Millisecond):
	}
	writeTo(writebackStep + claimPage)
	<-f.calls                  // the first call, held
	writeTo(4 * writebackStep) // the writer does not wait for it
	f.release <- struct{}{}
	<-f.calls // the next, asked for while the first ran, held
	closed := make(chan error)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a writeback call was running", err)
	case <-time.After(10 * time.Millisecond):
	}
	f.release <- struct{}{}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.late {
		t.Fatal("a writeback call came after Close")
	}
	if len(f.ranges) != 2 {
		t.Fatalf("writeback ranges %v, want 2", f.ranges)
	}
	var next int64
	for _, r := range f.ranges {
		if r[0] != next || r[1]-r[0] < writebackStep || r[1]%claimPage != 0 || r[1] > w.Size() {
			t.Fatalf("writeback ranges %v are not contiguous runs of whole pages from 0, each at least %d bytes, within the %d written", f.ranges, writebackStep, w.Size())
		}
		next = r[1]
	}
}
