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

// TestMetricsOpenFiles: the open files Metrics reports are the files the
// file system sees open, and the memory it reports includes the pinned
// filters and indexes of every table.
func TestMetricsOpenFiles(t *testing.T) {
	fs := &openFilesFS{FS: vfs.NewMem()}
	db := mustOpen(t, "db", &Options{FS: fs, DisableAutomaticCompactions: true})
	defer db.Close()
	for i := range 5 {
		for j := range 100 {
			if err := db.Put(fmt.Appendf(nil, "key%d-%03d", i, j), []byte("value")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	m := db.Metrics()
	if int64(m.OpenFiles) != fs.open.Load() || int64(m.TableFilesOpen) != fs.tablesOpen.Load() || m.TableFilesOpen != 5 {
		t.Errorf("Metrics: %d files open (%d tables); the file system has %d (%d tables); want 5 tables",
			m.OpenFiles, m.TableFilesOpen, fs.open.Load(), fs.tablesOpen.Load())
	}
	if m.FilterMemory == 0 || m.IndexMemory == 0 || m.MemoryTotal < m.FilterMemory+m.IndexMemory {
		t.Errorf("Metrics: memory %d; filters %d, indexes %d", m.MemoryTotal, m.FilterMemory, m.IndexMemory)
	}
}

// TestDefaultMaxOpenFiles checks MaxOpenFiles' default against the
// descriptor limits it must stay under.
func TestDefaultMaxOpenFiles(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		want  int
	}{{1 << 20, 10_000}, {20_000, 10_000}, {4096, 2048}, {1024, 512}, {100, 64}} {
		if got := maxOpenFilesFor(tc.limit); got != tc.want {
			t.Errorf("maxOpenFilesFor(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
	if d := defaultMaxOpenFiles(); d < 64 || d > 10_000 {
		t.Errorf("defaultMaxOpenFiles() = %d, want 64 to 10,000", d)
	}
}
