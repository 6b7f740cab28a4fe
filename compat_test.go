package shale

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shale-db/shale/rangefilter"
)

// compatDir holds the compatibility corpus: one directory per era of
// shale's on-disk formats, named by the last commit of main before a
// format changed, each holding stores that commit's shale wrote (one per
// option that changes what its files hold, and one left as a killed
// process leaves it) and contents.gz, what every one of them holds. See
// testdata/compat/README.
var compatDir = filepath.Join("testdata", "compat")

// compatRefused names the eras whose stores today's shale refuses, with
// what the refusal must say: their format version.
var compatRefused = map[string]string{
	// WAL and MANIFEST framing version 2 before COMMIT and END were sealed
	// with a salt: its LOG fragment carries the version alone.
	"658d6c9-wal2-unsalted": "version 2 LOG fragment of 4 bytes",
}

// compatOptions returns the options a corpus store was written with: the
// small memtable and tables of the program that wrote it, and the filter
// its name says (a crash store was written with the defaults' filter).
func compatOptions(store string) *Options {
	o := &Options{MemTableSize: 1 << 20, TargetFileSize: 16 << 10, DisableAutomaticCompactions: true}
	switch store {
	case "bloom", "crash":
	case "fuse":
		o.FilterPolicy = UniformFilter(FuseFilter())
	case "ribbon":
		o.FilterPolicy = UniformFilter(RibbonFilter(10))
	case "prefix":
		o.Prefix = FixedPrefix(3)
	case "rangefilter":
		o.RangeFilter = &rangefilter.Options{}
	default:
		return nil
	}
	return o
}

// TestCompatibility opens every store of the corpus with the default
// options and with those it was written with, on a copy (Open rewrites
// files). A store must hold exactly its era's contents (by Get, by
// iteration both ways, and by bounded and prefix scans), pass Check, take
// writes and a compaction, and hold the result after a reopen; or, for an
// era listed in compatRefused, be refused with an error naming its version
// and left as it was.
func TestCompatibility(t *testing.T) {
	eras, err := os.ReadDir(compatDir)
	if err != nil {
		t.Fatal(err)
	}
	stores := 0
	for _, era := range eras {
		if !era.IsDir() {
			continue
		}
		eraDir := filepath.Join(compatDir, era.Name())
		want := readCompatContents(t, filepath.Join(eraDir, "contents.gz"))
		entries, err := os.ReadDir(eraDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			stores++
			written := compatOptions(e.Name())
			if written == nil {
				t.Fatalf("%s: no options known for a store named %s", eraDir, e.Name())
			}
			src := filepath.Join(eraDir, e.Name())
			for _, o := range []struct {
				name string
				opts *Options
			}{{"default", nil}, {"written", written}} {
				t.Run(era.Name()+"/"+e.Name()+"/"+o.name, func(t *testing.T) {
					if refusal, ok := compatRefused[era.Name()]; ok {
						checkCompatRefused(t, src, o.opts, refusal)
						return
					}
					checkCompatStore(t, src, o.opts, want)
				})
			}
		}
	}
	if stores < 10 {
		t.Fatalf("%d stores in %s, want the whole corpus", stores, compatDir)
	}
}

// readCompatContents reads an era's contents.gz: one line per key, the key
// and its value as two Go-quoted strings.
func readCompatContents(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	want := map[string]string{}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		qk, err := strconv.QuotedPrefix(line)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		k, _ := strconv.Unquote(qk)
		v, err := strconv.Unquote(strings.TrimPrefix(line[len(qk):], " "))
		if err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		want[k] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(want) == 0 {
		t.Fatalf("%s holds no keys", path)
	}
	return want
}

// copyCompatStore copies the store src to a new temporary directory.
func copyCompatStore(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkCompatRefused checks that a copy of the store src is refused by
// Open and by Check with a corruption error saying refusal, and that Open
// left its files as they were.
func checkCompatRefused(t *testing.T, src string, opts *Options, refusal string) {
	dir := copyCompatStore(t, src)
	before := compatFiles(t, dir)
	db, err := Open(dir, opts)
	if err == nil {
		db.Close()
		t.Fatalf("Open of a store in a refused format succeeded")
	}
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), refusal) {
		t.Fatalf("Open: %v; want a corruption error saying %q", err, refusal)
	}
	if after := compatFiles(t, dir); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Fatalf("a refused Open changed the store's files")
	}
	if err := Check(dir, opts); err == nil || !strings.Contains(err.Error(), refusal) {
		t.Fatalf("Check: %v; want an error saying %q", err, refusal)
	}
}

