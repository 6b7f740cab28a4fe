package shale

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// fileEvents records the table and WAL events of a DB, and its stalls and
// background errors.
type fileEvents struct {
	mu                    sync.Mutex
	tables, wals          map[uint64]bool // created and not yet deleted
	created, deleted      []string        // "reason L<level>:<num>" and "reason <num>"
	walsCreated, walsGone []uint64
	stalls                []string
	stallEnds             int
	bgErrs                []error
	stalled               chan string // each WriteStallBegin's reason, if set
	t                     *testing.T
	fs                    vfs.FS
}

func newFileEvents(t *testing.T, fsys vfs.FS) *fileEvents {
	return &fileEvents{tables: map[uint64]bool{}, wals: map[uint64]bool{}, t: t, fs: fsys}
}

func (e *fileEvents) listener() *EventListener {
	return &EventListener{
		TableCreated: func(i TableCreateInfo) {
			e.mu.Lock()
			defer e.mu.Unlock()
			if info, err := e.fs.Stat(i.Path); err != nil || uint64(info.Size()) != i.Table.Size {
				e.t.Errorf("TableCreated %+v: the file: %v, %v", i, info, err)
			}
			e.tables[i.Table.FileNum] = true
			e.created = append(e.created, fmt.Sprintf("%s L%d:%d", i.Reason, i.Table.Level, i.Table.FileNum))
		},
		TableDeleted: func(i TableDeleteInfo) {
			e.mu.Lock()
			defer e.mu.Unlock()
			if _, err := e.fs.Stat(i.Path); i.Err != nil || !errors.Is(err, fs.ErrNotExist) {
				e.t.Errorf("TableDeleted %+v: the file is still there: %v", i, err)
			}
			delete(e.tables, i.FileNum)
			e.deleted = append(e.deleted, fmt.Sprintf("%s %d", i.Reason, i.FileNum))
		},
		WALCreated: func(i WALCreateInfo) {
			e.mu.Lock()
			defer e.mu.Unlock()
			if _, err := e.fs.Stat(i.Path); err != nil || i.Path != e.fs.PathJoin("db", baseFileName(fileTypeLog, i.FileNum)) {
				e.t.Errorf("WALCreated %+v: the file: %v", i, err)
			}
			e.wals[i.FileNum] = true
			e.walsCreated = append(e.walsCreated, i.FileNum)
		},
		WALDeleted: func(i WALDeleteInfo) {
			e.mu.Lock()
			defer e.mu.Unlock()
			if _, err := e.fs.Stat(i.Path); i.Err != nil || !errors.Is(err, fs.ErrNotExist) {
				e.t.Errorf("WALDeleted %+v: the file is still there: %v", i, err)
			}
			delete(e.wals, i.FileNum)
			e.walsGone = append(e.walsGone, i.FileNum)
		},
		WriteStallBegin: func(i WriteStallBeginInfo) {
			e.mu.Lock()
			e.stalls = append(e.stalls, i.Reason)
			e.mu.Unlock()
			select {
			case e.stalled <- i.Reason: // the first, for a test waiting for it
			default:
			}
		},
		WriteStallEnd: func(i WriteStallEndInfo) {
			e.mu.Lock()
			defer e.mu.Unlock()
			if i.Duration <= 0 {
				e.t.Errorf("WriteStallEnd with a duration of %v", i.Duration)
			}
			e.stallEnds++
		},
		BackgroundError: func(err error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.bgErrs = append(e.bgErrs, err)
		},
	}
}

// take returns the table events since the last take.
func (e *fileEvents) take() (created, deleted []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	created, deleted = e.created, e.deleted
	e.created, e.deleted = nil, nil
	return created, deleted
}

