package shale

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestCompressionByLevel: each new table is compressed as the policy says
// for the level it is written to, a flush's at L0 and a compaction's at
// L6; a table records its compression; a store written with one policy
// reads with another, whose compression its next tables get; and a policy
// naming an unknown compression is refused at Open.
func TestCompressionByLevel(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, Compression: PerLevelCompression{0: NoCompression, 6: ZstdCompression}}
	db := mustOpen(t, "db", opts)
	defer func() { db.Close() }()
	value := func(i int) []byte {
		return fmt.Appendf(nil, `{"id": %d, "name": "user%d", "tags": ["red", "green"], "city": "Lisbon"}`, i, i%97)
	}
	put := func(from, to int) {
		for i := from; i < to; i++ {
			if err := db.Put(fmt.Appendf(nil, "key%06d", i), value(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// tables lists level:compression of each table, and checks that each
	// table's data is stored as its compression says: at least its raw
	// size when uncompressed, under half of it when compressed.
	tables := func() string {
		t.Helper()
		var got []string
		rs, _ := db.loadReadState(readLatest)
		defer rs.unref()
		infos := db.Tables()
		for level, files := range rs.v.Levels {
			for i, f := range files {
				p := rs.v.tables[f.FileNum].reader.Properties()
				if c := infos[level][i].Compression; c != p.Compression {
					t.Fatalf("TableInfo says %q, the properties %q", c, p.Compression)
				}
				raw := p.RawKeySize + p.RawValueSize
				if compressed := p.DataSize < raw/2; compressed != (p.Compression != "none") {
					t.Fatalf("L%d table %s: %d bytes of data for %d raw", level, p.Compression, p.DataSize, raw)
				}
				got = append(got, fmt.Sprintf("L%d:%s", level, p.Compression))
			}
		}
		return strings.Join(got, " ")
	}
	check := func(n int) {
		t.Helper()
		for i := range n {
			if v, err := db.Get(fmt.Appendf(nil, "key%06d", i)); err != nil || string(v) != string(value(i)) {
				t.Fatalf("Get(key%06d) = %q, %v", i, v, err)
			}
		}
	}

	put(0, 2000)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := tables(); got != "L0:none" {
		t.Fatalf("after a flush: %s", got)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := tables(); got != "L6:zstd" {
		t.Fatalf("after Compact: %s", got)
	}
	check(2000)

	// One Compression for every level; the zstd table reads on.
	db.Close()
	db = mustOpen(t, "db", &Options{FS: fs, Compression: SnappyCompression})
	check(2000)
	put(2000, 3000)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := tables(); got != "L0:snappy L6:zstd" {
		t.Fatalf("after a flush with snappy: %s", got)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := tables(); got != "L6:snappy" {
		t.Fatalf("after Compact with snappy: %s", got)
	}
	check(3000)

	for _, bad := range []CompressionPolicy{Compression(9), PerLevelCompression{3: -1}} {
		if _, err := Open("bad", &Options{FS: fs, Compression: bad}); err == nil || !strings.Contains(err.Error(), "unknown Compression(") {
			t.Fatalf("Open with Compression %v: %v, want an error naming the unknown compression", bad, err)
		}
	}
}
