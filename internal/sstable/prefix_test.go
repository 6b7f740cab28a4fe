package sstable

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/fuse"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/ribbon"
	"github.com/shale-db/shale/vfs"
)

// groupEntries are the keys "pGGG/III" of the even groups 0 to n-2, 20
// each: their prefixes are their first 5 bytes.
func groupEntries(n int) []kv {
	var e []kv
	for g := 0; g < n; g += 2 {
		for i := range 20 {
			e = append(e, kv{base.MakeInternalKey(fmt.Appendf(nil, "p%03d/%03d", g, i), base.SeqNum(1+g*20+i), base.KindSet), fmt.Appendf(nil, "v%d", i)})
		}
	}
	return e
}

func fixed5(key []byte) int {
	if len(key) < 5 {
		return 0
	}
	return 5
}

// TestPrefixFilter writes tables with each filter policy and a prefix
// extractor, and checks that the filter holds every key and every prefix,
// rules out most absent prefixes, is sized for keys plus prefixes, and is
// consulted for prefixes only under the extractor's own name.
func TestPrefixFilter(t *testing.T) {
	policies := []filter.Policy{bloom.NewPolicy(10), ribbon.NewPolicy(10), fuse.NewPolicy()}
	entries := groupEntries(400) // 200 prefixes, 4000 keys
	for _, p := range policies {
		t.Run(p.Name(), func(t *testing.T) {
			fs := vfs.NewMem()
			props := buildTable(t, fs, "t", entries, WriterOptions{FilterPolicy: p, PrefixLength: fixed5, PrefixName: "fixed:5"})
			if props.PrefixExtractor != "fixed:5" || props.NumPrefixes != 200 || props.NumUserKeys != 4000 {
				t.Fatalf("properties: extractor %q, %d prefixes, %d keys", props.PrefixExtractor, props.NumPrefixes, props.NumUserKeys)
			}
			r := openTable(t, fs, "t", ReaderOptions{Filters: policies})
			defer r.Close()
			if got := r.Properties(); got.PrefixExtractor != "fixed:5" || got.NumPrefixes != 200 {
				t.Fatalf("read back: extractor %q, %d prefixes", got.PrefixExtractor, got.NumPrefixes)
			}
			for _, e := range entries {
				if !r.filter.MayContain(filter.Hash(e.key.UserKey)) {
					t.Fatalf("filter lost key %s", e.key)
				}
				if checked, may := r.MayContainPrefix("fixed:5", e.key.UserKey[:5]); !checked || !may {
					t.Fatalf("prefix of %s: checked %v, may %v", e.key, checked, may)
				}
			}
			skips := 0
			for g := 1; g < 400; g += 2 {
				if _, may := r.MayContainPrefix("fixed:5", fmt.Appendf(nil, "p%03d/", g)); !may {
					skips++
				}
			}
			if skips < 190 {
				t.Fatalf("%d of 200 absent prefixes ruled out", skips)
			}
			if checked, may := r.MayContainPrefix("fixed:4", []byte("p001/")); checked || !may {
				t.Fatalf("another extractor's prefix: checked %v, may %v", checked, may)
			}
			// The filter's size follows what it holds, keys and prefixes:
			// the bits per entry are the policy's.
			plain := buildTable(t, fs, "plain", entries, WriterOptions{FilterPolicy: p})
			if per, perPlain := props.FilterBitsPerKey(), plain.FilterBitsPerKey(); per < perPlain*0.95 || per > perPlain*1.05 {
				t.Fatalf("%.2f bits per entry with prefixes, %.2f without", per, perPlain)
			}
		})
	}
}

// TestPrefixFilterPointRate checks that prefixes do not raise the point
// lookups' false-positive rate: the filter is sized for them, and a prefix
// hash is not its key's hash.
func TestPrefixFilterPointRate(t *testing.T) {
	entries := groupEntries(1000) // 500 prefixes, 10,000 keys
	fs := vfs.NewMem()
	buildTable(t, fs, "t", entries, WriterOptions{FilterPolicy: bloom.NewPolicy(10), PrefixLength: fixed5, PrefixName: "fixed:5"})
	r := openTable(t, fs, "t", ReaderOptions{Filters: []filter.Policy{bloom.NewPolicy(10)}})
	defer r.Close()
	fp := 0
	const n = 10000
	for i := range n {
		// Absent keys of present prefixes, and the prefixes themselves
		// as keys.
		k := fmt.Appendf(nil, "p%03d/%03dx", 2*(i%500), i%20)
		if i%2 == 1 {
			k = k[:5]
		}
		if r.filter.MayContain(filter.Hash(k)) {
			fp++
		}
	}
	// A 10-bit Bloom filter: about 1%; 1.5% is far outside its spread.
	if rate := float64(fp) / n; rate > 0.015 {
		t.Fatalf("point false-positive rate %.4f with prefixes in the filter", rate)
	}
}

// TestPrefixBeforePrefixFilters reads a table written by shale before
// prefix filters (fixtures/before-prefix.sst: groupEntries(8), Bloom 10
// bits per key, 256-byte blocks): today's reader reads it whole and never
// consults its filter for a prefix, and today's writer, given no
// extractor and its index written at restart interval 1 as it was then,
// writes the same bytes, so binaries before prefix filters read the tables
// of a store without one as they always did. (Index blocks at other
// intervals read with those binaries too: TestIndexRestartInterval.)
func TestPrefixBeforePrefixFilters(t *testing.T) {
	old, err := os.ReadFile("fixtures/before-prefix.sst")
	if err != nil {
		t.Fatal(err)
	}
	fs := vfs.NewMem()
	buildTableIndexInterval(t, fs, "new", groupEntries(8), WriterOptions{FilterPolicy: bloom.NewPolicy(10), BlockSize: 256}, 1)
	f, err := fs.Open("new")
	if err != nil {
		t.Fatal(err)
	}
	now := make([]byte, len(old))
	if n, _ := f.Size(); n != int64(len(old)) {
		t.Fatalf("today's table: %d bytes, the fixture %d", n, len(old))
	}
	if _, err := f.ReadAt(now, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !bytes.Equal(now, old) {
		t.Fatal("today's writer without an extractor does not write the bytes it wrote before prefix filters")
	}

	writeFixture(t, fs, "old", old)
	r := openTable(t, fs, "old", ReaderOptions{Filters: []filter.Policy{bloom.NewPolicy(10)}})
	defer r.Close()
	if p := r.Properties(); p.PrefixExtractor != "" || p.NumPrefixes != 0 {
		t.Fatalf("old table read with extractor %q, %d prefixes", p.PrefixExtractor, p.NumPrefixes)
	}
	for _, name := range []string{"fixed:5", ""} {
		if checked, may := r.MayContainPrefix(name, []byte("p001/")); checked || !may {
			t.Fatalf("extractor %q on an old table: checked %v, may %v", name, checked, may)
		}
	}
	for _, e := range groupEntries(8) {
		v, kind, found, err := r.Get(e.key.UserKey, base.MaxSeqNum, nil)
		if err != nil || !found || kind != base.KindSet || !bytes.Equal(v, e.value) {
			t.Fatalf("%s: %q, %v, found %v, %v", e.key, v, kind, found, err)
		}
	}
}

func writeFixture(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
