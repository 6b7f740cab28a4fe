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

// manifestRotationRun writes keys large enough (60 KiB) that the MANIFEST
// passes maxManifestSize after a few dozen flushes and is rotated while
// the store runs, failing what inject picks among the operations on the
// MANIFEST, CURRENT and the temporary file that replaces CURRENT. Then it
// reopens the store on a healthy disk, as left and after a power loss,
// and checks that every acknowledged write is there. It returns the
// number of those operations seen, the MANIFESTs created while the store
// ran, and what went wrong ("" for nothing).
func manifestRotationRun(inject func(i int64) error) (ops int64, manifests int, problem string) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	var count atomic.Int64
	var created atomic.Int32
	efs.SetInjector(func(op vfs.Op, path string) error {
		if !strings.Contains(path, "MANIFEST") && !strings.Contains(path, "CURRENT") && !strings.HasSuffix(path, ".tmp") {
			return nil
		}
		if op == vfs.OpCreate && strings.Contains(path, "MANIFEST") {
			created.Add(1)
		}
		return inject(count.Add(1) - 1)
	})
	opts := &Options{FS: efs, MemTableSize: 1 << 20, DisableAutomaticCompactions: true}
	db, err := Open("db", opts)
	if err != nil {
		if errors.Is(err, vfs.ErrInjected) {
			return count.Load(), 0, ""
		}
		return count.Load(), 0, "Open: " + err.Error()
	}
	created.Store(0)
	acked := map[string]string{}
	key := func(i int) string { return fmt.Sprintf("%06d%s", i, strings.Repeat("k", 256<<10)) }
	for i := 0; i < 14; i++ {
		v := fmt.Sprintf("value%d", i)
		err := db.Put([]byte(key(i)), []byte(v))
		if err == nil {
			acked[key(i)] = v
			err = db.Flush()
		}
		if err != nil {
			if !errors.Is(err, vfs.ErrInjected) {
				problem = fmt.Sprintf("step %d: %v", i, err)
			}
			break
		}
	}
	if err := db.Close(); err != nil && !errors.Is(err, vfs.ErrInjected) && problem == "" {
		problem = "Close: " + err.Error()
	}
	ops, manifests = count.Load(), int(created.Load())
	if problem != "" {
		return ops, manifests, problem
	}
	efs.SetInjector(nil)
	for _, c := range []struct {
		name string
		fs   *vfs.MemFS
	}{{"after a power loss", mem.CrashClone()}, {"as left", mem}} {
		db, err := Open("db", &Options{FS: c.fs, MemTableSize: 1 << 20, DisableAutomaticCompactions: true})
		if err != nil {
			return ops, manifests, fmt.Sprintf("reopen %s: %v", c.name, err)
		}
		for k, v := range acked {
			if got, err := db.Get([]byte(k)); err != nil || string(got) != v {
				db.Close()
				return ops, manifests, fmt.Sprintf("reopened %s: acknowledged write of %.6s: %q, %v", c.name, k, got, err)
			}
		}
		if err := db.Close(); err != nil {
			return ops, manifests, fmt.Sprintf("closing the store reopened %s: %v", c.name, err)
		}
	}
	return ops, manifests, ""
}

// TestManifestRotationFaults: the MANIFEST rotated while the store runs
// (logAndApply's createManifest) keeps every acknowledged write, as left
// and after a power loss, also with an I/O error at an operation on the
// MANIFEST and CURRENT, once or for good: at a few of them, and with -long
// (about 90 s) at each in turn.
func TestManifestRotationFaults(t *testing.T) {
	n, manifests, problem := manifestRotationRun(func(int64) error { return nil })
	if problem != "" {
		t.Fatalf("without faults: %s", problem)
	}
	if manifests == 0 {
		t.Fatalf("the MANIFEST was not rotated while the store ran (%d operations on it)", n)
	}
	// Every operation in turn with -long; else every n/3rd, a few seconds
	// (one, under the race detector, which slows each run eightfold).
	step := int64(1)
	switch {
	case *long:
	case raceEnabled:
		step = n
	default:
		step = max(1, n/3)
	}
	fails := newFailures()
	for _, persistent := range []bool{false, true} {
		for i := step / 2; i < n; i += step {
			_, _, problem := manifestRotationRun(func(j int64) error {
				if j == i || persistent && j > i {
					return vfs.ErrInjected
				}
				return nil
			})
			if problem != "" {
				fails.add(problem, fmt.Sprintf("operation %d, persistent %v", i, persistent))
			}
		}
	}
	fails.report(t, fmt.Sprintf("%d operations on the MANIFEST and CURRENT, %d MANIFESTs created while running", n, manifests))
}
