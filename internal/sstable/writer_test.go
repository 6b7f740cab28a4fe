package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/vfs"
)

func TestWriterMisuse(t *testing.T) {
	fs := vfs.NewMem()
	f, _ := fs.Create("t.sst")
	w := NewWriter(f, WriterOptions{})
	k := base.MakeInternalKey([]byte("a"), 5, base.KindSet)
	if err := w.Add(base.InternalKey{UserKey: []byte("a"), Trailer: base.MakeTrailer(5, 7)}, nil); err == nil {
		t.Fatal("invalid kind accepted")
	}
	if err := w.Add(k, []byte("v")); err != nil {
		t.Fatal(err)
	}
	// A refused key leaves the table as it was.
	if err := w.Add(base.MakeInternalKey([]byte("a"), 6, base.KindSet), nil); err == nil {
		t.Fatal("out-of-order key accepted")
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(base.MakeInternalKey([]byte("b"), 1, base.KindSet), nil); !errors.Is(err, errWriterDone) {
		t.Fatalf("Add after Close: %v", err)
	}
	if _, err := w.Close(); !errors.Is(err, errWriterDone) {
		t.Fatalf("second Close: %v", err)
	}
	r := openTable(t, fs, "t.sst", ReaderOptions{})
	defer r.Close()
	if v, _, ok, err := r.Get([]byte("a"), base.MaxSeqNum, nil); err != nil || !ok || string(v) != "v" {
		t.Fatalf("Get(a) = %q %v %v", v, ok, err)
	}
}

// failFile fails every Write after the first n bytes.
type failFile struct {
	vfs.File
	n int
}

var errDisk = errors.New("disk full")

func (f *failFile) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errDisk
	}
	f.n -= len(p)
	return f.File.Write(p)
}

func TestWriterErrors(t *testing.T) {
	fs := vfs.NewMem()
	f, _ := fs.Create("t.sst")
	// The writer buffers 64 KiB; a bigger table reaches the file early.
	w := NewWriter(&failFile{File: f, n: 1000}, WriterOptions{Compression: NoCompression})
	var err error
	value := bytes.Repeat([]byte("x"), 1000)
	for i := 0; err == nil && i < 1000; i++ {
		err = w.Add(base.MakeInternalKey([]byte{byte(i >> 8), byte(i)}, 1, base.KindSet), value)
	}
	if !errors.Is(err, errDisk) {
		t.Fatalf("Add: %v, want the write error", err)
	}
	if _, err := w.Close(); !errors.Is(err, errDisk) {
		t.Fatalf("Close: %v, want the write error", err)
	}
	if err := f.Close(); err == nil {
		t.Fatal("Close did not close the file")
	}

	f, _ = fs.Create("u.sst")
	w = NewWriter(f, WriterOptions{})
	w.Add(base.MakeInternalKey([]byte("a"), 1, base.KindSet), nil)
	w.Abort()
	w.Abort()
	if err := f.Close(); err == nil {
		t.Fatal("Abort did not close the file")
	}
}

func TestEstimatedSize(t *testing.T) {
	fs := vfs.NewMem()
	f, _ := fs.Create("t.sst")
	w := NewWriter(f, WriterOptions{Compression: NoCompression})
	prev := w.EstimatedSize()
	for i := range 2000 {
		w.Add(base.MakeInternalKey([]byte{byte(i >> 8), byte(i)}, 1, base.KindSet), []byte("some value"))
		if n := w.EstimatedSize(); n < prev {
			t.Fatalf("EstimatedSize went down from %d to %d", prev, n)
		} else {
			prev = n
		}
	}
	w.Close()
	st, _ := fs.Stat("t.sst")
	// The estimate leaves out the filter, properties, metaindex and footer.
	if est, size := prev, uint64(st.Size()); est > size || size-est > 1024 {
		t.Fatalf("EstimatedSize %d, file %d", est, size)
	}
}

