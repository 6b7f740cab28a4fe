package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// writeSample writes the same records to w every time: single records,
// groups, groups that a Sync follows, a record spanning blocks.
func writeSample(t *testing.T, w *Writer) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := w.WriteRecord([]byte("one"))
	must(err)
	must(w.WriteGroup([][]byte{[]byte("two"), bytes.Repeat([]byte("3"), 70000)}, false))
	must(w.Sync())
	for i := range 200 {
		must(w.WriteGroup([][]byte{bytes.Repeat([]byte{byte(i)}, 100+i)}, i%50 == 49))
		if i%50 == 49 {
			must(w.Sync())
		}
	}
	must(w.WriteGroup([][]byte{[]byte("last")}, false))
}

// writtenSample writes the sample log (writeSample) to the file "written"
// of mem with a Writer that never maps and returns its bytes, what a mapped
// log must read back as, before and after EndClose.
func writtenSample(t *testing.T, mem *vfs.MemFS, salt uint64) (open, ended []byte) {
	t.Helper()
	f, _ := mem.Create("written")
	w := newWriter(f, salt)
	writeSample(t, w)
	open = fileBytes(t, mem, "written")
	if err := w.EndClose(); err != nil {
		t.Fatal(err)
	}
	return open, fileBytes(t, mem, "written")
}

func fileBytes(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, _ := f.Size()
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

// readLog reads the log in b and returns its records and the reader.
func readLog(t *testing.T, b []byte) ([]string, *Reader) {
	t.Helper()
	r := NewReader(bytes.NewReader(b), "log")
	var recs []string
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs, r
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, string(rec))
	}
}

// TestMappedWriter: a mapped log holds the write path's bytes followed by
// zeros while open, reads whole with a torn tail that cuts nothing, and is
// byte-identical once closed.
func TestMappedWriter(t *testing.T) {
	const salt = 0x5eed
	mem := vfs.NewMem()
	wf, _ := mem.Create("written")
	written := newWriter(wf, salt)
	writeSample(t, written)
	mf, _ := mem.Create("mapped")
	mapped := newWriter(mf, salt)
	mapped.m = mf.(vfs.Mapper)
	writeSample(t, mapped)
	if !mapped.Mapped() || written.Mapped() {
		t.Fatalf("Mapped: %v for the mapped log, %v for the written one", mapped.Mapped(), written.Mapped())
	}

	want := fileBytes(t, mem, "written")
	got := fileBytes(t, mem, "mapped")
	if len(got) <= len(want) || !bytes.Equal(got[:len(want)], want) || !isZero(got[len(want):]) {
		t.Fatalf("the open mapped log (%d bytes) is not the written log (%d bytes) followed by zeros", len(got), len(want))
	}
	wantRecs, _ := readLog(t, want)
	recs, r := readLog(t, got)
	if len(recs) != len(wantRecs) || len(recs) != 204 {
		t.Fatalf("read %d records from the open mapped log, %d from the written one, want 204", len(recs), len(wantRecs))
	}
	if _, torn := r.TornTail(); !torn || r.CutOff() {
		t.Fatalf("open mapped log: torn tail %v, CutOff %v; want a torn tail that cuts nothing", torn, r.CutOff())
	}

	if err := mapped.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fileBytes(t, mem, "mapped"); !bytes.Equal(got, want) {
		t.Fatalf("the closed mapped log (%d bytes) differs from the written one (%d bytes)", len(got), len(want))
	}
}

// TestMappedWriterTornRecord: a record cut short before the zeros is cut
// off, even though only zeros follow.
func TestMappedWriterTornRecord(t *testing.T) {
	mem := vfs.NewMem()
	f, _ := mem.Create("log")
	w := NewMappedWriter(f)
	if _, err := w.WriteRecord(bytes.Repeat([]byte("x"), 40000)); err != nil { // two fragments
		t.Fatal(err)
	}
	b := fileBytes(t, mem, "log")
	clear(b[blockSize : blockSize+100]) // the second fragment never reached the disk
	recs, r := readLog(t, b)
	if len(recs) != 0 || !r.CutOff() {
		t.Fatalf("read %d records, CutOff %v: want none and a cut", len(recs), r.CutOff())
	}
}

