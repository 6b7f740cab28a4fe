package sstable

import (
	"fmt"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/vfs"
)

// TestFilterCountsPerTable checks that each reader counts its own filter
// outcomes, though the readers share a Stats.
func TestFilterCountsPerTable(t *testing.T) {
	fs := vfs.NewMem()
	stats := &Stats{}
	var readers []*Reader
	for table := range 2 {
		var entries []kv
		for i := range 500 {
			k := fmt.Appendf(nil, "t%d-%05d", table, i)
			entries = append(entries, kv{base.MakeInternalKey(k, 1, base.KindSet), []byte("v")})
		}
		name := fmt.Sprintf("%06d.sst", table+1)
		buildTable(t, fs, name, entries, WriterOptions{FilterPolicy: bloom.NewPolicy(4)})
		r := openTable(t, fs, name, ReaderOptions{FileNum: uint64(table + 1), Filters: []filter.Policy{bloom.NewPolicy(4)}, Stats: stats})
		defer r.Close()
		readers = append(readers, r)
	}
	// Table 1 gets 10 lookups of present keys and 2000 of absent ones;
	// table 2 gets 5 of present keys only.
	lookup := func(r *Reader, key string) {
		if _, _, _, err := r.Get([]byte(key), base.MaxSeqNum, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		lookup(readers[0], fmt.Sprintf("t0-%05d", i))
	}
	for i := range 2000 {
		lookup(readers[0], fmt.Sprintf("absent-%05d", i))
	}
	for i := range 5 {
		lookup(readers[1], fmt.Sprintf("t1-%05d", i))
	}

	checks, skips, fps := readers[0].FilterCounts()
	if checks != 2010 || skips == 0 || fps == 0 || skips+fps != 2000 {
		t.Errorf("table 1: %d checks, %d skips, %d false positives; want 2010 checks and skips+false positives = 2000, both > 0", checks, skips, fps)
	}
	checks2, skips2, fps2 := readers[1].FilterCounts()
	if checks2 != 5 || skips2 != 0 || fps2 != 0 {
		t.Errorf("table 2: %d checks, %d skips, %d false positives; want 5, 0, 0", checks2, skips2, fps2)
	}
}
