package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/vfs"
)

// randomEntries returns n user keys' worth of sorted entries: each user key
// (structured "key0042" or random bytes, empty and 0xff-heavy keys
// included) has 1-4 versions with distinct seqnums, some deletions.
func randomEntries(rng *rand.Rand, n int) []kv {
	seen := map[string]bool{}
	var entries []kv
	for len(seen) < n {
		var ukey []byte
		switch rng.IntN(4) {
		case 0:
			ukey = make([]byte, rng.IntN(6))
			for i := range ukey {
				ukey[i] = []byte{0, 1, 'a', 0xfe, 0xff}[rng.IntN(5)]
			}
		default:
			ukey = fmt.Appendf(nil, "key%04d", rng.IntN(4*n))
		}
		if seen[string(ukey)] {
			continue
		}
		seen[string(ukey)] = true
		for range 1 + rng.IntN(4) {
			kind := base.KindSet
			var value []byte
			if rng.IntN(5) == 0 {
				kind = base.KindDelete
			} else {
				value = bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(40))
			}
			seq := base.SeqNum(1 + rng.IntN(1000))
			entries = append(entries, kv{base.MakeInternalKey(ukey, seq, kind), value})
		}
	}
	slices.SortFunc(entries, func(a, b kv) int { return base.Compare(a.key, b.key) })
	// Drop repeated (user key, seqnum) pairs: keys must strictly increase.
	return slices.CompactFunc(entries, func(a, b kv) bool {
		return bytes.Equal(a.key.UserKey, b.key.UserKey) && a.key.SeqNum() == b.key.SeqNum()
	})
}

func randomOptions(rng *rand.Rand) WriterOptions {
	opts := WriterOptions{
		BlockSize:       []int{1, 64, 256, 4096}[rng.IntN(4)],
		RestartInterval: []int{1, 2, 16}[rng.IntN(3)],
		Compression:     []Compression{SnappyCompression, NoCompression}[rng.IntN(2)],
	}
	if rng.IntN(3) > 0 {
		opts.FilterPolicy = bloom.NewPolicy(1 + rng.IntN(12))
	}
	return opts
}

// TestRandomAgainstModel builds random tables and checks every Get and
// random iterator walks against a sorted slice of the same entries.
func TestRandomAgainstModel(t *testing.T) {
	for run := range 64 {
		rng := rand.New(rand.NewPCG(uint64(run), 7))
		entries := randomEntries(rng, 1+rng.IntN(300))
		opts := randomOptions(rng)
		ropts := ReaderOptions{FileNum: 1, Filters: []filter.Policy{bloom.NewPolicy(10)}, Stats: &Stats{}}
		if run%2 == 0 {
			ropts.Cache = cache.New(rng.IntN(8 << 10)) // small: blocks get evicted
		}
		name := fmt.Sprintf("run%d: %d entries, %+v, cache %v", run, len(entries), opts, ropts.Cache != nil)
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			fs := vfs.NewMem()
			props := buildTable(t, fs, "t.sst", entries, opts)
			if props.NumEntries != uint64(len(entries)) {
				t.Fatalf("%s: NumEntries %d", name, props.NumEntries)
			}
			r := openTable(t, fs, "t.sst", ropts)
			defer r.Close()
			if got := r.Properties(); got.NumEntries != props.NumEntries || base.Compare(got.Largest, entries[len(entries)-1].key) != 0 {
				t.Fatalf("%s: properties read back differ:\n%s\nwant\n%s", name, got, props)
			}
			checkGets(t, rng, r, entries)
			checkIter(t, rng, r.NewIter(), entries, nil, nil)
			for range 10 {
				lo, hi := randomProbe(rng, entries), randomProbe(rng, entries)
				if rng.IntN(4) == 0 {
					lo = nil
				}
				if rng.IntN(4) == 0 {
					hi = nil
				}
				checkIter(t, rng, r.NewIterBounds(lo, hi), entries, lo, hi)
			}
		})
	}
}

// randomProbe returns a user key of the table or one near it.
func randomProbe(rng *rand.Rand, entries []kv) []byte {
	k := entries[rng.IntN(len(entries))].key.UserKey
	switch rng.IntN(3) {
	case 0:
		return append(bytes.Clone(k), byte(rng.IntN(256)))
	case 1:
		return fmt.Appendf(nil, "key%04d", rng.IntN(2000))
	}
	return bytes.Clone(k)
}

