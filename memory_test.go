package shale

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// TestFlushReleasesMemTable: once a memtable is flushed and no read uses
// it, nothing keeps it alive. (The DB used to drop it from its list of
// immutable memtables by reslicing, which kept the list's array, and with
// it the flushed memtable, until the next memtable filled up: a memtable
// more of live heap, doubled by the garbage collector's headroom.)
func TestFlushReleasesMemTable(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), NoSync: true})
	defer db.Close()
	freed := make(chan struct{}, 1)
	db.mu.Lock()
	runtime.AddCleanup(db.mem.MemTable, func(ch chan struct{}) { ch <- struct{}{} }, freed)
	db.mu.Unlock()
	for i := range 1000 {
		if err := db.Put(fmt.Appendf(nil, "key%04d", i), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// Cleanups run after a collection finds the object unreachable; give
	// them a bounded number of collections.
	for range 100 {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("the flushed memtable is still reachable after 100 collections")
}