// compatFiles returns every file of dir (LOCK aside) by name.
func compatFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// checkCompatStore checks a copy of the store src opened with opts: it
// holds want in tables of two levels or more (and its WAL), passes Check,
// takes writes, a range deletion and a compaction, and holds the result
// after a reopen.
func checkCompatStore(t *testing.T, src string, opts *Options, want map[string]string) {
	dir := copyCompatStore(t, src)
	if err := Check(dir, opts); err != nil {
		t.Fatalf("Check of the store as written: %v", err)
	}
	db := mustOpen(t, dir, opts)
	levels := 0
	for _, tables := range db.Tables() {
		if len(tables) > 0 {
			levels++
		}
	}
	if levels < 2 {
		t.Errorf("the store's tables are in %d levels, want 2 or more", levels)
	}
	checkCompatContents(t, db, want)

	want = maps.Clone(want)
	b := db.NewBatch()
	for i := range 50 {
		k, v := fmt.Sprintf("compat-new-%02d", i), fmt.Sprintf("written today %d", i)
		b.Put([]byte(k), []byte(v))
		want[k] = v
	}
	b.Put([]byte("large"), []byte("overwritten"))
	want["large"] = "overwritten"
	b.Delete([]byte(""))
	delete(want, "")
	b.DeleteRange([]byte("k00100"), []byte("k00200"))
	for k := range want {
		if k >= "k00100" && k < "k00200" {
			delete(want, k)
		}
	}
	if err := db.Apply(b); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	checkCompatContents(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir, opts); err != nil {
		t.Fatalf("Check after today's writes: %v", err)
	}
	db = mustOpen(t, dir, opts)
	checkCompatContents(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// compatScans are the bounded and prefix scans checkCompatContents makes,
// so that the range and prefix filters of the tables are consulted: over
// keys written, over a range deleted, over nothing, and over the binary
// keys.
var compatScans = []IterOptions{
	{LowerBound: []byte("k00100"), UpperBound: []byte("k00110")},
	{LowerBound: []byte("k00550"), UpperBound: []byte("k00650")},
	{LowerBound: []byte("k01890"), UpperBound: []byte("k01960")},
	{LowerBound: []byte("k99"), UpperBound: []byte("k999")},
	{LowerBound: []byte(""), UpperBound: []byte("\x01")},
	{LowerBound: []byte("\xff"), UpperBound: []byte("\xff\xff\x01")},
	{Prefix: []byte("k01")},
	{Prefix: []byte("k05")},
	{Prefix: []byte("\x00")},
}

// checkCompatContents checks that db holds want and nothing more: each key
// by Get, all of them in order by a forward and a backward iteration, and
// those in the bounds of each of compatScans by a scan with those bounds,
// both ways.
func checkCompatContents(t *testing.T, db *DB, want map[string]string) {
	t.Helper()
	keys := slices.Sorted(maps.Keys(want))
	for _, k := range keys {
		v, err := db.Get([]byte(k))
		if err != nil || string(v) != want[k] {
			t.Fatalf("Get(%q) = %.40q, %v; want %.40q", k, v, err, want[k])
		}
	}
	for _, o := range append([]IterOptions{{}}, compatScans...) {
		var entries []string
		for _, k := range keys {
			if strings.HasPrefix(k, string(o.Prefix)) && k >= string(o.LowerBound) &&
				(o.UpperBound == nil || k < string(o.UpperBound)) {
				entries = append(entries, k+"="+want[k])
			}
		}
		forward, backward := scanKeys(t, db, &o, true), scanKeys(t, db, &o, false)
		slices.Reverse(backward)
		for _, got := range [][]string{forward, backward} {
			if !slices.Equal(got, entries) {
				t.Fatalf("scan of [%q, %q) prefix %q (forward, then backward): %d entries, want %d; first difference %s",
					o.LowerBound, o.UpperBound, o.Prefix, len(got), len(entries), firstDifference(got, entries))
			}
		}
	}
}

// firstDifference describes where two sorted lists of entries first differ.
func firstDifference(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d: %.60q, want %.60q", i, got[i], want[i])
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf("extra %.60q", got[len(want)])
	}
	if len(got) < len(want) {
		return fmt.Sprintf("missing %.60q", want[len(got)])
	}
	return "none"
}
