package shale

import (
	"errors"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestApplySyncUnderNoSync: in a store opened with NoSync, a write applied
// with WriteOptions{Sync: true} survives a power loss (a crash clone keeps
// only synced bytes), and so do the writes before it; a later unsynced write
// is lost, as NoSync allows.
func TestApplySyncUnderNoSync(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: fs, NoSync: true})
	defer db.Close()
	put := func(k string, o WriteOptions) {
		t.Helper()
		b := db.NewBatch()
		b.Put([]byte(k), []byte("v"))
		if err := db.ApplyWithOptions(b, o); err != nil {
			t.Fatal(err)
		}
	}
	put("before", WriteOptions{})
	put("synced", WriteOptions{Sync: true})
	put("after", WriteOptions{})

	crashed := mustOpen(t, "db", &Options{FS: fs.CrashClone(), NoSync: true})
	defer crashed.Close()
	for _, k := range []string{"before", "synced"} {
		if _, err := crashed.Get([]byte(k)); err != nil {
			t.Errorf("after a power loss Get(%s): %v, want it kept", k, err)
		}
	}
	if _, err := crashed.Get([]byte("after")); !errors.Is(err, ErrNotFound) {
		t.Errorf("after a power loss Get(after): %v, want it lost (never synced)", err)
	}
}