func TestSeparators(t *testing.T) {
	ik := func(s string, seq base.SeqNum) base.InternalKey {
		return base.MakeInternalKey([]byte(s), seq, base.KindSet)
	}
	for _, tc := range []struct {
		a, b base.InternalKey
		want string
	}{
		{ik("abc", 1), ik("abe", 1), "abd#MAX"},
		{ik("abc", 1), ik("abd", 1), "abc#1,SET"},
		{ik("abc", 1), ik("abcd", 1), "abc#1,SET"},
		{ik("a\xff", 1), ik("b", 1), "\"a\\xff\"#1,SET"},
		{ik("k", 9), ik("k", 8), "k#9,SET"},
		{ik("", 1), ik("b", 1), `""#1,SET`},
	} {
		k, _ := base.DecodeInternalKey(separator(nil, tc.a, tc.b))
		if got := formatSep(k); got != tc.want {
			t.Errorf("separator(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
		if base.Compare(tc.a, k) > 0 || base.Compare(k, tc.b) >= 0 {
			t.Errorf("separator(%s, %s) = %s is out of order", tc.a, tc.b, k)
		}
	}
	for _, tc := range []struct {
		a    base.InternalKey
		want string
	}{
		{ik("abc", 1), "b#MAX"},
		{ik("\xff\xffa", 1), "\"\\xff\\xffb\"#MAX"},
		{ik("\xff", 1), "\"\\xff\"#1,SET"},
		{ik("", 1), `""#1,SET`},
	} {
		k, _ := base.DecodeInternalKey(successor(nil, tc.a))
		if got := formatSep(k); got != tc.want || base.Compare(tc.a, k) > 0 {
			t.Errorf("successor(%s) = %s, want %s", tc.a, got, tc.want)
		}
	}
}

// TestUnknownFilter opens a table whose filter policy the reader does not
// know: it reads fine, without the filter.
func TestUnknownFilter(t *testing.T) {
	fs := vfs.NewMem()
	entries := []kv{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), []byte("x")}}
	buildTable(t, fs, "t.sst", entries, WriterOptions{FilterPolicy: bloom.NewPolicy(10)})
	stats := &Stats{}
	r := openTable(t, fs, "t.sst", ReaderOptions{Stats: stats})
	defer r.Close()
	var trace GetTrace
	_, _, found, err := r.Get([]byte("b"), base.MaxSeqNum, &trace)
	if err != nil || found || trace.FilterChecked || r.FilterSize() != 0 {
		t.Fatalf("Get(b): found %v, err %v, trace %s, filter size %d", found, err, &trace, r.FilterSize())
	}
	// Open read the metaindex, properties and index, not the filter.
	if got := stats.BlockReads.Load(); got != 4 {
		t.Fatalf("%d block reads, want 3 at open and 1 for the Get", got)
	}
	if r.Properties().FilterPolicy != bloom.PolicyName {
		t.Fatalf("properties name filter %q", r.Properties().FilterPolicy)
	}
}

// failingFilter is a filter policy whose writer never builds a filter, as
// a binary fuse filter does when no seed peels its keys.
type failingFilter struct{}

var errNoFilter = errors.New("no filter for these keys")

func (failingFilter) Name() string                         { return "test.failing" }
func (failingFilter) NewWriter() filter.Writer             { return failingFilter{} }
func (failingFilter) Decode([]byte) (filter.Filter, error) { return nil, errNoFilter }
func (failingFilter) AddHash(uint64)                       {}
func (failingFilter) Finish() ([]byte, error)              { return nil, errNoFilter }

// TestFilterFails: when the filter cannot be built, the table is written
// without one, and its properties say which filter failed and why.
func TestFilterFails(t *testing.T) {
	fs := vfs.NewMem()
	entries := []kv{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), []byte("x")}}
	props := buildTable(t, fs, "t.sst", entries, WriterOptions{FilterPolicy: failingFilter{}})
	r := openTable(t, fs, "t.sst", ReaderOptions{Filters: []filter.Policy{failingFilter{}}})
	defer r.Close()
	const wantErr = "test.failing: no filter for these keys"
	for name, p := range map[string]*Properties{"written": props, "read": r.Properties()} {
		if p.FilterPolicy != "" || p.FilterSize != 0 || p.FilterError != wantErr {
			t.Errorf("%s properties: filter %q, %d bytes, error %q; want none, with error %q",
				name, p.FilterPolicy, p.FilterSize, p.FilterError, wantErr)
		}
	}
	if !strings.Contains(r.Properties().String(), "filter: none ("+wantErr+")") {
		t.Errorf("properties do not tell why there is no filter:\n%s", r.Properties())
	}
	var trace GetTrace
	v, _, found, err := r.Get([]byte("a"), base.MaxSeqNum, &trace)
	if err != nil || !found || string(v) != "x" || trace.FilterChecked || r.FilterSize() != 0 {
		t.Fatalf("Get(a) = %q, found %v, err %v, trace %s, filter size %d", v, found, err, &trace, r.FilterSize())
	}
}

// syncRecordFile records what a Writer asks of its file: how many bytes
// were written at each Sync, and the ranges given to StartWriteback.
type syncRecordFile struct {
	vfs.File
	written int64
	syncs   []int64    // bytes written at each Sync
	ranges  [][2]int64 // (offset, length) of each StartWriteback
}

func (f *syncRecordFile) Write(p []byte) (int, error) {
	f.written += int64(len(p))
	return f.File.Write(p)
}

func (f *syncRecordFile) Sync() error {
	f.syncs = append(f.syncs, f.written)
	return f.File.Sync()
}

// writebackFile is a syncRecordFile that can start writeback.
type writebackFile struct{ *syncRecordFile }

