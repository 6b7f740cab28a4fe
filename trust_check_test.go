package shale

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/wal"
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

// TestTrustCheckMissingBatch: a WAL that reads whole but lacks a batch from
// the middle of its sequence (rewritten without it, every record intact),
// which Open refuses, is a problem for Check too, at the batch after the
// gap.
func TestTrustCheckMissingBatch(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: fs})
	putN(t, db, 0, 5, "v")
	c := fs.CrashClone()
	db.Close()
	name := newestOf(t, c, "db", fileTypeLog)
	r := wal.NewReader(bytes.NewReader(readFile(t, c, name)), name)
	var recs [][]byte
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, bytes.Clone(rec))
	}
	if len(recs) != 5 {
		t.Fatalf("%s holds %d records, want the 5 puts", name, len(recs))
	}
	f, err := c.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := wal.NewWriter(f)
	for i, rec := range recs {
		if i == 2 {
			continue
		}
		if _, err := w.WriteRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.MarkEnd(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	err = Check("db", &Options{FS: c})
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), filepath.Base(name)) || !strings.Contains(err.Error(), "follows one ending at") {
		t.Fatalf("Check of a WAL missing a batch: %v, want ErrCorruption naming %s and the gap", err, filepath.Base(name))
	}
	wantOpenCorruption(t, c, name)
}
