package shale

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// prefixKey is a key of the prefix tests: group g's prefix is "pGG/", the
// first 4 bytes, so FixedPrefix(4) gives it.
func prefixKey(g, i int) []byte { return fmt.Appendf(nil, "p%02d/%03d", g, i) }

// reader is what DB and Snapshot share: NewIter.
type reader interface {
	NewIter(opts *IterOptions) *Iterator
}

// scanKeys returns the keys and values an iterator over opts yields, going
// forward or backward.
func scanKeys(t *testing.T, r reader, opts *IterOptions, forward bool) []string {
	t.Helper()
	it := r.NewIter(opts)
	var got []string
	ok, move := it.First, it.Next
	if !forward {
		ok, move = it.Last, it.Prev
	}
	for valid := ok(); valid; valid = move() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return got
}

// checkPrefixScan checks that a scan of prefix within [lower, upper) yields,
// in both directions, what the plain scan of [lower, upper) yields for the
// keys that start with prefix.
func checkPrefixScan(t *testing.T, r reader, prefix, lower, upper []byte) {
	t.Helper()
	for _, forward := range []bool{true, false} {
		var want []string
		for _, kv := range scanKeys(t, r, &IterOptions{LowerBound: lower, UpperBound: upper}, forward) {
			if bytes.HasPrefix([]byte(kv), prefix) {
				want = append(want, kv)
			}
		}
		got := scanKeys(t, r, &IterOptions{LowerBound: lower, UpperBound: upper, Prefix: prefix}, forward)
		if !slices.Equal(got, want) {
			t.Fatalf("prefix %q in [%q, %q), forward %v:\n got %q\nwant %q", prefix, lower, upper, forward, got, want)
		}
	}
}

// TestPrefixScanRandom runs random writes, range deletions, flushes and
// compactions over keys in prefix groups, and checks that prefix scans (of
// whole groups, which the filters serve, and of shorter and longer
// prefixes, which they do not) return exactly what plain bounded scans
// filtered by the prefix return: in both directions, with and without
// bounds, at the latest state and at a snapshot.
func TestPrefixScanRandom(t *testing.T) {
	for seed := uint64(1); seed <= 2; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runPrefixScanRandom(t, seed) })
	}
}

