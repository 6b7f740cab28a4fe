package sstable

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/rangefilter"
	"github.com/shale-db/shale/vfs"
)

// rangeFilterEntries are decimal keys, the multiples of 32 below 32000.
func rangeFilterEntries() []kv {
	var entries []kv
	for i := 0; i < 32000; i += 32 {
		entries = append(entries, kv{key: ikey(fmt.Sprintf("%016d", i), 1, base.KindSet), value: []byte("v")})
	}
	return entries
}

// TestRangeFilterBlock writes a table with a range filter and checks that a
// reader consults it: no false negative for a range holding a key or a
// tombstone's start, a "definitely not" for most empty short ranges, and no
// filter (never a wrong one) for a reader with another user map.
func TestRangeFilterBlock(t *testing.T) {
	fs := vfs.NewMem()
	f, _ := fs.Create("t")
	w := NewWriter(f, WriterOptions{RangeFilter: &rangefilter.Options{}})
	for _, e := range rangeFilterEntries() {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	// A tombstone whose start is no point key.
	w.SetRangeDels(rangedel.Fragment([]rangedel.Tombstone{{Start: []byte("0000000000000100"), End: []byte("0000000000000101"), Seq: 2}}))
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := openTable(t, fs, "t", ReaderOptions{})
	defer r.Close()
	key := func(i int) []byte { return fmt.Appendf(nil, "%016d", i) }
	for _, lo := range []int{0, 64, 31968, 100} {
		if checked, may := r.RangeMayContain(key(lo), key(lo+1)); !checked || !may {
			t.Fatalf("[%d, %d): checked %v, may %v; want a checked maybe", lo, lo+1, checked, may)
		}
	}
	skips := 0
	for p := 0; p < 32000; p += 32 {
		if _, may := r.RangeMayContain(key(p+1), key(p+17)); !may {
			skips++
		}
	}
	if skips < 990 {
		t.Fatalf("%d of 1000 empty ranges ruled out, want nearly all", skips)
	}
	if r.FilterSize() == 0 {
		t.Fatal("range filter not counted in FilterSize")
	}

	other := &rangefilter.UserMap{Name: "other", Map: func([]byte) uint64 { return 0 }}
	r2 := openTable(t, fs, "t", ReaderOptions{RangeFilterMap: other})
	defer r2.Close()
	if checked, _ := r2.RangeMayContain(key(1), key(2)); !checked {
		t.Fatal("a dense-map range filter must be used whatever the user map")
	}
}

// TestRangeFilterUserMapMismatch: a table written with one user map is read
// without its range filter by a reader with another or none.
func TestRangeFilterUserMapMismatch(t *testing.T) {
	fs := vfs.NewMem()
	m := &rangefilter.UserMap{Name: "first-byte", Map: func(k []byte) uint64 {
		if len(k) == 0 {
			return 0
		}
		return uint64(k[0])
	}}
	buildTable(t, fs, "t", rangeFilterEntries(), WriterOptions{RangeFilter: &rangefilter.Options{Map: m}})
	for _, tc := range []struct {
		m       *rangefilter.UserMap
		checked bool
	}{{m, true}, {nil, false}, {&rangefilter.UserMap{Name: "x", Map: m.Map}, false}} {
		r := openTable(t, fs, "t", ReaderOptions{RangeFilterMap: tc.m})
		if checked, may := r.RangeMayContain([]byte("0"), []byte("1")); checked != tc.checked || !may {
			t.Errorf("map %v: checked %v, may %v; want checked %v, maybe", tc.m, checked, may, tc.checked)
		}
		r.Close()
	}
}

// TestRangeFilterCorrupt: damage inside the range-filter block that its
// checksum does not catch (rewritten with a fresh checksum) is refused at
// open as corruption naming the file, not used as a filter.
func TestRangeFilterCorrupt(t *testing.T) {
	fs := vfs.NewMem()
	buildTable(t, fs, "t", rangeFilterEntries(), WriterOptions{RangeFilter: &rangefilter.Options{}})
	rewriteRangeFilter(t, fs, "t", func(b []byte) { b[len(b)-1] ^= 0x80 })
	f, _ := fs.Open("t")
	defer f.Close()
	_, err := Open(f, "t", ReaderOptions{})
	checkCorruption(t, err, "t")
}

// rewriteRangeFilter changes the raw range-filter block of table name with
// damage and gives it a checksum that matches again.
func rewriteRangeFilter(t *testing.T, fs vfs.FS, name string, damage func([]byte)) {
	t.Helper()
	f, _ := fs.Open(name)
	size, _ := f.Size()
	file := make([]byte, size)
	f.ReadAt(file, 0)
	f.Close()
	ft, err := decodeFooter(name, size-footerLen, file[size-footerLen:])
	if err != nil {
		t.Fatal(err)
	}
	meta, err := decodeBlock(name, 0, file[ft.metaindex.offset:ft.metaindex.offset+ft.metaindex.length+blockTrailerLen])
	if err != nil {
		t.Fatal(err)
	}
	var it blockIter
	if err := it.init(name, 0, meta); err != nil {
		t.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if string(it.key) != rangeFilterName {
			continue
		}
		h, _ := decodeHandle(it.val)
		block := file[h.offset : h.offset+h.length+blockTrailerLen]
		damage(block[:h.length])
		sum := uint32(xxhash.Sum64(block[:h.length+1]))
		binary.LittleEndian.PutUint32(block[h.length+1:], sum)
		f, _ := fs.Create(name)
		f.Write(file)
		f.Close()
		return
	}
	t.Fatal("no range-filter block")
}
