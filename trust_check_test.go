package shale

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/wal"
	"github.com/shale-db/shale/vfs"
)

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
