package shale

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestTables checks Tables against Metrics on a store with tables in L0 and
// L6, and that the per-table filter counts add up to the store's.
func TestTables(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true, TargetFileSize: 8 << 10})
	defer db.Close()
	loadKeys(t, db, 3000) // compacted into several L6 tables
	for i := range 2 {
		for j := range 10 {
			if err := db.Put(key(1000*i+j), []byte("newer")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	levels, m := db.Tables(), db.Metrics()
	if len(levels) != NumLevels {
		t.Fatalf("Tables has %d levels, want %d", len(levels), NumLevels)
	}
	if len(levels[0]) != 2 || len(levels[6]) < 3 {
		t.Fatalf("want 2 tables in L0 and several in L6: %s", m.Shape())
	}
	var entries uint64
	for level, tables := range levels {
		var size int64
		for i, ti := range tables {
			size += int64(ti.Size)
			entries += ti.Entries
			if ti.Level != level || ti.Filter == "" || ti.FilterBitsPerKey < 5 || bytes.Compare(ti.Smallest, ti.Largest) > 0 {
				t.Errorf("L%d table %d: %+v", level, i, ti)
			}
			if i == 0 {
				continue
			}
			prev := tables[i-1]
			if level == 0 && prev.FileNum < ti.FileNum {
				t.Errorf("L0 not newest first: %06d before %06d", prev.FileNum, ti.FileNum)
			}
			if level > 0 && bytes.Compare(prev.Largest, ti.Smallest) >= 0 {
				t.Errorf("L%d not in key order: %06d ends at %q, %06d starts at %q", level, prev.FileNum, prev.Largest, ti.FileNum, ti.Smallest)
			}
		}
		if len(tables) != m.Levels[level].Files || size != m.Levels[level].Bytes {
			t.Errorf("L%d: Tables has %d tables of %d bytes, Metrics %d of %d", level, len(tables), size, m.Levels[level].Files, m.Levels[level].Bytes)
		}
	}
	if entries != 3020 {
		t.Errorf("%d entries in all, want 3020", entries)
	}

	for i := range 2000 {
		if _, err := db.Get(fmt.Appendf(nil, "key%06d~", i)); err != ErrNotFound {
			t.Fatalf("absent key: %v", err)
		}
	}
	var checks, skips, fps int64
	for _, tables := range db.Tables() {
		for _, ti := range tables {
			checks += ti.FilterChecks
			skips += ti.FilterSkips
			fps += ti.FilterFalsePositives
		}
	}
	m = db.Metrics()
	if checks != m.FilterChecks || skips != m.FilterSkips || fps != m.FilterFalsePositives || skips == 0 || fps == 0 {
		t.Errorf("tables: %d checks, %d skips, %d false positives; Metrics: %d, %d, %d; want equal, with skips and false positives",
			checks, skips, fps, m.FilterChecks, m.FilterSkips, m.FilterFalsePositives)
	}
}

// eventLog records a DB's events as lines.
type eventLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *eventLog) listener() *EventListener {
	add := func(s string) {
		l.mu.Lock()
		l.lines = append(l.lines, s)
		l.mu.Unlock()
	}
	return &EventListener{
		FlushEnd: func(fi FlushInfo) { add(fmt.Sprintf("flush -> %s", eventTables([]EventTable{fi.Output}))) },
		CompactionEnd: func(ci CompactionInfo) {
			add(fmt.Sprintf("%s %s -> %s", ci.Kind, eventTables(ci.Inputs), eventTables(ci.Outputs)))
		},
	}
}

// take returns the lines recorded since the last take.
func (l *eventLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.lines
	l.lines = nil
	return lines
}

func eventTables(ts []EventTable) string {
	var s []string
	for _, t := range ts {
		s = append(s, fmt.Sprintf("L%d:%d", t.Level, t.FileNum))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// levelTables lists Tables' tables of the given levels as eventTables does.
func levelTables(db *DB, levels ...int) string {
	var ts []EventTable
	for _, level := range levels {
		for _, ti := range db.Tables()[level] {
			ts = append(ts, EventTable{Level: level, FileNum: ti.FileNum})
		}
	}
	return eventTables(ts)
}

// TestEventListener checks that a flush, a trivial move, a compaction and a
// delete-only compaction each tell the listener which tables went in and
// which came out.
func TestEventListener(t *testing.T) {
	var log eventLog
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true, L0CompactionThreshold: 1,
		TargetFileSize: 4 << 10, EventListener: log.listener()})
	defer db.Close()
	expect := func(what string, want ...string) {
		t.Helper()
		if got := log.take(); !slices.Equal(got, want) {
			t.Errorf("%s: events %q, want %q", what, got, want)
		}
	}
	put := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := db.Put(key(i), []byte("value")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}

	put(0, 500)
	l0 := levelTables(db, 0)
	expect("flush", "flush -> "+l0)
	if _, err := db.compactOnce(); err != nil { // L0 at its threshold, L6 empty
		t.Fatal(err)
	}
	expect("move", "trivial move "+l0+" -> "+strings.ReplaceAll(l0, "L0", "L6"))

	put(250, 750)
	expect("second flush", "flush -> "+levelTables(db, 0))
	ins := levelTables(db, 0, 6)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	bottom := levelTables(db, 6)
	if strings.Count(bottom, "L6") < 2 {
		t.Fatalf("want several L6 tables, have %s", bottom)
	}
	expect("compaction", "compaction "+ins+" -> "+bottom)

	if err := db.DeleteRange(key(0), key(1000)); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	expect("flush of a range tombstone", "flush -> "+levelTables(db, 0))
	if _, err := db.compactOnce(); err != nil {
		t.Fatal(err)
	}
	expect("delete-only", "delete-only "+bottom+" -> []")
}

// TestTraceOutsideRange checks that a lookup's trace marks the tables and
// levels it skipped by key range, and only those.
func TestTraceOutsideRange(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true, TargetFileSize: 8 << 10})
	defer db.Close()
	loadKeys(t, db, 3000)
	if err := db.Put(key(10), []byte("newer")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key     string
		outside []bool // per step
	}{
		{"a", []bool{false, true, true}},                // memtable; the L0 table; L6
		{string(key(2000)), []bool{false, true, false}}, // the L6 table holding it
	} {
		tr, err := db.TraceGet([]byte(c.key))
		if err != nil {
			t.Fatal(err)
		}
		var got []bool
		for _, s := range tr.Steps {
			got = append(got, s.OutsideRange)
		}
		if !slices.Equal(got, c.outside) {
			t.Errorf("get %s: OutsideRange %v, want %v:\n%s", c.key, got, c.outside, tr)
		}
	}
}