func checkGets(t *testing.T, rng *rand.Rand, r *Reader, entries []kv) {
	t.Helper()
	for range 500 {
		ukey := randomProbe(rng, entries)
		seq := base.SeqNum(rng.IntN(1100))
		if rng.IntN(4) == 0 {
			seq = base.MaxSeqNum
		}
		var want *kv
		held := false
		for i := range entries {
			if bytes.Equal(entries[i].key.UserKey, ukey) {
				held = true
				if want == nil && entries[i].key.Visible(seq) {
					want = &entries[i]
				}
			}
		}
		var trace GetTrace
		v, kind, found, err := r.Get(ukey, seq, &trace)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case found != (want != nil):
			t.Fatalf("Get(%s, %d): found=%v, model %v", base.FormatKey(ukey), seq, found, want != nil)
		case found && (kind != want.key.Kind() || !bytes.Equal(v, want.value)):
			t.Fatalf("Get(%s, %d) = %s %q, want %s %q", base.FormatKey(ukey), seq, kind, v, want.key, want.value)
		case held && trace.FilterChecked && !trace.FilterMayContain:
			t.Fatalf("Get(%s): filter false negative", base.FormatKey(ukey))
		case trace.FalsePositive != (trace.FilterChecked && !held && trace.FilterMayContain):
			t.Fatalf("Get(%s): FalsePositive=%v, held=%v, trace %s", base.FormatKey(ukey), trace.FalsePositive, held, &trace)
		}
	}
}

// checkIter runs random operations on it and on a position in entries, the
// model, restricted to [lo, hi), and compares where they land.
func checkIter(t *testing.T, rng *rand.Rand, it base.InternalIterator, entries []kv, lo, hi []byte) {
	t.Helper()
	defer it.Close()
	inBounds := func(i int) bool {
		if i < 0 || i >= len(entries) {
			return false
		}
		k := entries[i].key.UserKey
		return (lo == nil || bytes.Compare(k, lo) >= 0) && (hi == nil || bytes.Compare(k, hi) < 0)
	}
	// firstGE is the model's SeekGE: the first entry with user key >= k.
	firstGE := func(k []byte) int {
		return sort.Search(len(entries), func(i int) bool { return bytes.Compare(entries[i].key.UserKey, k) >= 0 })
	}
	pos := -1 // -1: invalid
	var ops []string
	for step := range 300 {
		var ok bool
		// Mostly step, sometimes reposition; a full walk now and then.
		switch op := rng.IntN(12); {
		case op == 0 || step == 0:
			ok, pos = it.First(), firstGE(lo)
			ops = append(ops, "first")
		case op == 1:
			ok, pos = it.Last(), len(entries)-1
			if hi != nil {
				pos = firstGE(hi) - 1
			}
			ops = append(ops, "last")
		case op == 2:
			k := randomProbe(rng, entries)
			ok, pos = it.SeekGE(k), firstGE(k)
			if lo != nil && bytes.Compare(k, lo) < 0 {
				pos = firstGE(lo)
			}
			ops = append(ops, "seek-ge "+base.FormatKey(k))
		case op == 3:
			k := randomProbe(rng, entries)
			ok, pos = it.SeekLT(k), firstGE(k)-1
			if hi != nil && bytes.Compare(k, hi) > 0 {
				pos = firstGE(hi) - 1
			}
			ops = append(ops, "seek-lt "+base.FormatKey(k))
		case op < 8:
			ok = it.Next()
			if pos >= 0 {
				pos++
			}
			ops = append(ops, "next")
		default:
			ok = it.Prev()
			if pos >= 0 {
				pos--
			}
			ops = append(ops, "prev")
		}
		if !inBounds(pos) {
			pos = -1
		}
		if it.Error() != nil {
			t.Fatal(it.Error())
		}
		if ok != (pos >= 0) || ok != it.Valid() {
			t.Fatalf("after %v: valid=%v, model position %d (bounds %q %q)", ops, ok, pos, lo, hi)
		}
		if ok && (base.Compare(it.Key(), entries[pos].key) != 0 || !bytes.Equal(it.Value(), entries[pos].value)) {
			t.Fatalf("after %v: at %s:%q, want %s:%q", ops, it.Key(), it.Value(), entries[pos].key, entries[pos].value)
		}
	}
}

// TestConcurrentReads runs Gets and scans on one Reader from several
// goroutines sharing a small cache, for the race detector.
func TestConcurrentReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	entries := randomEntries(rng, 300)
	fs := vfs.NewMem()
	buildTable(t, fs, "t.sst", entries, WriterOptions{BlockSize: 256, FilterPolicy: bloom.NewPolicy(10)})
	stats := &Stats{}
	r := openTable(t, fs, "t.sst", ReaderOptions{FileNum: 1, Cache: cache.New(4 << 10), Stats: stats, Filters: []filter.Policy{bloom.NewPolicy(10)}})
	defer r.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 200 {
				e := entries[rng.IntN(len(entries))]
				if _, _, found, err := r.Get(e.key.UserKey, base.MaxSeqNum, nil); err != nil || !found {
					t.Errorf("Get(%s): found %v, err %v", e.key, found, err)
					return
				}
			}
			it := r.NewIter()
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if err := it.Close(); err != nil || n != len(entries) {
				t.Errorf("scan: %d entries, err %v", n, err)
			}
		})
	}
	wg.Wait()
	if got := stats.BlockReads.Load() + stats.CacheHits.Load(); got < 4*200 {
		t.Errorf("%d block reads and cache hits for 800 Gets", got)
	}
}