// matchesDir checks that the tables and WALs the events say exist are the
// ones in the directory, and the tables those of db's version.
func (e *fileEvents) matchesDir(db *DB) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	var tables, wals []uint64
	for _, p := range filesOf(e.t, e.fs, "db", fileTypeTable) {
		_, num, _ := parseFileName(p[len("db/"):])
		tables = append(tables, num)
	}
	for _, p := range filesOf(e.t, e.fs, "db", fileTypeLog) {
		_, num, _ := parseFileName(p[len("db/"):])
		wals = append(wals, num)
	}
	if got := slices.Sorted(maps.Keys(e.tables)); !slices.Equal(got, tables) {
		t := e.t
		t.Errorf("tables created and not deleted, per the events: %v; in the directory: %v", got, tables)
	}
	if got := slices.Sorted(maps.Keys(e.wals)); !slices.Equal(got, wals) {
		e.t.Errorf("WALs created and not deleted, per the events: %v; in the directory: %v", got, wals)
	}
	var live []uint64
	for _, level := range db.Tables() {
		for _, ti := range level {
			live = append(live, ti.FileNum)
		}
	}
	slices.Sort(live)
	if !slices.Equal(live, tables) {
		e.t.Errorf("live tables %v, in the directory %v", live, tables)
	}
}

// TestEventsFiles: every table and WAL created or deleted by flushes,
// compactions and recovery is reported, with its reason, level and size,
// so that the events account for the directory's tables and WALs.
func TestEventsFiles(t *testing.T) {
	mem := vfs.NewMem()
	ev := newFileEvents(t, mem)
	opts := &Options{FS: mem, DisableAutomaticCompactions: true, TargetFileSize: 4 << 10, EventListener: ev.listener()}
	db := mustOpen(t, "db", opts)
	if len(ev.walsCreated) != 1 {
		t.Fatalf("Open of a new store created WALs %v, want one", ev.walsCreated)
	}
	expect := func(what string, created, deleted []string) {
		t.Helper()
		c, d := ev.take()
		slices.Sort(d) // the deleter goroutine removes them in any order
		if !slices.Equal(c, created) || !slices.Equal(d, deleted) {
			t.Errorf("%s: created %q, deleted %q; want %q, %q", what, c, d, created, deleted)
		}
		ev.matchesDir(db)
	}
	tableNames := func(reason string, level int) []string {
		var s []string
		for _, ti := range db.Tables()[level] {
			s = append(s, fmt.Sprintf("%s L%d:%d", reason, level, ti.FileNum))
		}
		return s
	}
	numbers := func(reason string, names []string) []string {
		var s []string
		for _, n := range names {
			s = append(s, reason+" "+n[strings.Index(n, ":")+1:])
		}
		return s
	}

	putN(t, db, 0, 300, "first")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	first := tableNames(TableFlush, 0)
	expect("flush", first, nil)
	if len(ev.walsCreated) != 2 || !slices.Equal(ev.walsGone, ev.walsCreated[:1]) {
		t.Errorf("after a flush: WALs created %v, deleted %v; want the first replaced", ev.walsCreated, ev.walsGone)
	}
	putN(t, db, 200, 500, "second")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	second := tableNames(TableFlush, 0)[:1] // newest first
	expect("second flush", second, nil)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	bottom := tableNames(TableCompaction, 6)
	if len(bottom) < 2 {
		t.Fatalf("want several tables from the compaction, have %v", bottom)
	}
	expect("compaction", bottom, slices.Sorted(slices.Values(numbers(TableObsolete, append(first, second...)))))

	// Recovery: the WAL's writes become a table, the old WAL goes, and a
	// table in no version is deleted.
	putN(t, db, 0, 10, "logged")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, mem, "db/000999.sst", []byte("orphan"))
	ev.tables[999] = true // as if the DB had made it
	db = mustOpen(t, "db", opts)
	c, d := ev.take()
	if len(c) != 1 || !strings.HasPrefix(c[0], TableRecovery+" L0:") || !slices.Equal(d, []string{TableObsolete + " 999"}) {
		t.Errorf("recovery: created %q, deleted %q; want one recovery table, the orphan deleted", c, d)
	}
	ev.matchesDir(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEventsFailedCompaction: a compaction output written whole, and then
// removed because the compaction failed, is reported created and then
// deleted as failed; the failure is the background error, reported once.
func TestEventsFailedCompaction(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	ev := newFileEvents(t, efs)
	db := mustOpen(t, "db", &Options{FS: efs, DisableAutomaticCompactions: true, TargetFileSize: 4 << 10, EventListener: ev.listener()})
	putN(t, db, 0, 500, "v")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	ev.take()
	var creates int
	efs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpCreate && strings.HasSuffix(path, ".sst") {
			if creates++; creates == 2 {
				return vfs.ErrInjected
			}
		}
		return nil
	})
	err := db.Compact()
	if !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Compact: %v, want the injected error", err)
	}
	c, d := ev.take()
	if len(c) != 1 || !strings.HasPrefix(c[0], TableCompaction+" L6:") || !slices.Equal(d, numbers1(TableFailed, c[0])) {
		t.Errorf("failed compaction: created %q, deleted %q; want its first output created, then deleted as failed", c, d)
	}
	if err := db.Put([]byte("k"), nil); !errors.Is(err, vfs.ErrInjected) {
		t.Errorf("Put after the failure: %v, want the background error", err)
	}
	if len(ev.bgErrs) != 1 || !errors.Is(ev.bgErrs[0], vfs.ErrInjected) {
		t.Errorf("BackgroundError calls: %v, want the injected error once", ev.bgErrs)
	}
	efs.SetInjector(nil)
	db.Close()
}