func (f writebackFile) StartWriteback(off, n int64) error {
	if off+n > f.written {
		return fmt.Errorf("writeback of [%d, %d) past the %d bytes written", off, off+n, f.written)
	}
	f.ranges = append(f.ranges, [2]int64{off, n})
	return nil
}

// TestBytesPerSync checks that a writer with BytesPerSync pushes its data
// out as it goes: on a file that can start writeback, over contiguous
// ranges of at least BytesPerSync from the start of the file, with one sync
// at Close; on one that cannot, with a sync at least every BytesPerSync.
func TestBytesPerSync(t *testing.T) {
	const perSync = 64 << 10
	rng := rand.New(rand.NewPCG(7, 7))
	var entries []kv
	for i := range 3000 {
		v := make([]byte, 200)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		entries = append(entries, kv{base.MakeInternalKey(fmt.Appendf(nil, "k%06d", i), 1, base.KindSet), v})
	}
	for _, canStart := range []bool{true, false} {
		fs := vfs.NewMem()
		f, err := fs.Create("t.sst")
		if err != nil {
			t.Fatal(err)
		}
		rec := &syncRecordFile{File: f}
		var file vfs.File = rec
		if canStart {
			file = writebackFile{rec}
		}
		w := NewWriter(file, WriterOptions{BytesPerSync: perSync})
		for _, e := range entries {
			if err := w.Add(e.key, e.value); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if len(rec.syncs) == 0 || rec.syncs[len(rec.syncs)-1] != rec.written {
			t.Fatalf("canStart %v: the last sync came at %v of %d bytes", canStart, rec.syncs, rec.written)
		}
		// Between two pushes (syncs or writeback ranges), at most
		// perSync bytes and a block.
		var pushed []int64
		if canStart {
			if len(rec.syncs) != 1 {
				t.Errorf("a file that can start writeback was synced %d times, want once at Close", len(rec.syncs))
			}
			var next int64
			for _, r := range rec.ranges {
				if r[0] != next || r[1] < perSync {
					t.Fatalf("writeback ranges %v are not contiguous ranges of at least %d bytes", rec.ranges, perSync)
				}
				next = r[0] + r[1]
				pushed = append(pushed, next)
			}
		} else {
			pushed = rec.syncs[:len(rec.syncs)-1]
		}
		pushed = append(pushed, rec.written)
		var prev int64
		for _, p := range pushed {
			if p-prev > perSync+8<<10 {
				t.Fatalf("canStart %v: %d bytes written between pushes at %d and %d", canStart, p-prev, prev, p)
			}
			prev = p
		}
		if want := int(rec.written / (perSync + 8<<10)); len(pushed) < want {
			t.Fatalf("canStart %v: %d pushes for %d bytes", canStart, len(pushed), rec.written)
		}
		if err := readAll(t, fs, "t.sst", entries); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIncompressibleDataSkipsSnappy writes one entry per data block and
// checks which blocks are stored compressed: data that compresses is
// compressed in every block; after a run of incompressible blocks the
// writer stops trying snappy, so compressible blocks that follow stay raw
// until the next probe (incompressibleProbe), and from the first probe that
// compresses every block is compressed again.
func TestIncompressibleDataSkipsSnappy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() []byte {
		v := make([]byte, 600)
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		return v
	}
	compressible := bytes.Repeat([]byte("abcdefgh"), 75)
	const n = 40 // blocks in each half; not a multiple of incompressibleProbe
	for _, tc := range []struct {
		name  string
		value func(i int) []byte
		want  func(i int) string
	}{
		{"compressible", func(int) []byte { return compressible }, func(int) string { return "snappy" }},
		{"random then compressible",
			func(i int) []byte {
				if i < n {
					return random()
				}
				return compressible
			},
			func(i int) string {
				// The block after n raw ones is tried only at the next
				// multiple of incompressibleProbe.
				if i < (n/incompressibleProbe+1)*incompressibleProbe {
					return "raw"
				}
				return "snappy"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			var entries []kv
			for i := range 2 * n {
				entries = append(entries, kv{base.MakeInternalKey(fmt.Appendf(nil, "k%04d", i), 1, base.KindSet), tc.value(i)})
			}
			buildTable(t, fs, "t.sst", entries, WriterOptions{BlockSize: 256})
			r := openTable(t, fs, "t.sst", ReaderOptions{})
			defer r.Close()
			layout, err := describeLayout(r)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range strings.Split(layout, "\n") {
				if f := strings.Fields(line); len(f) > 3 && f[0] == "data" {
					got = append(got, strings.TrimSuffix(f[3], ":"))
				}
			}
			if len(got) != 2*n {
				t.Fatalf("%d data blocks, want %d:\n%s", len(got), 2*n, layout)
			}
			for i, g := range got {
				if g != tc.want(i) {
					t.Fatalf("data block %d stored %s, want %s:\n%s", i, g, tc.want(i), layout)
				}
			}
		})
	}
}
