package shale

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// The tests of this file attack the WAL's recovery where its two modes
// (mapped and written) and its rotations meet: a store that changes mode
// from one Open to the next, and memtable rotations racing Close.

// TestTrustWALModeSwitch: a store crashed while one WAL mode wrote its log
// (a mapped log ends in allocated zeros, a written one at its last group)
// reopens in the other mode and keeps every acknowledged write, through
// several crashes and rotations, with a power loss checked at each step
// for what was synced.
func TestTrustWALModeSwitch(t *testing.T) {
	for _, first := range walModes {
		t.Run("first="+first.name, func(t *testing.T) {
			fs := vfs.NewMem()
			want := map[string]string{}
			mode := first
			for round := range 4 {
				db := mustOpen(t, "db", walMapOptions(fs, mode, false))
				wantData(t, db, want)
				maps.Copy(want, putN(t, db, round*100, round*100+60, fmt.Sprintf("r%d-", round)))
				if err := db.Flush(); err != nil { // a rotation: the next puts go to a new WAL
					t.Fatal(err)
				}
				maps.Copy(want, putN(t, db, round*100+60, round*100+100, fmt.Sprintf("r%d-", round)))
				power := fs.CrashCloneWith(vfs.CrashOptions{Mode: vfs.CrashPages, Seed: uint64(round)})
				fs = processCrash(t, fs, "db")
				db.Close() // the crashed process's DB; its Close does not reach the copies
				if mode == first {
					mode = walModes[1-indexOfWALMode(first)]
				} else {
					mode = first
				}
				// Every write was synced (NoSync unset): the power loss keeps them.
				pdb := mustOpen(t, "db", walMapOptions(power, mode, false))
				wantData(t, pdb, want)
				if err := pdb.Close(); err != nil {
					t.Fatal(err)
				}
			}
			db := mustOpen(t, "db", walMapOptions(fs, mode, false))
			wantData(t, db, want)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// indexOfWALMode returns the index of m in walModes.
func indexOfWALMode(m walMode) int {
	for i, w := range walModes {
		if w == m {
			return i
		}
	}
	panic("unknown WAL mode " + m.name)
}

// TestTrustRotationRacesClose: writers that rotate the memtable (and the
// WAL) every few writes race Close. Every write acknowledged before Close
// must be in the store when it reopens, and also after a power loss that
// follows Close, even under NoSync: Close syncs the WAL. A write Close
// refused must fail with ErrClosed, nothing else.
func TestTrustRotationRacesClose(t *testing.T) {
	for _, mode := range walModes {
		for _, noSync := range []bool{false, true} {
			t.Run(fmt.Sprintf("wal=%s/nosync=%v", mode.name, noSync), func(t *testing.T) {
				fs := vfs.NewMem()
				opts := walMapOptions(fs, mode, noSync)
				opts.MemTableSize = 4 << 10 // a rotation every few dozen writes
				db := mustOpen(t, "db", opts)

				const writers, perWriter, closeAfter = 4, 400, 300
				var (
					acked   [writers]map[string]string
					errs    [writers]error
					total   atomic.Int64
					wg      sync.WaitGroup
					enough  = make(chan struct{})
					signals sync.Once
				)
				for w := range writers {
					acked[w] = map[string]string{}
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range perWriter {
							k, v := fmt.Sprintf("w%d-%04d", w, i), fmt.Sprintf("value-%d-%d", w, i)
							if err := db.Put([]byte(k), []byte(v)); err != nil {
								errs[w] = err
								return
							}
							acked[w][k] = v
							if total.Add(1) == closeAfter {
								signals.Do(func() { close(enough) })
							}
						}
					}()
				}
				select {
				case <-enough:
				case <-time.After(time.Minute):
					t.Fatal("the writers never reached the write count at which Close runs")
				}
				if db.Metrics().Flushes == 0 {
					t.Fatal("no memtable was flushed before Close: the writes never rotated the WAL")
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(time.Minute):
					t.Fatal("writers still blocked a minute after Close")
				}
				want := map[string]string{}
				for w := range writers {
					if errs[w] != nil && !errors.Is(errs[w], ErrClosed) {
						t.Fatalf("writer %d: %v, want ErrClosed or no error", w, errs[w])
					}
					maps.Copy(want, acked[w])
				}
				t.Logf("%d writes acknowledged, errors %v", len(want), errs)
				for name, c := range map[string]*vfs.MemFS{
					"reopened":               fs,
					"power loss after Close": fs.CrashCloneWith(vfs.CrashOptions{Mode: vfs.CrashSynced}),
				} {
					db := mustOpen(t, "db", walMapOptions(c, mode, noSync))
					if len(want) < closeAfter {
						t.Fatalf("%s: only %d acknowledged writes", name, len(want))
					}
					wantData(t, db, want)
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}