// TestMappedWriterFallback: a file system that cannot map the file gets the
// write path from the first group on.
func TestMappedWriterFallback(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(plainFS{mem})
	f, _ := efs.Create("log")
	w := NewMappedWriter(f)
	if !w.Mapped() {
		t.Fatal("an ErrorFS file is a Mapper: the writer should try to map it")
	}
	if _, err := w.WriteRecord([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if w.Mapped() {
		t.Fatal("the writer still maps a file that cannot be mapped")
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if recs, _ := readLog(t, fileBytes(t, mem, "log")); len(recs) != 1 {
		t.Fatalf("read %d records, want 1", len(recs))
	}
}

// plainFS hands out files that are not Mappers.
type plainFS struct{ vfs.FS }

type plainFile struct{ vfs.File }

func (p plainFS) Create(name string) (vfs.File, error) {
	f, err := p.FS.Create(name)
	return plainFile{f}, err
}

// TestMappedWriterCloseSyncsCut: EndClose cuts the log's allocated tail
// before its first fsync (which then writes no page past the log) and
// syncs the end marker after it, so that a power loss leaves the log
// whole, cut, with its end; Close cuts without an fsync, so a power loss
// may undo its cut.
func TestMappedWriterCloseSyncsCut(t *testing.T) {
	for _, tc := range []struct {
		name      string
		end       func(w *Writer) error
		wantOps   []vfs.Op
		wantWhole bool // the crash clone holds the whole log, cut
	}{
		{"Sync then Close", func(w *Writer) error {
			if err := w.Sync(); err != nil {
				return err
			}
			return w.Close()
		}, []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpTruncate, vfs.OpClose}, false},
		{"EndClose", (*Writer).EndClose, []vfs.Op{vfs.OpTruncate, vfs.OpWrite, vfs.OpSync, vfs.OpWrite, vfs.OpSync, vfs.OpClose}, true},
		{"Close unsynced", (*Writer).Close, []vfs.Op{vfs.OpTruncate, vfs.OpClose}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			efs := vfs.NewErrorFS(mem)
			f, _ := efs.Create("log")
			mem.SyncDir(".")
			w := NewMappedWriter(f)
			// The second record has no COMMIT of its own: Sync writes one.
			for _, rec := range []string{"first", "second"} {
				if _, err := w.WriteRecord([]byte(rec)); err != nil {
					t.Fatal(err)
				}
			}
			var ops []vfs.Op
			efs.SetInjector(func(op vfs.Op, _ string) error { ops = append(ops, op); return nil })
			if err := tc.end(w); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ops, tc.wantOps) {
				t.Fatalf("ops %v, want %v", ops, tc.wantOps)
			}
			got := fileBytes(t, mem.CrashClone(), "log")
			if tc.wantWhole != (int64(len(got)) == w.Size()) {
				t.Fatalf("after a power loss the log is %d bytes, the writer wrote %d", len(got), w.Size())
			}
			if size, _ := f.Size(); size != w.Size() {
				t.Fatalf("closed log: %d bytes, want %d", size, w.Size())
			}
		})
	}
}

// TestMappedWriterStoreError: a store that fails makes the log unusable,
// as a failed write does, and Close still cuts the file at the last whole
// group.
func TestMappedWriterStoreError(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	f, _ := efs.Create("log")
	w := NewMappedWriter(f)
	if _, err := w.WriteRecord([]byte("kept")); err != nil {
		t.Fatal(err)
	}
	efs.SetInjector(func(op vfs.Op, _ string) error {
		if op == vfs.OpWrite {
			return vfs.ErrInjected
		}
		return nil
	})
	if _, err := w.WriteRecord([]byte("lost")); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("WriteRecord: %v", err)
	}
	efs.SetInjector(nil)
	if _, err := w.WriteRecord([]byte("after")); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("WriteRecord after a failed store: %v, want the sticky error", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(); size != w.Size() {
		t.Fatalf("closed log: %d bytes, want %d, the end of the last whole group", size, w.Size())
	}
	if recs, r := readLog(t, fileBytes(t, mem, "log")); len(recs) != 1 || r.CutOff() {
		t.Fatalf("read %v, CutOff %v; want the one record before the failure", recs, r.CutOff())
	}
}

// TestMappedWriterOSZeroTail: a mapped log on the operating system's file
// system that a process left open (its file allocated a MiB ahead, so the
// zeros span many blocks) reads whole, with a tail that cuts nothing.
func TestMappedWriterOSZeroTail(t *testing.T) {
	name := filepath.Join(t.TempDir(), "log")
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewMappedWriter(f)
	if !w.Mapped() {
		t.Skip("the operating system's files are not mapped here (Linux only)")
	}
	writeSample(t, w)
	if !w.Mapped() {
		t.Skip("this file system cannot map the log")
	}
	b, err := os.ReadFile(name) // as a process that opens the store after a crash reads it
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < int(w.Size())+2*blockSize {
		t.Fatalf("the file is %d bytes for a %d-byte log: no zero tail across blocks to test", len(b), w.Size())
	}
	recs, r := readLog(t, b)
	if _, torn := r.TornTail(); len(recs) != 204 || !torn || r.CutOff() {
		t.Fatalf("read %d records, torn tail %v, CutOff %v: want 204, a tail that cuts nothing", len(recs), torn, r.CutOff())
	}
}

