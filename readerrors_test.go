package shale

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestReadErrorsNeverAnswer fails reads and opens of the store's table
// files at random (one table file open at a time, so reads reopen them;
// no block cache; a row cache) while Gets, snapshot Gets and scans both
// ways run against a model: each read must give the model's answer or an
// error, never another value, a deleted or stale one, or "not found" for
// a live key, and a scan must stop at the first error with the error set.
// It runs with tables read with ReadAt and through mappings (the default),
// where an injected read fails a view, and an injected open fails a
// mapping too (the file is then read with ReadAt).
func TestReadErrorsNeverAnswer(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		t.Run(fmt.Sprintf("mmap=%v", mapped), func(t *testing.T) { testReadErrorsNeverAnswer(t, mapped) })
	}
}

func testReadErrorsNeverAnswer(t *testing.T, mapped bool) {
	efs := vfs.NewErrorFS(vfs.NewMem())
	db := mustOpen(t, "db", &Options{FS: efs, NoSync: true, MaxOpenFiles: 1, BlockCacheSize: -1, RowCacheSize: 64 << 10,
		BlockSize: 64, TargetFileSize: 2 << 10, DisableAutomaticCompactions: true, DisableMmapReads: !mapped})
	defer db.Close()
	rng := rand.New(rand.NewPCG(5, 5))
	model := map[string]string{}
	key := func(i int) string { return fmt.Sprintf("k%03d", i) }
	put := func(i int, v string) {
		if err := db.Put([]byte(key(i)), []byte(v)); err != nil {
			t.Fatal(err)
		}
		model[key(i)] = v
	}
	// Versions of the keys in L6, in two L0 tables (with deletions and a
	// range deletion) and in the memtable.
	for i := range 300 {
		put(i, fmt.Sprintf("old%d", i))
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i += 3 {
		put(i, fmt.Sprintf("new%d", i))
	}
	for i := 1; i < 300; i += 7 {
		if err := db.Delete([]byte(key(i))); err != nil {
			t.Fatal(err)
		}
		delete(model, key(i))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte(key(100)), []byte(key(140))); err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 140; i++ {
		delete(model, key(i))
	}
	put(120, "after the range deletion")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i += 11 {
		put(i, fmt.Sprintf("mem%d", i))
	}

	var mu sync.Mutex // guards rng for the injector
	injected := 0
	efs.SetInjector(func(op vfs.Op, path string) error {
		if (op != vfs.OpRead && op != vfs.OpOpen) || !strings.HasSuffix(path, ".sst") {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if rng.IntN(10) == 0 {
			injected++
			return vfs.ErrInjected
		}
		return nil
	})
	defer efs.SetInjector(nil)

	var readErrors, answers int
	failed := func(err error) bool {
		if err != nil && !errors.Is(err, ErrNotFound) {
			readErrors++
			return true
		}
		answers++
		return false
	}
	checkGet := func(what string, k string, got []byte, err error, m map[string]string) {
		t.Helper()
		want, ok := m[k]
		switch {
		case failed(err):
			if !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("%s(%s): %v, want the injected error", what, k, err)
			}
		case !ok && err == nil:
			t.Fatalf("%s(%s) = %q, want not found", what, k, got)
		case ok && (err != nil || string(got) != want):
			t.Fatalf("%s(%s) = %q, %v; want %q", what, k, got, err, want)
		}
	}
	// scan reads [lo, hi) one way and checks that it returns a prefix of
	// the model's entries, all of them unless it stopped with an error.
	scan := func(it *Iterator, m map[string]string, lo, hi string, forward bool) {
		t.Helper()
		var want []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k >= lo && k < hi {
				want = append(want, k+"="+m[k])
			}
		}
		if !forward {
			slices.Reverse(want)
		}
		var got []string
		first, next := it.First, it.Next
		if !forward {
			first, next = it.Last, it.Prev
		}
		for ok := first(); ok; ok = next() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
		}
		err := it.Error()
		failed(err)
		if err != nil && !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("scan [%s, %s): %v, want the injected error", lo, hi, err)
		}
		if len(got) > len(want) || !slices.Equal(got, want[:len(got)]) || err == nil && len(got) != len(want) {
			t.Fatalf("scan [%s, %s) forward=%v, error %v:\n got %v\nwant %v", lo, hi, forward, err, got, want)
		}
		if cerr := it.Close(); !errors.Is(cerr, err) {
			t.Fatalf("scan Close: %v, want %v", cerr, err)
		}
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	snapModel := maps.Clone(model)
	for round := range 2000 {
		k := key(rng.IntN(310))
		switch round % 5 {
		case 0, 1:
			got, err := db.Get([]byte(k))
			checkGet("Get", k, got, err, model)
		case 2:
			got, err := snap.Get([]byte(k))
			checkGet("snapshot Get", k, got, err, snapModel)
		case 3:
			lo, hi := key(rng.IntN(310)), key(rng.IntN(310))
			if lo > hi {
				lo, hi = hi, lo
			}
			scan(db.NewIter(&IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)}), model, lo, hi, round%2 == 0)
		case 4:
			i := rng.IntN(300)
			put(i, fmt.Sprintf("round%d", round))
		}
	}
	if readErrors == 0 || answers == 0 {
		t.Fatalf("%d errors injected: %d reads failed, %d answered; want some of each", injected, readErrors, answers)
	}
	efs.SetInjector(nil)
	scan(db.NewIter(nil), model, "", "\xff", true)
}
