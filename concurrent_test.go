package shale

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestConcurrent runs writers, readers, iterators and snapshots at once
// while flushes and compactions run, under -race in CI. Each writer owns its
// keys, so each can check that it reads its own writes; readers check that
// a snapshot never changes under them.
func TestConcurrent(t *testing.T) {
	db, err := Open("db", &Options{
		FS:                    vfs.NewMem(),
		MemTableSize:          16 << 10,
		BlockSize:             512,
		L0CompactionThreshold: 2,
		LBaseMaxBytes:         64 << 10,
		TargetFileSize:        16 << 10,
		NoSync:                true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const writers, perWriter = 6, 600
	var wg sync.WaitGroup
	var errs goErrors
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter && !errs.failed(); i++ {
				k := fmt.Appendf(nil, "w%d-%05d", w, i)
				v := fmt.Appendf(nil, "value-%d-%d", w, i)
				if err := db.Put(k, v); err != nil {
					errs.report(err)
					return
				}
				got, err := db.Get(k)
				if err != nil || string(got) != string(v) {
					errs.report(fmt.Errorf("read own write %s: %q, %v", k, got, err))
					return
				}
				if i%50 == 0 {
					if err := db.Delete(fmt.Appendf(nil, "w%d-%05d", w, i/2)); err != nil {
						errs.report(err)
						return
					}
				}
			}
		}()
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := 0; r < 3; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !errs.failed() {
				select {
				case <-stop:
					return
				default:
				}
				snap := db.NewSnapshot()
				first := countSnapshot(snap)
				if second := countSnapshot(snap); first != second {
					errs.report(fmt.Errorf("snapshot changed: %d then %d entries", first, second))
				}
				snap.Close()
				it := db.NewIter(nil)
				var prev []byte
				for ok := it.First(); ok; ok = it.Next() {
					if prev != nil && string(it.Key()) <= string(prev) {
						errs.report(fmt.Errorf("iterator out of order: %s after %s", it.Key(), prev))
					}
					prev = append(prev[:0], it.Key()...)
				}
				if err := it.Close(); err != nil {
					errs.report(err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	errs.check(t)
	for w := 0; w < writers; w++ {
		for i := 0; i < perWriter; i++ {
			// Writer w deleted key i/2 after writing key i, for i%50 == 0.
			deleted := i%25 == 0 && i < perWriter/2
			_, err := db.Get(fmt.Appendf(nil, "w%d-%05d", w, i))
			if deleted != errors.Is(err, ErrNotFound) {
				t.Fatalf("w%d-%05d: deleted=%v, Get error %v", w, i, deleted, err)
			}
		}
	}
	if m := db.Metrics(); m.Flushes == 0 {
		t.Fatalf("expected flushes during the test; metrics:\n%s", m)
	}
}

func countSnapshot(s *Snapshot) int {
	it := s.NewIter(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	it.Close()
	return n
}
