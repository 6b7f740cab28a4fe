package shale

import (
	"fmt"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestMetricsAfterFlush: Metrics read after Flush returns count that flush
// (they used to be bumped after the flush's waiters were woken, so a
// Metrics call right after Flush could miss it).
func TestMetricsAfterFlush(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
	defer db.Close()
	for i := 1; i <= 50; i++ {
		if err := db.Put(fmt.Appendf(nil, "key%03d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if got := db.Metrics().Flushes; got != int64(i) {
			t.Fatalf("after %d flushes Metrics().Flushes = %d", i, got)
		}
	}
}
