package shale

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// TestConcurrentReadModel checks every read against a model while a
// writer, flushes and compactions run: Gets, snapshots kept for many
// reads, and bounded or prefix iterators walked both ways, on three
// goroutines, and one iterator kept open across the whole run. One or two
// table files are open at a time and the caches are tiny, so descriptors,
// blocks and rows come and go under the reads, and memtables are freed
// and their slabs reused (manual.CheckUseAfterFree makes a read of freed
// memory fault). The writer changes the store and the model under a lock
// that readers take to read the model with the store as it is; snapshots
// and iterators are then read outside it, while the store moves on.
func TestConcurrentReadModel(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		ops  int
	}{
		{"one-file-tiny-caches", Options{MaxOpenFiles: 1, BlockCacheSize: 1 << 10, RowCacheSize: 2 << 10}, 2000},
		{"two-files-no-block-cache", Options{MaxOpenFiles: 2, BlockCacheSize: -1, RowCacheSize: 64 << 10, Prefix: FixedPrefix(2)}, 2000},
		// Every size at its least: a memtable and a table per write or so,
		// one entry per block, caches that hold nothing.
		{"least-sizes", Options{MemTableSize: 1, BlockSize: 1, MaxImmutableMemTables: 1, MaxOpenFiles: 1,
			BlockCacheSize: 1, RowCacheSize: 1, TargetFileSize: 1, LBaseMaxBytes: 1, L0CompactionThreshold: 1}, 300},
	} {
		ops := c.ops
		if raceEnabled {
			ops /= 2 // the race detector's runtime is 5-10 times slower
		}
		t.Run(c.name, func(t *testing.T) { runConcurrentReadModel(t, c.opts, ops) })
	}
}

