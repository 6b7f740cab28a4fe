package sstable

import (
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/vfs"
)

func ikey(s string, seq base.SeqNum, kind base.Kind) base.InternalKey {
	return base.MakeInternalKey([]byte(s), seq, kind)
}

// writeWithRangeDels writes entries and tombstones as table name in fs.
func writeWithRangeDels(t testing.TB, fs vfs.FS, name string, entries []kv, spans rangedel.Spans) *Properties {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, WriterOptions{FilterPolicy: bloom.NewPolicy(10)})
	for _, e := range entries {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	w.SetRangeDels(spans)
	props, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return props
}

// TestRangeDels checks a table with range tombstones: it is written in
// format version 2 (one without is still version 1), its bounds cover its
// tombstones, the reader gives them back, Verify accepts it, and Get applies
// them, also where the filter says the key is absent.
func TestRangeDels(t *testing.T) {
	fs := vfs.NewMem()
	if p := buildTable(t, fs, "plain", []kv{{key: ikey("m", 1, base.KindSet)}}, WriterOptions{}); p.FormatVersion != 1 {
		t.Fatalf("table without tombstones: format version %d, want 1", p.FormatVersion)
	}
	spans := rangedel.Fragment([]rangedel.Tombstone{
		{Start: []byte("a"), End: []byte("f"), Seq: 5},
		{Start: []byte("k"), End: []byte("z"), Seq: 9},
	})
	entries := []kv{
		{key: ikey("c", 3, base.KindSet), value: []byte("old")},
		{key: ikey("d", 7, base.KindSet), value: []byte("new")},
		{key: ikey("m", 8, base.KindSet), value: []byte("covered")},
	}
	props := writeWithRangeDels(t, fs, "t", entries, spans)
	if props.FormatVersion != formatVersionRangeDels || props.NumRangeDels != 2 {
		t.Fatalf("format version %d, %d range tombstones; want %d, 2", props.FormatVersion, props.NumRangeDels, formatVersionRangeDels)
	}
	if got, want := props.Smallest, ikey("a", 5, base.KindRangeDelete); base.Compare(got, want) != 0 {
		t.Errorf("smallest %s, want %s", got, want)
	}
	if got, want := props.Largest, base.RangeDelSentinel([]byte("z")); base.Compare(got, want) != 0 {
		t.Errorf("largest %s, want %s", got, want)
	}
	if props.SmallestSeq != 3 || props.LargestSeq != 9 {
		t.Errorf("seqnums %d-%d, want 3-9", props.SmallestSeq, props.LargestSeq)
	}

	r := openTable(t, fs, "t", ReaderOptions{Filters: []filter.Policy{bloom.NewPolicy(10)}})
	defer r.Close()
	if got := r.RangeDels().String(); got != spans.String() {
		t.Errorf("tombstones read back %s, want %s", got, spans)
	}
	if problems, err := r.Verify(nil); err != nil || len(problems) > 0 {
		t.Fatalf("Verify: %v %v", problems, err)
	}
	for _, c := range []struct {
		key   string
		seq   base.SeqNum
		found bool
		kind  base.Kind
	}{
		{"c", 10, true, base.KindRangeDelete}, // c#3 under [a,f)#5
		{"c", 4, true, base.KindSet},          // the tombstone is not visible yet
		{"d", 10, true, base.KindSet},         // d#7 is newer than the tombstone
		{"b", 10, true, base.KindRangeDelete}, // no entry; the filter says no; the tombstone applies
		{"b", 4, false, 0},
		{"m", 10, true, base.KindRangeDelete},
		{"m", 8, true, base.KindSet},
		{"g", 10, false, 0},
		{"z", 10, false, 0}, // the end is exclusive
	} {
		var tr GetTrace
		_, kind, found, err := r.Get([]byte(c.key), c.seq, &tr)
		if err != nil || found != c.found || found && kind != c.kind {
			t.Errorf("Get(%s, %d) = %v %s %v, want %v %s (%s)", c.key, c.seq, found, kind, err, c.found, c.kind, &tr)
		}
		if found && kind == base.KindRangeDelete && tr.RangeDel == nil {
			t.Errorf("Get(%s, %d): trace does not name the tombstone: %s", c.key, c.seq, &tr)
		}
	}
}

// TestRangeDelsOnly checks a table that holds tombstones and no entry.
func TestRangeDelsOnly(t *testing.T) {
	fs := vfs.NewMem()
	spans := rangedel.Fragment([]rangedel.Tombstone{{Start: []byte("b"), End: []byte("d"), Seq: 4}})
	props := writeWithRangeDels(t, fs, "t", nil, spans)
	if props.NumEntries != 0 || base.Compare(props.Smallest, ikey("b", 4, base.KindRangeDelete)) != 0 || !props.Largest.IsExclusiveSentinel() {
		t.Fatalf("properties: %s", props)
	}
	r := openTable(t, fs, "t", ReaderOptions{})
	defer r.Close()
	if _, kind, found, err := r.Get([]byte("c"), 9, nil); err != nil || !found || kind != base.KindRangeDelete {
		t.Fatalf("Get(c) = %v %s %v", found, kind, err)
	}
	if problems, err := r.Verify(nil); err != nil || len(problems) > 0 {
		t.Fatalf("Verify: %v %v", problems, err)
	}
}
