package shale

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

var writeFaultSeeds = flag.Uint64("writefault.seeds", 40, "runs of TestWriteFaultsConcurrent (a quarter of them under the race detector)")

// keyEvent is one write's effect on one key: the value it leaves (nil:
// absent), whether it was acknowledged, and, for durability, whether it
// was synced and the order stamps of its start and acknowledgement.
type keyEvent struct {
	val          *string
	acked, sync  bool
	issued, done int64
}

// writeFaultKeys is the number of keys each writer of writeFaultRun owns.
const writeFaultKeys = 30

func writeFaultKey(w, i int) string { return fmt.Sprintf("w%d-%03d", w, i) }

// writeFaultRun runs concurrent writers (each on keys of its own, with
// puts, deletes and range deletions, some synced), a flusher/compactor
// with snapshots and a reader, on a store at extreme options (tiny
// memtables and files, L0 thresholds 1 and 2, one open table file), with
// one I/O error injected by ii. Then it reopens the store on a healthy
// disk as left (a process crash: every acknowledged write must be there)
// and after a power loss (every write made durable must be there: all
// acknowledged ones without NoSync, else the synced ones and those
// acknowledged before a synced write started), and checks that every key
// holds the value of a write not older than its last durable one. It
// returns what went wrong, or "".
func writeFaultRun(seed uint64, noSync, writeWAL bool, ii *vfs.IndexInjector) string {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	efs.SetInjector(ii.Inject)
	opts := func(fs vfs.FS) *Options {
		return &Options{
			FS: fs, NoSync: noSync, DisableWALMapping: writeWAL,
			MemTableSize: 4 << 10, BlockSize: 256, BlockCacheSize: 16 << 10,
			L0CompactionThreshold: 1, L0StopWritesThreshold: 2, LBaseMaxBytes: 8 << 10,
			TargetFileSize: 2 << 10, MaxOpenFiles: 1, MaxImmutableMemTables: 1,
		}
	}
	db, err := Open("db", opts(efs))
	if err != nil {
		if errors.Is(err, vfs.ErrInjected) {
			return ""
		}
		return "Open: " + err.Error()
	}
	var (
		clock    atomic.Int64
		mu       sync.Mutex
		problems []string
		writeErr error
	)
	note := func(what string, err error) {
		if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, vfs.ErrInjected) {
			mu.Lock()
			problems = append(problems, fmt.Sprintf("%s: %v", what, err))
			mu.Unlock()
		}
	}
	const writers, opsPerWriter = 3, 150
	events := make([][writeFaultKeys][]keyEvent, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range opsPerWriter {
				k := rng.IntN(writeFaultKeys)
				effects := map[int]*string{}
				b := new(Batch)
				switch r := rng.IntN(10); {
				case r < 7:
					v := fmt.Sprintf("%s-v%d-%s", writeFaultKey(w, k), i, make([]byte, rng.IntN(200)))
					b.Put([]byte(writeFaultKey(w, k)), []byte(v))
					effects[k] = &v
				case r < 9:
					b.Delete([]byte(writeFaultKey(w, k)))
					effects[k] = nil
				default:
					end := k + 1 + rng.IntN(5)
					b.DeleteRange([]byte(writeFaultKey(w, k)), []byte(writeFaultKey(w, end)))
					for j := k; j < end && j < writeFaultKeys; j++ {
						effects[j] = nil
					}
				}
				o := WriteOptions{Sync: rng.IntN(8) == 0}
				issued := clock.Add(1)
				err := db.ApplyWithOptions(b, o)
				done := clock.Add(1)
				note("Apply", err)
				if err != nil {
					mu.Lock()
					if writeErr == nil {
						writeErr = err
					}
					mu.Unlock()
				}
				for j, v := range effects {
					events[w][j] = append(events[w][j], keyEvent{val: v, acked: err == nil, sync: o.Sync || !noSync, issued: issued, done: done})
				}
			}
		})
	}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%5 == 4 {
				note("Compact", db.Compact())
			} else {
				note("Flush", db.Flush())
			}
			s := db.NewSnapshot()
			_, err := s.Get([]byte(writeFaultKey(0, 1)))
			note("snapshot Get", err)
			s.Close()
		}
	})
	bg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 99))
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := db.Get([]byte(writeFaultKey(rng.IntN(writers), rng.IntN(writeFaultKeys))))
			note("Get", err)
		}
	})
	wg.Wait()
	close(stop)
	bg.Wait()
	cerr := db.Close()
	note("Close", cerr)
	if writeErr != nil && cerr == nil {
		problems = append(problems, fmt.Sprintf("Close returned nil after a write failed with %v", writeErr))
	}
	if len(problems) > 0 {
		return problems[0]
	}
	efs.SetInjector(nil)

	// The synced writes that were acknowledged, by their start: a write
	// acknowledged before one of them started is durable too.
	var syncStarts []int64
	for w := range events {
		for j := range events[w] {
			for _, e := range events[w][j] {
				if e.acked && e.sync {
					syncStarts = append(syncStarts, e.issued)
				}
			}
		}
	}
	durable := func(e keyEvent, powerLoss bool) bool {
		if !e.acked {
			return false
		}
		if !powerLoss || e.sync {
			return true
		}
		for _, s := range syncStarts {
			if s > e.done {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		name      string
		fs        *vfs.MemFS
		powerLoss bool
	}{{"as left", mem, false}, {"after a power loss", mem.CrashClone(), true}} {
		db, err := Open("db", opts(c.fs))
		if err != nil {
			return fmt.Sprintf("reopen %s: %v", c.name, err)
		}
		s, err := scanState(db)
		if err := errors.Join(err, db.Close()); err != nil {
			return fmt.Sprintf("reading the store reopened %s: %v", c.name, err)
		}
		for w := range events {
			for j, evs := range events[w] {
				key := writeFaultKey(w, j)
				got, present := s[key]
				last := -1
				for i, e := range evs {
					if durable(e, c.powerLoss) {
						last = i
					}
				}
				ok := last < 0 && !present
				for _, e := range evs[max(last, 0):] {
					ok = ok || (e.val == nil) == !present && (e.val == nil || *e.val == got)
				}
				if !ok {
					return fmt.Sprintf("reopened %s: %s holds %q (present %v), not the value of a write since its last durable one (%d of %d)", c.name, key, got, present, last, len(evs))
				}
				delete(s, key)
			}
		}
		for k := range s {
			return fmt.Sprintf("reopened %s: %s was never written", c.name, k)
		}
	}
	return ""
}

// TestWriteFaultsConcurrent: concurrent writers, flushes, compactions and
// reads at extreme options (writeFaultRun), synced and NoSync, WAL mapped
// and written, with one I/O error (once or for good, ENOSPC or not) at a
// random operation: no unexpected error, Close reports a write's failure,
// and no acknowledged or durable write is lost.
func TestWriteFaultsConcurrent(t *testing.T) {
	fails := newFailures()
	fired := 0
	seeds := *writeFaultSeeds
	if raceEnabled {
		seeds = max(seeds/4, 1)
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		noSync, writeWAL := rng.IntN(2) == 0, rng.IntN(2) == 0
		ii := &vfs.IndexInjector{Index: int64(rng.IntN(1500)), Persistent: rng.IntN(2) == 0}
		if rng.IntN(3) == 0 {
			ii.Err = vfs.ErrNoSpace
		}
		withTimeout(t, time.Minute, fmt.Sprintf("seed %d", seed), func() {
			if p := writeFaultRun(seed, noSync, writeWAL, ii); p != "" {
				fails.add(p, fmt.Sprintf("seed %d noSync=%v write=%v index=%d persistent=%v", seed, noSync, writeWAL, ii.Index, ii.Persistent))
			}
		})
		if ii.Fired() {
			fired++
		}
	}
	fails.report(t, fmt.Sprintf("%d runs with an error injected", fired))
}
