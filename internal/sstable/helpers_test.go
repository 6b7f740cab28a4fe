package sstable

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/vfs"
)

type kv struct {
	key   base.InternalKey
	value []byte
}

// buildTable writes entries as a table named name in fs and returns its
// properties.
func buildTable(t testing.TB, fs vfs.FS, name string, entries []kv, opts WriterOptions) *Properties {
	t.Helper()
	return buildTableIndexInterval(t, fs, name, entries, opts, 0)
}

// buildTableIndexInterval is buildTable with the index block written at
// restart interval n, or at the writer's own when n is 0; n = 1 writes it
// as shale did before the interval became indexRestartInterval.
func buildTableIndexInterval(t testing.TB, fs vfs.FS, name string, entries []kv, opts WriterOptions, n int) *Properties {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, opts)
	if n > 0 {
		w.index.restartInterval = n
	}
	for _, e := range entries {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	props, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return props
}

func openTable(t testing.TB, fs vfs.FS, name string, opts ReaderOptions) *Reader {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(f, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// describeLayout lists a table's blocks in file order: kind, offset, stored
// length and compression, and for data blocks their entries and key range.
func describeLayout(r *Reader) (string, error) {
	var b strings.Builder
	raw := func(h blockHandle) ([]byte, string, error) {
		buf := make([]byte, h.length+blockTrailerLen)
		if _, err := r.f.ReadAt(buf, int64(h.offset)); err != nil {
			return nil, "", err
		}
		comp := map[byte]string{blockTypeRaw: "raw", blockTypeSnappy: "snappy", blockTypeZstd: "zstd"}[buf[h.length]]
		contents, err := decodeBlock(r.name, int64(h.offset), buf)
		return contents, comp, err
	}
	line := func(kind string, h blockHandle, comp string, contents []byte) {
		fmt.Fprintf(&b, "%-10s %6d %6d  %s", kind, h.offset, h.length, comp)
		if comp != "raw" {
			fmt.Fprintf(&b, " (%d raw)", len(contents))
		}
	}
	var index blockIter
	if err := index.init(r.name, r.indexOffset, r.index); err != nil {
		return "", err
	}
	b.WriteString("block      offset length  stored\n")
	for ok := index.First(); ok; ok = index.Next() {
		h, _ := decodeHandle(index.val)
		contents, comp, err := raw(h)
		if err != nil {
			return "", err
		}
		line("data", h, comp, contents)
		var it blockIter
		if err := it.init(r.name, int64(h.offset), contents); err != nil {
			return "", err
		}
		n := 0
		var first, last base.InternalKey
		for ok := it.First(); ok; ok = it.Next() {
			k, _ := base.DecodeInternalKey(it.key)
			if n == 0 {
				first = k.Clone()
			}
			last, n = k.Clone(), n+1
		}
		sep, _ := base.DecodeInternalKey(index.key)
		fmt.Fprintf(&b, ": %d entries %s .. %s, sep %s\n", n, first, last, formatSep(sep))
	}
	// The meta blocks follow the data blocks, in the order written.
	size, _ := r.f.Size()
	buf := make([]byte, footerLen)
	if _, err := r.f.ReadAt(buf, size-footerLen); err != nil {
		return "", err
	}
	ft, err := decodeFooter(r.name, size-footerLen, buf)
	if err != nil {
		return "", err
	}
	meta, _, err := raw(ft.metaindex)
	if err != nil {
		return "", err
	}
	blocks := map[uint64]string{ft.index.offset: "index", ft.metaindex.offset: "metaindex"}
	handles := map[uint64]blockHandle{ft.index.offset: ft.index, ft.metaindex.offset: ft.metaindex}
	var it blockIter
	if err := it.init(r.name, int64(ft.metaindex.offset), meta); err != nil {
		return "", err
	}
	for ok := it.First(); ok; ok = it.Next() {
		h, _ := decodeHandle(it.val)
		blocks[h.offset] = strings.TrimSuffix(string(it.key), "."+r.props.FilterPolicy)
		handles[h.offset] = h
	}
	for off := r.props.DataSize; off < uint64(size-footerLen); {
		h := handles[off]
		contents, comp, err := raw(h)
		if err != nil {
			return "", err
		}
		line(blocks[off], h, comp, contents)
		b.WriteByte('\n')
		off += h.length + blockTrailerLen
	}
	fmt.Fprintf(&b, "%-10s %6d %6d\n", "footer", size-footerLen, footerLen)
	return b.String(), nil
}

// formatSep prints an index separator, marking the synthetic trailer of a
// shortened one.
func formatSep(k base.InternalKey) string {
	if k.Trailer == base.MakeTrailer(base.MaxSeqNum, base.KindMax) {
		return base.FormatKey(k.UserKey) + "#MAX"
	}
	return k.String()
}

// checkCorruption fails t unless err is a corruption error naming file.
func checkCorruption(t testing.TB, err error, file string) {
	t.Helper()
	var ce *base.CorruptionError
	if !errors.Is(err, base.ErrCorruption) || !errors.As(err, &ce) || ce.File != file {
		t.Fatalf("want a corruption error naming %s, got %v", file, err)
	}
}

// damageBlockOf flips bits (mask) of byte at of the data block holding key
// in table name, and returns the block's offset.
func damageBlockOf(t testing.TB, fs vfs.FS, name string, key []byte, at int, mask byte) uint64 {
	t.Helper()
	r := openTable(t, fs, name, ReaderOptions{})
	var trace GetTrace
	if _, _, _, err := r.Get(key, base.MaxSeqNum, &trace); err != nil || len(trace.BlockOffsets) != 1 {
		t.Fatalf("Get: %v, trace %s", err, &trace)
	}
	blockOff := trace.BlockOffsets[0]
	r.Close()

	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	size, _ := f.Size()
	b := make([]byte, size)
	f.ReadAt(b, 0)
	f.Close()
	b[int(blockOff)+at] ^= mask
	f, err = fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	f.Close()
	return blockOff
}
