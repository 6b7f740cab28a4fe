package shale

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// TestCloseDuringReads closes the DB while other goroutines read it
// through Gets, an iterator and a snapshot each, and new iterators,
// with flushes and compactions running (one table file open at a time).
// Every read must give the right value or ErrClosed, and none may touch
// what Close freed (manual.CheckUseAfterFree makes that fault).
func TestCloseDuringReads(t *testing.T) {
	value := func(i int) string { return fmt.Sprintf("v%d", i) }
	const keys = 400
	for round := range 10 {
		db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), NoSync: true, MemTableSize: 4 << 10, BlockSize: 128,
			MaxOpenFiles: 1, RowCacheSize: 4 << 10, BlockCacheSize: 1 << 10, L0CompactionThreshold: 2,
			TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10})
		putKeys(t, db, 0, keys, "") // older versions, for compactions to drop
		for i := range keys {
			if err := db.Put(numberedKey(i), []byte(value(i))); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var errs goErrors
		for r := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				it, snap := db.NewIter(nil), db.NewSnapshot()
				defer snap.Close()
				defer it.Close()
				check := func(what string, i int, got []byte, err error) bool {
					if errors.Is(err, ErrClosed) {
						return false
					}
					if err != nil || string(got) != value(i) {
						errs.report(fmt.Errorf("%s(%s) = %q, %v; want %q", what, numberedKey(i), got, err, value(i)))
						return false
					}
					return true
				}
				for n := 0; ; n++ {
					i := (n*7 + r) % keys
					switch n % 4 {
					case 0:
						v, err := db.Get(numberedKey(i))
						if !check("Get", i, v, err) {
							return
						}
					case 1:
						v, err := snap.Get(numberedKey(i))
						if !check("snapshot Get", i, v, err) {
							return
						}
					case 2:
						if !it.Next() && !it.First() {
							if !errors.Is(it.Error(), ErrClosed) {
								errs.report(fmt.Errorf("iterator stopped: %v", it.Error()))
							}
							return
						}
						var j int
						if _, err := fmt.Sscanf(string(it.Key()), "key%d", &j); !check("iterator at", j, it.Value(), err) {
							return
						}
					case 3:
						it2 := db.NewIter(&IterOptions{LowerBound: numberedKey(i), UpperBound: numberedKey(i + 20)})
						for ok := it2.First(); ok; ok = it2.Next() {
						}
						if err := it2.Close(); err != nil && !errors.Is(err, ErrClosed) {
							errs.report(fmt.Errorf("iterator Close: %v", err))
						}
					}
				}
			}()
		}
		for i := range 50 + round*20 { // the same values again: flushes and compactions
			if err := db.Put(numberedKey(i%keys), []byte(value(i%keys))); err != nil {
				t.Fatal(err)
			}
		}
		db.Close() // its error counts the iterators and snapshots left open
		withTimeout(t, time.Minute, "the readers, after Close,", wg.Wait)
		errs.check(t)
	}
}
