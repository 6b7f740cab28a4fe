package shale

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
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

// TestTrustRotatedWALFlips is the sweep of item 2 of issue 34. A power loss
// right after a memtable rotation leaves the newest WAL empty and the WAL
// before it holding acknowledged, synced batches; every single-bit flip of
// that older WAL's bytes is tried in turn, in each WAL mode. A flip must be
// reported, by Open and by Check, as ErrCorruption naming the WAL, or be
// harmless: Open then keeps every batch. Open keeping less is a silent
// loss, which must never happen: the rotation ended the WAL with an END,
// which claims every byte before it, so damage to the last records is not
// taken for a torn tail. The WAL holds 3 batches; the short run splits
// its flips between the modes (see sweepWALFlips), -long flips every bit
// of it in each, and of a WAL of 40 batches of 1000 bytes, which spans two
// blocks and holds a record in two fragments.
func TestTrustRotatedWALFlips(t *testing.T) {
	type sweep struct {
		batches, valueSize int
	}
	sweeps := []sweep{{3, 1}}
	if *long {
		sweeps = append(sweeps, sweep{40, 1000})
	}
	for i, mode := range walModes {
		for _, s := range sweeps {
			t.Run(fmt.Sprintf("wal=%s/batches=%d", mode.name, s.batches), func(t *testing.T) {
				base, name, want := rotatedImage(t, mode, s.batches, s.valueSize)
				sweepWALFlips(t, base, name, want, mode, i)
			})
		}
	}
}

// rotatedImage writes batches synced Puts of valueSize-byte values to a
// store, forces a memtable rotation and returns the store a power loss
// leaves right after it, with the new WAL empty: the file system, the
// path of the older WAL, which holds every batch, and the data.
func rotatedImage(t *testing.T, mode walMode, batches, valueSize int) (*vfs.MemFS, string, map[string]string) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	var (
		once    sync.Once
		image   *vfs.MemFS
		taken   = make(chan struct{})
		release = make(chan struct{})
	)
	// The flush the rotation starts is the first to create a table: the
	// rotation is done, the new WAL empty. Take the image there, and hold
	// the flush until the image is read.
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpCreate && strings.HasSuffix(path, ".sst") {
			once.Do(func() {
				image = mem.CrashClone()
				close(taken)
				<-release
			})
		}
		return nil
	})
	db := mustOpen(t, "db", walMapOptions(efs, mode, false))
	want := map[string]string{}
	for i := range batches {
		k, v := fmt.Sprintf("key%04d", i), strings.Repeat(string(rune('a'+i%26)), valueSize)
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	flushed := make(chan error, 1)
	go func() { flushed <- db.Flush() }()
	select {
	case <-taken:
	case err := <-flushed:
		t.Fatalf("Flush returned %v before its table was created", err)
	}
	close(release)
	if err := errors.Join(<-flushed, db.Close()); err != nil {
		t.Fatal(err)
	}
	logs := filesOf(t, image, "db", fileTypeLog)
	if len(logs) != 2 {
		t.Fatalf("the image holds WALs %v, want the rotated one and the new one", logs)
	}
	if b := readFile(t, image, logs[1]); len(b) != 0 {
		t.Fatalf("the new WAL %s holds %d bytes, want none", logs[1], len(b))
	}
	if b := readFile(t, image, logs[0]); !endsWithEnd(b) {
		t.Fatalf("the rotated WAL %s (%d bytes) does not end with an END", logs[0], len(b))
	}
	return image, logs[0], want
}

// sweepWALFlips flips each bit of WAL name in a copy of base in turn and
// checks what Check and Open make of it (see TestTrustRotatedWALFlips).
// The short run splits its flips between the WAL modes (modeIndex): every
// bit of the last 80 bytes (the last batch, its COMMIT and the END), where
// damage could pass for a torn tail, and one bit of every byte before
// them; -long flips every bit in each mode.
func sweepWALFlips(t *testing.T, base *vfs.MemFS, name string, want map[string]string, mode walMode, modeIndex int) {
	good := readFile(t, base, name)
	var tried, detected, harmless int
	fails := newFailures()
	tail := len(good) - 80
	for i := range len(good) * 8 {
		byteOff := i / 8
		if !*long && (byteOff >= tail && i%len(walModes) != modeIndex ||
			byteOff < tail && (i%8 != byteOff%8 || byteOff%len(walModes) != modeIndex)) {
			continue
		}
		tried++
		c := base.CrashClone() // every byte of base is synced: a copy
		b := bytes.Clone(good)
		b[i/8] ^= 1 << (i % 8)
		writeFile(t, c, name, b)
		where := fmt.Sprintf("bit %d of byte %d", i%8, i/8)
		checkErr := Check("db", walMapOptions(c, mode, false))
		db, err := Open("db", walMapOptions(c, mode, false))
		switch {
		case err != nil && (!errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), filepath.Base(name))):
			fails.add("Open: "+err.Error()+", want ErrCorruption naming the WAL", where)
		case err != nil && !errors.Is(checkErr, ErrCorruption):
			fails.add(fmt.Sprintf("Open refused the store (%v), Check returned %v", err, checkErr), where)
		case err != nil:
			detected++
		default:
			lost := 0
			for k, v := range want {
				got, err := db.Get([]byte(k))
				switch {
				case errors.Is(err, ErrNotFound):
					lost++
				case err != nil || string(got) != v:
					fails.add(fmt.Sprintf("Get(%s) = %.20q, %v", k, got, err), where)
				}
			}
			if lost > 0 {
				fails.add(fmt.Sprintf("silent loss: Open succeeded without %d of %d batches (Check: %v)", lost, len(want), checkErr), where)
			} else {
				harmless++
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	fails.report(t, fmt.Sprintf("%s, %d bytes: %d single-bit flips, %d detected as corruption by Open and Check, %d harmless",
		filepath.Base(name), len(good), tried, detected, harmless))
}