// TestTraceKeysAreCopies writes into the table bounds a TraceGet and a
// TraceScan returned, as a caller owning them may: the store must read on
// as before. They used to alias the tables' metadata, so the write moved
// a live table's range and a Get of a key in it found nothing.
func TestTraceKeysAreCopies(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
	defer db.Close()
	for _, k := range []string{"b", "c", "d"} {
		if err := db.Put([]byte(k), []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	scramble := func(what string, smallest, largest []byte) {
		if smallest == nil || largest == nil {
			t.Fatalf("%s: no table bounds", what)
		}
		for i := range smallest {
			smallest[i] = 'z'
		}
		for i := range largest {
			largest[i] = 'a'
		}
	}
	trace, err := db.TraceGet([]byte("c"))
	if err != nil {
		t.Fatal(err)
	}
	var traced bool
	for _, s := range trace.Steps {
		if s.FileNum != 0 {
			scramble("TraceGet step "+s.Source, s.Smallest, s.Largest)
			traced = true
		}
	}
	scan, err := db.TraceScan(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scan.Steps {
		if s.FileNum != 0 {
			scramble("TraceScan step "+s.Source, s.Smallest, s.Largest)
			traced = true
		}
	}
	if !traced {
		t.Fatal("no trace step names a table")
	}
	for _, k := range []string{"b", "c", "d"} {
		if v, err := db.Get([]byte(k)); err != nil || string(v) != "v"+k {
			t.Errorf("Get(%s) after writing into a trace's keys = %q, %v; want %q", k, v, err, "v"+k)
		}
	}
	if l0 := db.Tables()[0]; len(l0) != 1 || string(l0[0].Smallest) != "b" || string(l0[0].Largest) != "d" {
		t.Errorf("L0 after writing into a trace's keys: %+v, want one table [b, d]", l0)
	}
}

// TestTablesString checks the table TableLevels.String prints: a header,
// a line per table with its level, file, key range (a long key cut, a
// range tombstone's end exclusive), size, entries, range deletions and
// filter counts, a total line, and "no tables" for an empty store.
func TestTablesString(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
	defer db.Close()
	if got := db.Tables().String(); got != "no tables\n" {
		t.Fatalf("empty store: %q", got)
	}
	loadKeys(t, db, 100)
	if err := db.Put([]byte("a\x00 key longer than twenty-four characters"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange(key(10), key(20)); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get([]byte("key000050~")); err != ErrNotFound {
		t.Fatal(err)
	}
	levels := db.Tables()
	l0, l6 := levels[0][0], levels[NumLevels-1][0]
	lines := strings.Split(strings.TrimSuffix(levels.String(), "\n"), "\n")
	want := []string{
		`^level +table +keys +size +entries +range dels +filter +checks +skips +false pos$`,
		fmt.Sprintf(`^L0 +%06d\.sst +\["a\\x00 key longer tha\.\.\. \.\. key000020\) +\d+ B +1 +1 +shale\.bloom\.v1 [\d.]+ bits/key +0 +0 +0$`, l0.FileNum),
		fmt.Sprintf(`^L6 +%06d\.sst +\[key000000 \.\. key000099\] +[\d.]+ KiB +100 +0 +shale\.bloom\.v1 [\d.]+ bits/key +1 +\d +\d$`, l6.FileNum),
		`^total +2 tables +[\d.]+ KiB +101 +1$`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), levels)
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("line %d: %q\nwant it to match %s", i, lines[i], re)
		}
	}
}
