package shale

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestCommitGroupsForm checks that concurrent writers share WAL write
// calls. A commit leader never blocks, so without the leader yielding to
// the writers that are ready (gatherGroup), writers sharing a core commit
// one at a time: 1.00 write calls per Put with 4 writers, measured, and
// 0.4-0.8 with it. The bound asks for a mean group above 10/9. It needs
// two Ps: with one, a writer runs alone for its whole time slice until the
// others have entered a commit, the first time they are preempted there.
func TestCommitGroupsForm(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2")
	}
	db, err := Open("db", &Options{FS: vfs.NewMem(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const writers, perWriter = 4, 5000
	var wg sync.WaitGroup
	var errs goErrors
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter && !errs.failed(); i++ {
				if err := db.Put(fmt.Appendf(nil, "w%d-%05d", w, i), []byte("value")); err != nil {
					errs.report(err)
				}
			}
		}()
	}
	wg.Wait()
	errs.check(t)
	m := db.Metrics()
	if m.WALWrites*10 >= writers*perWriter*9 {
		t.Fatalf("%d WAL write calls for %d Puts from %d writers: groups of %.2f on average, want above 1.11",
			m.WALWrites, writers*perWriter, writers, float64(writers*perWriter)/float64(m.WALWrites))
	}
	t.Logf("%d WAL write calls for %d Puts: groups of %.2f on average", m.WALWrites, writers*perWriter, float64(writers*perWriter)/float64(m.WALWrites))
}