func runPrefixScanRandom(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	db, err := Open("db", &Options{
		FS: vfs.NewMem(), MemTableSize: 4 << 10, BlockSize: 256, BlockCacheSize: -1,
		L0CompactionThreshold: 3, LBaseMaxBytes: 16 << 10, TargetFileSize: 4 << 10,
		Prefix: FixedPrefix(4),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Groups 0-19 are written, 20-24 never; most memtables hold a few
	// groups only, so most tables lack most prefixes.
	key := func() []byte {
		switch rng.IntN(50) {
		case 0:
			return []byte("p0") // shorter than the prefix: none
		case 1:
			return fmt.Appendf(nil, "p%02d", rng.IntN(20))
		}
		return prefixKey(rng.IntN(20), rng.IntN(100))
	}
	var snap *Snapshot
	defer func() {
		if snap != nil {
			snap.Close()
		}
	}()
	check := func(r reader) {
		g := rng.IntN(25)
		var lower, upper []byte
		if rng.IntN(3) == 0 {
			lower = prefixKey(g, rng.IntN(100))
		}
		if rng.IntN(3) == 0 {
			upper = prefixKey(g, rng.IntN(100))
		}
		prefixes := [][]byte{
			prefixKey(g, 0)[:4],                         // a group: filters consulted
			prefixKey(g, 0)[:3],                         // shorter: Length is 0, not 3
			prefixKey(g, rng.IntN(100))[:5+rng.IntN(3)], // longer: Length is 4
		}
		for _, p := range prefixes {
			checkPrefixScan(t, r, p, lower, upper)
		}
	}
	group := rng.IntN(20)
	for i := range 2000 {
		if rng.IntN(60) == 0 {
			group = rng.IntN(20) // writes cluster in a few groups at a time
		}
		switch op := rng.IntN(100); {
		case op < 55:
			k := key()
			if rng.IntN(3) > 0 {
				k = prefixKey(group, rng.IntN(100))
			}
			if err := db.Put(k, fmt.Appendf(nil, "v%d", i)); err != nil {
				t.Fatal(err)
			}
		case op < 70:
			if err := db.Delete(key()); err != nil {
				t.Fatal(err)
			}
		case op < 73:
			// Within a group, or across groups.
			start := key()
			end := append(bytes.Clone(start), '~')
			if rng.IntN(2) == 0 {
				end = prefixKey(rng.IntN(22), 0)
			}
			if bytes.Compare(start, end) > 0 {
				start, end = end, start // a reversed range is an error
			}
			if err := db.DeleteRange(start, end); err != nil {
				t.Fatal(err)
			}
		case op < 75:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		case op < 76:
			if snap != nil {
				check(snap)
				snap.Close()
			}
			snap = db.NewSnapshot()
		case op < 77 && snap != nil:
			check(snap)
		case op < 84:
			check(db)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	for g := range 25 {
		checkPrefixScan(t, db, prefixKey(g, 0)[:4], nil, nil)
		if snap != nil {
			checkPrefixScan(t, snap, prefixKey(g, 0)[:4], nil, nil)
		}
	}
	m := db.Metrics()
	if m.PrefixFilterChecks == 0 || m.PrefixFilterSkips == 0 {
		t.Fatalf("prefix filters: %d checks, %d skips; the test exercised none", m.PrefixFilterChecks, m.PrefixFilterSkips)
	}
}

// TestPrefixFilterKeepsTombstones checks that a table the prefix filter
// rules out still applies its range tombstones: the newer table holds
// keys of group 5 only and a tombstone over groups 0 and 1, which deletes a
// key of group 1 in an older table.
func TestPrefixFilterKeepsTombstones(t *testing.T) {
	for _, level := range []string{"L0", "levels"} {
		t.Run(level, func(t *testing.T) {
			db, err := Open("db", &Options{FS: vfs.NewMem(), Prefix: FixedPrefix(4), DisableAutomaticCompactions: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(db.Put(prefixKey(1, 1), []byte("old")))
			must(db.Flush())
			if level == "levels" {
				must(db.Compact())
			}
			must(db.Put(prefixKey(5, 1), []byte("v")))
			must(db.DeleteRange(prefixKey(0, 0), prefixKey(2, 0)))
			must(db.Flush())
			for _, forward := range []bool{true, false} {
				if got := scanKeys(t, db, &IterOptions{Prefix: []byte("p01/")}, forward); len(got) != 0 {
					t.Fatalf("forward %v: a deleted key came back: %q", forward, got)
				}
			}
			if m := db.Metrics(); m.PrefixFilterSkips == 0 {
				t.Fatalf("the newer table was not skipped (%d checks): the test proves nothing", m.PrefixFilterChecks)
			}
		})
	}
}

// TestPrefixExtractorChange writes tables with one extractor and reads them
// with others (a shorter fixed prefix, a custom one, none): a table whose
// extractor is not the store's is read without its prefix filter, so no
// scan misses a key.
func TestPrefixExtractorChange(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, MemTableSize: 4 << 10, BlockSize: 256, Prefix: FixedPrefix(4), DisableAutomaticCompactions: true}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	// Each flush holds two groups, so that every table lacks most prefixes.
	for g := 0; g < 20; g += 2 {
		for i := range 30 {
			for _, k := range [][]byte{prefixKey(g, i), prefixKey(g+1, i)} {
				if err := db.Put(k, k); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if g == 10 {
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// "p0" + digit is a prefix of 10 groups: an extractor of 3 bytes gives
	// it, but the tables hold 4-byte prefixes only.
	custom := &PrefixExtractor{Name: "custom", Length: func(key []byte) int { return min(len(key), 3) }}
	for _, ext := range []*PrefixExtractor{FixedPrefix(4), FixedPrefix(3), custom, nil} {
		name := "none"
		if ext != nil {
			name = ext.Name
		}
		t.Run(name, func(t *testing.T) {
			o := *opts
			o.Prefix = ext
			db, err := Open("db", &o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for g := range 22 {
				for _, p := range [][]byte{prefixKey(g, 0)[:3], prefixKey(g, 0)[:4], prefixKey(g, 7)[:6]} {
					want := 0
					for h := range 20 {
						for i := range 30 {
							if bytes.HasPrefix(prefixKey(h, i), p) {
								want++
							}
						}
					}
					if got := len(scanKeys(t, db, &IterOptions{Prefix: p}, true)); got != want {
						t.Fatalf("prefix %q: %d keys, want %d", p, got, want)
					}
				}
			}
			checks := db.Metrics().PrefixFilterChecks
			if ext != nil && ext.Name == "fixed:4" {
				if checks == 0 {
					t.Fatal("the tables' own extractor consulted no filter")
				}
			} else if checks != 0 {
				t.Fatalf("%d prefix filter checks of tables written with another extractor", checks)
			}
		})
	}
}

// TestPrefixExtractorOptions checks FixedPrefix and the validation of
// Options.Prefix.
func TestPrefixExtractorOptions(t *testing.T) {
	p := FixedPrefix(3)
	if p.Name != "fixed:3" {
		t.Fatalf("name %q", p.Name)
	}
	for key, want := range map[string]int{"": 0, "ab": 0, "abc": 3, "abcdef": 3} {
		if got := p.Length([]byte(key)); got != want {
			t.Errorf("Length(%q) = %d, want %d", key, got, want)
		}
	}
	if FixedPrefix(0) != nil {
		t.Error("FixedPrefix(0) is an extractor")
	}
	for _, bad := range []*PrefixExtractor{{Length: p.Length}, {Name: "x"}} {
		if db, err := Open("db", &Options{FS: vfs.NewMem(), Prefix: bad}); err == nil {
			db.Close()
			t.Errorf("Open accepted Prefix %+v", *bad)
		}
	}
	for _, tc := range []struct{ lower, upper, prefix, wantLower, wantUpper string }{
		{"", "", "ab", "ab", "ac"},
		{"aa", "zz", "ab", "ab", "ac"},
		{"abc", "abd", "ab", "abc", "abd"},
		{"", "", "a\xff", "a\xff", "b"},
	} {
		var lower, upper []byte
		if tc.lower != "" {
			lower, upper = []byte(tc.lower), []byte(tc.upper)
		}
		l, u := prefixBounds(lower, upper, []byte(tc.prefix))
		if string(l) != tc.wantLower || string(u) != tc.wantUpper {
			t.Errorf("prefixBounds(%q, %q, %q) = %q, %q", tc.lower, tc.upper, tc.prefix, l, u)
		}
	}
	if l, u := prefixBounds(nil, nil, []byte("\xff\xff")); string(l) != "\xff\xff" || u != nil {
		t.Errorf("prefix of 0xff bytes: [%q, %q), want no upper bound", l, u)
	}
}