// refusingFile is a MemFS file whose Mapper fails store number refuseAt
// (counted from 1) with refusal, storing nothing, as the operating
// system's Mapper fails when the kernel refuses fallocate or mmap; it
// counts the stores, writes (Write and WriteAt) and cuts it is asked for,
// and notes the offset of the refused store.
type refusingFile struct {
	vfs.File
	name     string
	m        vfs.Mapper
	refuseAt int
	refusal  error

	stores, writes, writeAts, cuts int
	refusedOff                     int64
}

func newRefusingFile(t *testing.T, mem *vfs.MemFS, name string, refuseAt int, refusal error) *refusingFile {
	t.Helper()
	f, err := mem.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	return &refusingFile{File: f, name: name, m: f.(vfs.Mapper), refuseAt: refuseAt, refusal: refusal}
}

func (f *refusingFile) StoreAt(p []byte, off int64) error {
	f.stores++
	if f.stores == f.refuseAt {
		f.refusedOff = off
		return f.refusal
	}
	return f.m.StoreAt(p, off)
}

func (f *refusingFile) WriteAt(p []byte, off int64) (int, error) {
	f.writeAts++
	return f.m.WriteAt(p, off)
}

func (f *refusingFile) Cut(size int64) error {
	f.cuts++
	return f.m.Cut(size)
}

func (f *refusingFile) Write(p []byte) (int, error) {
	f.writes++
	return f.File.Write(p)
}

// TestMappedWriterNotMappableFirstStore: when the first store fails with
// ErrNotMappable (a file system that cannot allocate or map the file), the
// Writer writes that group and every later one with Write, never tries the
// mapping again nor cuts the file, and the file holds, byte for byte, the
// log a Writer that never mapped writes: every record once, from offset 0.
func TestMappedWriterNotMappableFirstStore(t *testing.T) {
	const salt = 0x5eed
	mem := vfs.NewMem()
	want, ended := writtenSample(t, mem, salt)
	f := newRefusingFile(t, mem, "log", 1, fmt.Errorf("log: %w: mmap: no such device", vfs.ErrNotMappable))
	w := newWriter(f, salt)
	w.m = f // as NewMappedWriter does
	writeSample(t, w)
	if w.Mapped() || f.stores != 1 || f.writes == 0 {
		t.Fatalf("Mapped %v after %d stores and %d writes; want the mapping tried once, then writes", w.Mapped(), f.stores, f.writes)
	}
	if got := fileBytes(t, mem, "log"); !bytes.Equal(got, want) {
		t.Fatalf("the log (%d bytes) differs from the one written without a mapping (%d bytes)", len(got), len(want))
	}
	if err := w.EndClose(); err != nil {
		t.Fatal(err)
	}
	got := fileBytes(t, mem, "log")
	if f.cuts != 0 || !bytes.Equal(got, ended) {
		t.Fatalf("after EndClose: %d cuts, the log %d bytes; want no cut and the %d bytes written", f.cuts, len(got), len(ended))
	}
	if recs, r := readLog(t, got); len(recs) != 204 || r.CutOff() {
		t.Fatalf("read %d records, CutOff %v; want 204, nothing cut", len(recs), r.CutOff())
	}
}