func runConcurrentReadModel(t *testing.T, o Options, ops int) {
	o.FS = vfs.NewMem()
	o.NoSync = true
	setIfZero(&o.MemTableSize, 4<<10)
	setIfZero(&o.BlockSize, 128)
	setIfZero(&o.L0CompactionThreshold, 2)
	if o.LBaseMaxBytes == 0 {
		o.LBaseMaxBytes = 16 << 10
	}
	if o.TargetFileSize == 0 {
		o.TargetFileSize = 4 << 10
	}
	db := mustOpen(t, "db", &o)
	defer db.Close()

	// keys: empty, prefixes of each other, 0x00 and 0xff bytes at the
	// ends, long keys sharing 16-byte prefixes, and plain numbered keys.
	var keys []string
	keys = append(keys, "", "\x00", "a", "a\x00", "a\x00\x00", "a\xff", "ab", "\xff", "\xff\xff")
	long := strings.Repeat("p", 16)
	for i := range 10 {
		keys = append(keys, long+fmt.Sprint(i), long+strings.Repeat("q", 200)+fmt.Sprint(i))
	}
	for i := range 150 {
		keys = append(keys, fmt.Sprintf("k%03d", i))
	}
	slices.Sort(keys)

	var (
		mu    sync.RWMutex // held by the writer to change db and model together
		model = map[string]string{}
		errs  goErrors
		done  = make(chan struct{})
	)
	// fail reports a read that differs from the model.
	fail := func(format string, args ...any) { errs.report(fmt.Errorf(format, args...)) }
	checkGet := func(what string, got []byte, err error, want string, ok bool) {
		switch {
		case !ok && !errors.Is(err, ErrNotFound):
			fail("%s = %.40q, %v; want not found", what, got, err)
		case ok && (err != nil || string(got) != want):
			fail("%s = %.40q, %v; want %.40q", what, got, err, want)
		}
	}
	// walk checks an iterator over [lo, hi) against m, the model when it
	// was created, with steps spread out so that flushes and compactions
	// run between them.
	walk := func(rng *rand.Rand, it *Iterator, m map[string]string, lo, hi string, steps int, pause func()) {
		var in []string
		for _, k := range keys {
			if _, ok := m[k]; ok && k >= lo && (hi == "" || k < hi) {
				in = append(in, k)
			}
		}
		pos := -1
		for step := range steps {
			var ok bool
			var what string
			switch rng.IntN(8) {
			case 0:
				k := keys[rng.IntN(len(keys))]
				what, ok = "SeekGE "+k, it.SeekGE([]byte(k))
				pos, _ = slices.BinarySearch(in, max(k, lo))
			case 1:
				k := keys[rng.IntN(len(keys))]
				what, ok = "SeekLT "+k, it.SeekLT([]byte(k))
				if hi != "" && k > hi {
					k = hi
				}
				i, _ := slices.BinarySearch(in, k)
				pos = i - 1
			case 2:
				what, ok = "Last", it.Last()
				pos = len(in) - 1
			default:
				switch {
				case pos < 0 || pos >= len(in):
					what, ok = "First", it.First()
					pos = 0
				case rng.IntN(2) == 0:
					what, ok = "Next", it.Next()
					pos++
				default:
					what, ok = "Prev", it.Prev()
					pos--
				}
			}
			wantOK := pos >= 0 && pos < len(in)
			if ok != wantOK || ok && (string(it.Key()) != in[pos] || string(it.Value()) != m[in[pos]]) {
				fail("iterator [%.20q, %.20q) step %d %.30q: at %.30q = %.30q (%v, %v), want position %d of %d", lo, hi, step, what, it.Key(), it.Value(), ok, it.Error(), pos, len(in))
				return
			}
			pause()
		}
	}
	var readers sync.WaitGroup
	for r := range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			stopped := func() bool {
				select {
				case <-done:
					return true
				default:
					return errs.failed()
				}
			}
			var snap *Snapshot
			var snapModel map[string]string
			defer func() {
				if snap != nil {
					snap.Close()
				}
			}()
			// Reader 0 keeps one iterator open across the whole run.
			var longIt *Iterator
			var longModel map[string]string
			if r == 0 {
				mu.RLock()
				longIt, longModel = db.NewIter(nil), maps.Clone(model)
				mu.RUnlock()
				defer longIt.Close()
			}
			for !stopped() {
				k := keys[rng.IntN(len(keys))]
				switch op := rng.IntN(10); {
				case op < 5:
					mu.RLock()
					got, err := db.Get([]byte(k))
					want, ok := model[k]
					mu.RUnlock()
					checkGet(fmt.Sprintf("Get(%.30q)", k), got, err, want, ok)
				case op < 7:
					// A snapshot lives for about 100 reads, while the
					// writer flushes newer versions of its keys into tables
					// that latest reads fill the row cache from.
					if snap == nil || rng.IntN(100) == 0 {
						if snap != nil {
							it := snap.NewIter(nil)
							walk(rng, it, snapModel, "", "", 10, runtime.Gosched)
							if err := it.Close(); err != nil {
								fail("snapshot iterator: %v", err)
							}
							if err := snap.Close(); err != nil {
								fail("snapshot Close: %v", err)
							}
						}
						mu.RLock()
						snap, snapModel = db.NewSnapshot(), maps.Clone(model)
						mu.RUnlock()
					}
					got, err := snap.Get([]byte(k))
					want, ok := snapModel[k]
					checkGet(fmt.Sprintf("snapshot Get(%.30q)", k), got, err, want, ok)
				case op < 9:
					lo, hi := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
					if lo > hi {
						lo, hi = hi, lo
					}
					opts := &IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)}
					if hi == "" {
						opts.UpperBound = nil
					}
					if len(lo) >= 2 && rng.IntN(3) == 0 { // over a prefix instead
						p := []byte(lo[:2])
						opts = &IterOptions{Prefix: p}
						lo, hi = string(p), string(prefixSuccessor(p)) // "": none
					}
					mu.RLock()
					it, m := db.NewIter(opts), maps.Clone(model)
					mu.RUnlock()
					walk(rng, it, m, lo, hi, 30, runtime.Gosched)
					if err := it.Close(); err != nil {
						fail("iterator: %v", err)
					}
				default:
					if longIt != nil {
						walk(rng, longIt, longModel, "", "", 3, func() {})
					}
				}
			}
		}()
	}

	rng := rand.New(rand.NewPCG(99, 99))
	value := func(i int) []byte {
		n := rng.IntN(40)
		if rng.IntN(50) == 0 {
			n = 1000 + rng.IntN(4000) // larger than a block
		}
		return fmt.Appendf(nil, "v%d-%s", i, bytes.Repeat([]byte{byte('a' + i%26)}, n))
	}
	deleteRange := func(start, end string) {
		for k := range model {
			if k >= start && k < end {
				delete(model, k)
			}
		}
	}
	for i := 0; i < ops && !errs.failed(); i++ {
		k := keys[rng.IntN(len(keys))]
		var err error
		mu.Lock()
		switch op := rng.IntN(100); {
		case op < 55:
			v := value(i)
			err = db.Put([]byte(k), v)
			model[k] = string(v)
		case op < 70:
			err = db.Delete([]byte(k))
			delete(model, k)
		case op < 75:
			end := keys[min(len(keys)-1, slices.Index(keys, k)+rng.IntN(20))]
			err = db.DeleteRange([]byte(k), []byte(end))
			deleteRange(k, end)
		case op < 90:
			b := db.NewBatch()
			for range 1 + rng.IntN(8) {
				k := keys[rng.IntN(len(keys))]
				switch rng.IntN(6) {
				case 0:
					b.Delete([]byte(k))
					delete(model, k)
				case 1:
					end := keys[min(len(keys)-1, slices.Index(keys, k)+rng.IntN(10))]
					b.DeleteRange([]byte(k), []byte(end))
					deleteRange(k, end)
				default:
					v := value(i)
					b.Put([]byte(k), v)
					model[k] = string(v)
				}
			}
			err = db.Apply(b)
		case op < 97:
			err = db.Flush()
		default:
			err = db.Compact()
		}
		mu.Unlock()
		if err != nil {
			errs.report(fmt.Errorf("op %d: %v", i, err))
		}
		if i%4 == 0 {
			runtime.Gosched()
		}
	}
	close(done)
	withTimeout(t, 2*time.Minute, "the readers, told to stop,", readers.Wait)
	errs.check(t)
	m := db.Metrics()
	t.Logf("flushes %d, compactions %d, table reopens %d, row cache hits %d", m.Flushes, m.Compactions, m.TableCacheReopens, m.RowCacheHits)
}

func setIfZero(p *int, v int) {
	if *p == 0 {
		*p = v
	}
}
