package shale

import (
	"fmt"
	"testing"

	"github.com/shale-db/shale/internal/manual"
)

// Every test of the package runs with freed manual memory (memtables, the
// filters and indexes of closed tables) made inaccessible, so that a use
// after Free crashes the test binary instead of reading whatever the kernel
// put there. The tests of these lifetimes are in offheap_test.go (tables)
// and memlife_test.go (memtables); the package's tests run one at a time
// (none calls t.Parallel), so manual.InUse measures one DB.
func init() { manual.CheckUseAfterFree() }

// numberedKey is key%04d.
func numberedKey(i int) []byte { return fmt.Appendf(nil, "key%04d", i) }

// putKeys writes numberedKey(i) = value for i in [from, to).
func putKeys(t *testing.T, db *DB, from, to int, value string) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := db.Put(numberedKey(i), []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
}

// leakCheck returns a check that fails the test if manual memory in use
// differs from what it was when leakCheck was called.
func leakCheck(t *testing.T) func(when string) {
	before := manual.InUse()
	return func(when string) {
		t.Helper()
		if leaked := manual.InUse() - before; leaked != 0 {
			t.Fatalf("%s: %d bytes of manual memory are still allocated", when, leaked)
		}
	}
}