// TestMappedWriterRefusedLater: a store that fails other than with
// ErrNotMappable at the first store (ErrNotMappable after groups were
// stored, or any other error, first or later) makes the Writer fail,
// without falling back to Write, and stay failed, trying no further store;
// Close cuts the file to the groups stored before, so that every record
// acknowledged reads back exactly once, and nothing else.
func TestMappedWriterRefusedLater(t *testing.T) {
	for _, tc := range []struct {
		name     string
		refuseAt int
		refusal  error
	}{
		{"ErrNotMappable at store 4", 4, fmt.Errorf("log: %w: fallocate: operation not supported", vfs.ErrNotMappable)},
		{"ENOSPC at store 4", 4, &os.PathError{Op: "fallocate", Path: "log", Err: syscall.ENOSPC}},
		{"EAGAIN at the first store", 1, &os.PathError{Op: "mmap", Path: "log", Err: syscall.EAGAIN}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			f := newRefusingFile(t, mem, "log", tc.refuseAt, tc.refusal)
			w := NewMappedWriter(f)
			var acked []string
			var failed error
			for i := 0; i < 10 && failed == nil; i++ {
				rec := strings.Repeat(string(rune('a'+i)), 1000+9000*i) // the later ones span blocks
				if _, failed = w.WriteRecord([]byte(rec)); failed == nil {
					acked = append(acked, rec)
				}
			}
			if !errors.Is(failed, tc.refusal) || len(acked) != tc.refuseAt-1 {
				t.Fatalf("after %d records: error %v; want the refusal after %d", len(acked), failed, tc.refuseAt-1)
			}
			if f.writes != 0 || f.writeAts != 0 {
				t.Fatalf("the writer fell back to Write (%d calls) or WriteAt (%d) after a refusal it must not take for a file system that cannot map or a kernel at its limit", f.writes, f.writeAts)
			}
			if _, err := w.WriteRecord([]byte("after")); !errors.Is(err, tc.refusal) {
				t.Fatalf("WriteRecord after the refusal: %v, want the sticky error", err)
			}
			if err := w.Sync(); !errors.Is(err, tc.refusal) {
				t.Fatalf("Sync after the refusal: %v, want the sticky error", err)
			}
			if f.stores != tc.refuseAt || f.writes != 0 {
				t.Fatalf("%d stores and %d writes; want no attempt after the refused store %d", f.stores, f.writes, tc.refuseAt)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got := fileBytes(t, mem, "log")
			if f.cuts != 1 || int64(len(got)) != w.Size() {
				t.Fatalf("closed log: %d cuts, %d bytes; want one cut, to the %d bytes of the groups stored", f.cuts, len(got), w.Size())
			}
			recs, r := readLog(t, got)
			if !slices.Equal(recs, acked) || r.CutOff() {
				t.Fatalf("read %d records (CutOff %v), want the %d acknowledged, once each, in order", len(recs), r.CutOff(), len(acked))
			}
		})
	}
}

// TestMappedWriterMappingRefused: when the kernel refuses a window of the
// mapping (vfs.ErrMappingRefused: the process is at its limit of
// mappings), at the first store or a later one, the Writer writes that
// group and every later one with WriteAt at its offset, never trying the
// mapping again; the file then holds, byte for byte, the log a Writer
// that never mapped writes, followed by zeros until EndClose cuts them
// off. StoredSize counts only the groups stored before the refusal, and
// MappingRefusals the refused log.
func TestMappedWriterMappingRefused(t *testing.T) {
	const salt = 0x5eed
	mem := vfs.NewMem()
	want, ended := writtenSample(t, mem, salt)
	for _, refuseAt := range []int{1, 4} {
		t.Run(fmt.Sprintf("refused at store %d", refuseAt), func(t *testing.T) {
			refusals := MappingRefusals()
			f := newRefusingFile(t, mem, fmt.Sprintf("log%d", refuseAt), refuseAt, fmt.Errorf("log: %w: mmap: cannot allocate memory", vfs.ErrMappingRefused))
			w := newWriter(f, salt)
			w.m = f // as NewMappedWriter does
			writeSample(t, w)
			if w.Mapped() || f.stores != refuseAt || f.writes != 0 || f.writeAts == 0 {
				t.Fatalf("Mapped %v after %d stores, %d Writes, %d WriteAts; want %d stores, then WriteAt alone", w.Mapped(), f.stores, f.writes, f.writeAts, refuseAt)
			}
			if got := MappingRefusals() - refusals; got != 1 {
				t.Fatalf("MappingRefusals grew by %d, want 1", got)
			}
			if w.StoredSize() != f.refusedOff {
				t.Fatalf("StoredSize %d, want %d: the groups stored before the refused one", w.StoredSize(), f.refusedOff)
			}
			got := fileBytes(t, mem, f.name)
			if len(got) < len(want) || !bytes.Equal(got[:len(want)], want) || !isZero(got[len(want):]) {
				t.Fatalf("the open log (%d bytes) is not the written log (%d bytes) followed by zeros", len(got), len(want))
			}
			if err := w.EndClose(); err != nil {
				t.Fatal(err)
			}
			got = fileBytes(t, mem, f.name)
			if f.cuts != 1 || !bytes.Equal(got, ended) {
				t.Fatalf("after EndClose: %d cuts, the log %d bytes; want one cut and the %d bytes written", f.cuts, len(got), len(ended))
			}
			if recs, r := readLog(t, got); len(recs) != 204 || r.CutOff() {
				t.Fatalf("read %d records, CutOff %v; want 204, nothing cut", len(recs), r.CutOff())
			}
		})
	}
}
