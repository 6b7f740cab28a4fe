package shale

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// TestTrustCheckMissingMiddleWAL: a WAL missing from the middle of the
// sequence, which Open refuses (the sequence numbers jump from the WAL
// before it to the WAL after it), is a problem for Check too, named by the
// WAL after the gap: Check must not call consistent a store whose writes
// are gone and which Open will not open.
func TestTrustCheckMissingMiddleWAL(t *testing.T) {
	// Hold every flush at its table's creation, so that each full memtable
	// keeps its WAL: one WAL per Put (as TestMissingWAL does).
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	release := make(chan struct{})
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpCreate && strings.HasSuffix(path, ".sst") {
			select {
			case <-release:
			case <-time.After(10 * time.Second):
				return errors.New("test: flush held too long")
			}
		}
		return nil
	})
	db := mustOpen(t, "db", &Options{FS: efs, MemTableSize: 1, MaxImmutableMemTables: 8})
	putN(t, db, 0, 4, "v")
	c := mem.CrashClone()
	close(release)
	db.Close()
	logs := filesOf(t, c, "db", fileTypeLog)
	if len(logs) != 4 {
		t.Fatalf("want 4 WALs, got %v", logs)
	}
	if err := Check("db", &Options{FS: c}); err != nil {
		t.Fatalf("Check of the store before a WAL is removed: %v", err)
	}
	if err := c.Remove(logs[1]); err != nil {
		t.Fatal(err)
	}
	err := Check("db", &Options{FS: c})
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), filepath.Base(logs[2])) {
		t.Fatalf("Check with %s missing: %v, want ErrCorruption naming %s", filepath.Base(logs[1]), err, filepath.Base(logs[2]))
	}
	wantOpenCorruption(t, c, logs[2])
}