// numbers1 is "reason num" for the table named in a created event.
func numbers1(reason, created string) []string {
	return []string{reason + " " + created[strings.Index(created, ":")+1:]}
}

// TestEventsWriteStall: writes that stop for full memtables, and for an L0
// at its stop threshold, report the stall's start, with its reason, and its
// end. Flushes and compactions are held at the creation of their table
// until the stall has begun.
func TestEventsWriteStall(t *testing.T) {
	for _, c := range []struct {
		name, reason string
		opts         Options
	}{
		{"memtables", "memtables: 1 wait for a flush", Options{MaxImmutableMemTables: 1, DisableAutomaticCompactions: true}},
		{"L0", "L0: 3 tables wait for a compaction", Options{L0CompactionThreshold: 2, L0StopWritesThreshold: 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			// Three L0 tables over the same keys (no trivial move can
			// take them down), made with compactions off.
			db := mustOpen(t, "db", &Options{FS: mem, DisableAutomaticCompactions: true})
			for i := range 3 {
				putN(t, db, 0, 100, fmt.Sprint(i))
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			efs, release := holdFlushes(mem)
			ev := newFileEvents(t, efs)
			ev.stalled = make(chan string, 1)
			opts := c.opts
			opts.FS, opts.MemTableSize, opts.EventListener = efs, 16<<10, ev.listener()
			db = mustOpen(t, "db", &opts)
			done := make(chan error, 1)
			go func() {
				// Enough for three memtables: the second rotation (the
				// first, for L0) waits.
				value := strings.Repeat("x", 1000)
				for i := range 60 {
					if err := db.Put(fmt.Appendf(nil, "stall%03d", i), []byte(value)); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			var reason string
			select {
			case reason = <-ev.stalled:
			case err := <-done:
				t.Fatalf("the writes ended (%v) without a stall", err)
			case <-time.After(2 * time.Minute):
				// Not a timing assertion: a guard against hanging when
				// WriteStallBegin is not called, since the writer stalls
				// for good until release (60 small writes take far less).
				close(release)
				t.Fatalf("no WriteStallBegin")
			}
			if !strings.HasPrefix(reason, c.reason) {
				t.Errorf("stall reason %q, want %q...", reason, c.reason)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			ev.mu.Lock()
			stalls, ends := len(ev.stalls), ev.stallEnds
			ev.mu.Unlock()
			if stalls == 0 || ends != stalls {
				t.Errorf("%d stalls began, %d ended", stalls, ends)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
