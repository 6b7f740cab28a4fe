package shale

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// TestDefaultL0Thresholds: by default writes are not slowed before the L0
// stop threshold (the slowdown threshold is the stop), whatever the
// compaction threshold; a slowdown threshold that is set is kept.
func TestDefaultL0Thresholds(t *testing.T) {
	for _, tc := range []struct {
		opts       Options
		slow, stop int
	}{
		{Options{}, 12, 12},
		{Options{L0CompactionThreshold: 8}, 16, 16},
		{Options{L0StopWritesThreshold: 20}, 20, 20},
		{Options{L0SlowdownWritesThreshold: 8}, 8, 12},
	} {
		d := tc.opts.withDefaults()
		if d.L0SlowdownWritesThreshold != tc.slow || d.L0StopWritesThreshold != tc.stop {
			t.Errorf("%+v: slowdown %d, stop %d; want %d, %d", tc.opts, d.L0SlowdownWritesThreshold, d.L0StopWritesThreshold, tc.slow, tc.stop)
		}
		if got := slowdownCharge(1<<20, d.L0StopWritesThreshold-1, d.L0SlowdownWritesThreshold, d.L0StopWritesThreshold); (got == 0) != (tc.slow == tc.stop) {
			t.Errorf("%+v: charge %v one file short of the stop", tc.opts, got)
		}
	}
}

// TestSlowdownCharge: the pause owed at the L0 slowdown threshold is
// charged per byte, the same for one large write as for many small ones,
// and grows with the number of L0 files up to the stop threshold.
func TestSlowdownCharge(t *testing.T) {
	const slow, stop = 8, 12
	if got := slowdownCharge(1<<20, slow-1, slow, stop); got != 0 {
		t.Fatalf("below the slowdown threshold: charge %v, want 0", got)
	}
	var prev time.Duration
	for l0 := slow; l0 < stop; l0++ {
		one := slowdownCharge(100_000, l0, slow, stop)
		var many time.Duration
		for range 1000 {
			many += slowdownCharge(100, l0, slow, stop)
		}
		if one <= prev || one != many {
			t.Fatalf("L0 %d files: one write of 100,000 bytes charged %v, 1000 of 100 bytes %v; at %d files %v",
				l0, one, many, l0-1, prev)
		}
		prev = one
	}
	if got, want := prev, time.Duration(100_000*slowdownNanosPerByte); got != want {
		t.Fatalf("one file short of the stop threshold: charge %v, want the full %v", got, want)
	}
	if got := slowdownCharge(100_000, stop+3, slow, stop); got != prev {
		t.Fatalf("past the stop threshold: charge %v, want %v", got, prev)
	}
}

// TestReadsDuringRotation: while a memtable rotation waits for the file
// system (here, the directory sync of the new WAL), reads, iterators,
// snapshots and Metrics go on: the rotation does its I/O without the DB's
// mutex.
func TestReadsDuringRotation(t *testing.T) {
	efs := vfs.NewErrorFS(vfs.NewMem())
	db := mustOpen(t, "db", &Options{FS: efs, NoSync: true})
	defer db.Close()
	for i := range 100 {
		if err := db.Put(fmt.Appendf(nil, "key%03d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var blocked atomic.Bool
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpSyncDir && blocked.CompareAndSwap(false, true) {
			// The rotation's sync: the flush's come after it.
			close(entered)
			<-release
		}
		return nil
	})
	flushed := make(chan error, 1)
	go func() { flushed <- db.Flush() }()
	select {
	case <-entered:
	case err := <-flushed:
		t.Fatalf("Flush returned %v without syncing the directory", err)
	case <-time.After(time.Minute):
		t.Fatal("Flush never synced the directory")
	}

	read := make(chan error, 1)
	go func() {
		read <- func() error {
			if v, err := db.Get([]byte("key042")); err != nil || string(v) != "v" {
				return fmt.Errorf("Get = %q, %v", v, err)
			}
			it := db.NewIter(nil)
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if err := it.Close(); err != nil || n != 100 {
				return fmt.Errorf("iterator: %d keys, %v", n, err)
			}
			s := db.NewSnapshot()
			defer s.Close()
			if _, err := s.Get([]byte("key000")); err != nil {
				return fmt.Errorf("Snapshot.Get: %v", err)
			}
			if m := db.Metrics(); m.ImmutableTables != 0 {
				return fmt.Errorf("Metrics: %d immutable memtables before the rotation is done", m.ImmutableTables)
			}
			return nil
		}()
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		close(release)
		t.Fatal("reads waited for the rotation's directory sync")
	}
	close(release)
	select {
	case err := <-flushed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Flush did not return once the directory sync went through")
	}
	efs.SetInjector(nil)
	if v, err := db.Get([]byte("key099")); err != nil || string(v) != "v" {
		t.Fatalf("after the flush: Get = %q, %v", v, err)
	}
}
