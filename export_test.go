package shale

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale/vfs"
)

func exportKey(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }

// TestExportFilterLiveKeys: the filter holds every live key in the bounds
// and nothing else: present keys all answer "maybe", and the count leaves
// out removed keys and keys outside the bounds. At p = 1e-6 a key that was
// wrongly added would also answer "maybe", which the test checks for.
func TestExportFilterLiveKeys(t *testing.T) {
	const n = 3000
	// The ways of removing keys the test covers. Each removes the keys
	// i, i+1, ..., j-1.
	removals := []struct {
		name   string
		remove func(db *DB, i, j int) error
	}{
		{"Delete", func(db *DB, i, j int) error {
			for ; i < j; i++ {
				if err := db.Delete(exportKey(i)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"DeleteRange", func(db *DB, i, j int) error {
			return db.DeleteRange(exportKey(i), exportKey(j))
		}},
	}
	for _, r := range removals {
		t.Run(r.name, func(t *testing.T) {
			db := mustOpen(t, t.TempDir(), &Options{NoSync: true})
			defer db.Close()
			live := map[int]bool{}
			for i := range n {
				if err := db.Put(exportKey(i), []byte("v")); err != nil {
					t.Fatal(err)
				}
				live[i] = true
				if i == n/2 { // half of the keys in a table, half in the memtable
					if err := db.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Remove 7 keys of every 100, in the table and in the memtable.
			for i := 10; i < n; i += 100 {
				if err := r.remove(db, i, i+7); err != nil {
					t.Fatal(err)
				}
				for j := i; j < i+7; j++ {
					delete(live, j)
				}
			}
			for _, b := range []struct{ lower, upper []byte }{
				{nil, nil},
				{exportKey(500), nil},
				{nil, exportKey(2222)},
				{exportKey(1005), exportKey(1717)},
				{exportKey(1011), exportKey(1017)}, // only removed keys
				{exportKey(2000), exportKey(1000)}, // empty
			} {
				f, count, err := db.ExportFilter(b.lower, b.upper, 1e-6)
				if err != nil {
					t.Fatal(err)
				}
				want := 0
				for i := range n + 10 {
					k := exportKey(i)
					in := live[i] && (b.lower == nil || string(k) >= string(b.lower)) &&
						(b.upper == nil || string(k) < string(b.upper))
					if in {
						want++
					}
					if f.MayContain(k) != in {
						t.Fatalf("[%s, %s): key %s: MayContain %v, want %v", b.lower, b.upper, k, !in, in)
					}
				}
				if count != want {
					t.Fatalf("[%s, %s): %d keys, want %d", b.lower, b.upper, count, want)
				}
			}
		})
	}
}

// TestExportFilterRate: on keys never added, the measured false-positive
// rate is within 25% of the rate asked for. The filter is sized so that its
// expected rate is p; with 100,000 probes the standard deviation of the
// measurement is at most 3.2% of p at these rates, so the tolerance is more
// than 7 of them, and the keys and hash are fixed, so the result is too.
func TestExportFilterRate(t *testing.T) {
	const n, probes = 10000, 100000
	db := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer db.Close()
	for i := range n {
		if err := db.Put(exportKey(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []float64{0.1, 0.01} {
		f, count, err := db.ExportFilter(nil, nil, p)
		if err != nil {
			t.Fatal(err)
		}
		if count != n {
			t.Fatalf("p=%v: %d keys, want %d", p, count, n)
		}
		fp := 0
		for i := range probes {
			if f.MayContain(fmt.Appendf(nil, "absent%07d", i)) {
				fp++
			}
		}
		rate := float64(fp) / probes
		t.Logf("p=%v: measured %.4f%% at %.2f bits per key, k=%d", p, 100*rate, f.BitsPerKey(), f.K())
		if math.Abs(rate-p) > 0.25*p {
			t.Errorf("p=%v: measured rate %.5f, want within 25%% of p", p, rate)
		}
	}
}

// TestExportFilterSnapshot: an export sees the store as it was when it
// began. A writer adds keys w0, w1, ... in order while exports run; each
// export must hold exactly the first j of them for some j, and count them:
// a filter whose count and contents came from different moments would hold
// keys past the count. At p = 1e-9 no key past j answers "maybe" by chance.
func TestExportFilterSnapshot(t *testing.T) {
	const base = 5000
	db := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer db.Close()
	for i := range base {
		if err := db.Put(exportKey(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	writeKey := func(i int) []byte { return fmt.Appendf(nil, "w%08d", i) }
	// begun counts the writes begun, written those acknowledged: a write
	// is visible from some moment between the two.
	var begun, written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			begun.Store(int64(i + 1))
			if err := db.Put(writeKey(i), nil); err != nil {
				t.Error(err)
				return
			}
			written.Store(int64(i + 1))
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	overlapped := 0 // exports during which writes were acknowledged
	for try := 0; try < 50 && overlapped < 3; try++ {
		before := int(written.Load())
		f, count, err := db.ExportFilter(nil, nil, 1e-9)
		if err != nil {
			t.Fatal(err)
		}
		after := int(begun.Load())
		j := count - base
		if j < before || j > after {
			t.Fatalf("export counted %d written keys; %d were written before it began and %d begun when it ended", j, before, after)
		}
		for i := range after + 100 {
			if f.MayContain(writeKey(i)) != (i < j) {
				t.Fatalf("export counted the first %d written keys, and MayContain(%s) is %v", j, writeKey(i), i >= j)
			}
		}
		if after > before {
			overlapped++
		}
	}
	if overlapped == 0 {
		t.Fatal("no export ran while writes were acknowledged: the test checked nothing")
	}
}

// TestExportFilterErrors: a rate outside (0, 1), a closed store and damaged
// data are errors, not filters.
func TestExportFilterErrors(t *testing.T) {
	dir := t.TempDir()
	db := mustOpen(t, dir, &Options{BlockCacheSize: -1})
	for i := range 500 {
		if err := db.Put(exportKey(i), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []float64{0, 1, -0.5, 1.5, math.NaN(), math.Inf(1)} {
		if f, _, err := db.ExportFilter(nil, nil, p); err == nil || f != nil {
			t.Errorf("p=%v: got a filter and error %v, want only an error", p, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.ExportFilter(nil, nil, 0.01); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}

	table := onlyFile(t, dir, "*.sst")
	flipByte(t, table, 10)
	db = mustOpen(t, dir, &Options{BlockCacheSize: -1})
	defer db.Close()
	if _, _, err := db.ExportFilter(nil, nil, 0.01); !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), filepath.Base(table)) {
		t.Fatalf("damaged table: %v, want ErrCorruption naming %s", err, filepath.Base(table))
	}
}

// stopAfter is a context that reports context.Canceled from the n+1st call
// of Err on, so that a test stops a loop at a known step.
type stopAfter struct {
	context.Context
	n int
}

func (c *stopAfter) Err() error {
	if c.n == 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

// TestExportFilterContext: ExportFilterContext stops, between keys, once
// its context is done, in either pass, and returns the context's error and
// no filter; with a context never done it exports what ExportFilter does.
func TestExportFilterContext(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	for i := range 100 {
		if err := db.Put(exportKey(i), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{0, 50, 150} { // before the first key, in the count, in the adding pass
		f, keys, err := db.ExportFilterContext(&stopAfter{context.Background(), n}, nil, nil, 0.01)
		if !errors.Is(err, context.Canceled) || f != nil || keys != 0 {
			t.Errorf("stopped after %d keys: %v, %d keys, filter %v; want context.Canceled and nothing else", n, err, keys, f != nil)
		}
	}
	f, keys, err := db.ExportFilterContext(context.Background(), nil, nil, 0.01)
	if err != nil || keys != 100 || !f.MayContain(exportKey(7)) {
		t.Fatalf("never stopped: %v, %d keys", err, keys)
	}
}
