package shale

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/sstable"
	"github.com/shale-db/shale/vfs"
)

// probeCounts are filter outcomes counted by the test itself, from the
// traces of the lookups it makes, to compare with Metrics'.
type probeCounts struct{ checks, skips, falsePositives atomic.Int64 }

// get looks key up through TraceGet and counts what its filters said.
func (p *probeCounts) get(t testing.TB, db *DB, key []byte) {
	tr, err := db.TraceGet(key)
	if err != nil {
		t.Errorf("TraceGet(%s): %v", key, err)
		return
	}
	for _, s := range tr.Steps {
		p.note(s.FilterChecked, s.FilterSkipped, s.FalsePositive)
	}
}

func (p *probeCounts) note(checked, skipped, falsePositive bool) {
	if checked {
		p.checks.Add(1)
	}
	if skipped {
		p.skips.Add(1)
	}
	if falsePositive {
		p.falsePositives.Add(1)
	}
}

// check compares Metrics' filter figures with the test's.
func (p *probeCounts) check(t *testing.T, db *DB, when string) {
	t.Helper()
	m := db.Metrics()
	if m.FilterChecks != p.checks.Load() || m.FilterSkips != p.skips.Load() || m.FilterFalsePositives != p.falsePositives.Load() {
		t.Fatalf("%s: Metrics counts %d checks, %d skips, %d false positives; the lookups made %d, %d, %d",
			when, m.FilterChecks, m.FilterSkips, m.FilterFalsePositives, p.checks.Load(), p.skips.Load(), p.falsePositives.Load())
	}
}

// TestFilterCountsAcrossRetirement checks that Metrics' filter figures
// are exactly the probes made, while the tables probed are current, after
// a compaction took them out of the current version while an old
// readState still holds (and probes) them, and after they are released.
func TestFilterCountsAcrossRetirement(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true, TargetFileSize: 8 << 10})
	defer db.Close()
	var p probeCounts
	lookups := func() {
		for i := range 600 {
			p.get(t, db, key(i))                   // present, or absent in later rounds
			p.get(t, db, fmt.Appendf(key(i), "~")) // absent
		}
	}
	for round := range 3 {
		for i := range 300 {
			if err := db.Put(key(300*round+i), []byte("value")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		lookups()
		p.check(t, db, fmt.Sprintf("round %d, after lookups", round))

		old, seq := db.loadReadState(readLatest)
		if err := db.Compact(); err != nil {
			old.unref()
			t.Fatal(err)
		}
		p.check(t, db, fmt.Sprintf("round %d, after the compaction", round))
		// Probe the old version's tables, gone from the current one.
		for _, tb := range old.v.tables {
			for i := range 200 {
				var st sstable.GetTrace
				if _, _, _, err := tb.reader.Get(fmt.Appendf(key(i), "~"), base.SeqNum(seq), &st); err != nil {
					t.Fatal(err)
				}
				p.note(st.FilterChecked, st.FilterChecked && !st.FilterMayContain, st.FalsePositive)
			}
		}
		p.check(t, db, fmt.Sprintf("round %d, with the old tables probed", round))
		old.unref()
		db.releaseRetired(false) // whatever the deleter goroutine has not
		p.check(t, db, fmt.Sprintf("round %d, with the old tables released", round))
		lookups()
		p.check(t, db, fmt.Sprintf("round %d, after more lookups", round))
	}
	db.filterCounts.mu.Lock()
	released, live := db.filterCounts.released, len(db.filterCounts.live)
	db.filterCounts.mu.Unlock()
	if released.checks == 0 || released.skips == 0 || released.falsePositives == 0 || live == 0 {
		t.Errorf("released tables counted %+v, %d tables live: want some of each", released, live)
	}
}

// TestFilterCountsMonotonic checks, under concurrent Gets while flushes
// and compactions retire the tables they probe, that Metrics' filter
// figures never go backwards and never count a skip or false positive
// ahead of its check, and that once the Gets stop they are exactly the
// probes made.
func TestFilterCountsMonotonic(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true, TargetFileSize: 8 << 10})
	defer db.Close()
	var p probeCounts
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p.get(t, db, fmt.Appendf(key((i*7+r)%2000), "~"))
				p.get(t, db, key((i*7+r)%2000))
			}
		})
	}
	polls := make(chan error, 1)
	wg.Go(func() {
		var prev Metrics
		for {
			m := db.Metrics()
			switch {
			case m.FilterChecks < prev.FilterChecks || m.FilterSkips < prev.FilterSkips || m.FilterFalsePositives < prev.FilterFalsePositives:
				polls <- fmt.Errorf("went backwards: %d, %d, %d checks, skips, false positives after %d, %d, %d",
					m.FilterChecks, m.FilterSkips, m.FilterFalsePositives, prev.FilterChecks, prev.FilterSkips, prev.FilterFalsePositives)
				return
			case m.FilterSkips+m.FilterFalsePositives > m.FilterChecks:
				polls <- fmt.Errorf("%d skips and %d false positives out of %d checks", m.FilterSkips, m.FilterFalsePositives, m.FilterChecks)
				return
			}
			prev = m
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	})
	for round := range 8 {
		for i := range 250 {
			if err := db.Put(key(250*round+i), []byte("value")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if round%2 == 1 {
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Absent keys inside the tables' range, looked up here so that skips
	// are counted whatever time the readers above got on a busy machine.
	for i := range 100 {
		p.get(t, db, fmt.Appendf(key(i*20), "~"))
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-polls:
		t.Fatal(err)
	default:
	}
	p.check(t, db, "after the Gets")
	if db.Metrics().FilterSkips == 0 {
		t.Error("no filter skipped a table")
	}
}
