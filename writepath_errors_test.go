package shale

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// TestRotationKeepsFirstBackgroundError: a flush fails while a memtable
// rotation, which works without db.mu, is creating its WAL, and then the
// rotation fails too. The flush's error came first, so it is the DB's
// background error: later writes and Close return it, not the rotation's.
func TestRotationKeepsFirstBackgroundError(t *testing.T) {
	errFlush := fmt.Errorf("flush's table: %w", vfs.ErrInjected)
	errRotate := fmt.Errorf("rotation's WAL: %w", vfs.ErrInjected)
	rotating := make(chan struct{}) // closed when the second rotation creates its WAL
	recorded := make(chan struct{}) // closed when the flush's error is recorded
	var once sync.Once
	var logs, tables atomic.Int32
	efs := vfs.NewErrorFS(vfs.NewMem())
	db := mustOpen(t, "db", &Options{
		FS: efs, MemTableSize: 4 << 10, MaxImmutableMemTables: 2, DisableAutomaticCompactions: true,
		Logger: func(format string, args ...any) {
			if strings.HasPrefix(format, "background error") {
				once.Do(func() { close(recorded) })
			}
		},
	})
	wait := func(ch chan struct{}, what string) {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Errorf("timed out waiting for %s", what)
		}
	}
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op != vfs.OpCreate {
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".sst") && tables.Add(1) == 1:
			wait(rotating, "the second rotation")
			return errFlush
		case strings.HasSuffix(path, ".log") && logs.Add(1) == 2:
			close(rotating)
			wait(recorded, "the flush's error")
			return errRotate
		}
		return nil
	})
	value := make([]byte, 100)
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		err = db.Put(fmt.Appendf(nil, "key%04d", i), value)
	}
	if err == nil {
		t.Fatal("no write failed")
	}
	if !errors.Is(err, errFlush) {
		t.Errorf("the failing write returned %v, want the flush's error, the first", err)
	}
	if err := db.Put([]byte("after"), value); !errors.Is(err, errFlush) {
		t.Errorf("a later write returned %v, want the flush's error", err)
	}
	if err := db.Close(); !errors.Is(err, errFlush) {
		t.Errorf("Close returned %v, want the flush's error, the first", err)
	}
}
