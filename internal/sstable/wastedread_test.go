package sstable

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/vfs"
)

// TestOnWastedRead checks that OnWastedRead is called for each Get that read
// a data block and found no entry for its key, and for nothing else: not
// for a present key (even one hidden from the read by its seqnum), not for
// a filter's "definitely not", not for a row cache's answer.
func TestOnWastedRead(t *testing.T) {
	fs := vfs.NewMem()
	var entries []kv
	for i := range 500 {
		entries = append(entries, kv{base.MakeInternalKey(fmt.Appendf(nil, "k%05d", 2*i), 10, base.KindSet), []byte("v")})
	}
	policy := bloom.NewPolicy(4)
	buildTable(t, fs, "filtered.sst", entries, WriterOptions{FilterPolicy: policy})
	buildTable(t, fs, "bare.sst", entries, WriterOptions{})

	for _, tc := range []struct {
		name     string
		rowCache bool
	}{{"filtered.sst", false}, {"bare.sst", false}, {"filtered.sst", true}} {
		t.Run(fmt.Sprintf("%s/rowcache=%t", tc.name, tc.rowCache), func(t *testing.T) {
			var wasted atomic.Int64
			opts := ReaderOptions{FileNum: 1, Filters: []filter.Policy{policy}, OnWastedRead: func() { wasted.Add(1) }}
			if tc.rowCache {
				opts.RowCache = NewRowCache(1 << 20)
			}
			r := openTable(t, fs, tc.name, opts)
			defer r.Close()
			get := func(key string, seq base.SeqNum) bool {
				t.Helper()
				_, _, found, err := r.Get([]byte(key), seq, nil)
				if err != nil {
					t.Fatal(err)
				}
				return found
			}
			for i := range 500 {
				if !get(fmt.Sprintf("k%05d", 2*i), base.MaxSeqNum) {
					t.Fatalf("k%05d not found", 2*i)
				}
				get(fmt.Sprintf("k%05d", 2*i), 5) // held, at a seqnum the read does not see
			}
			if n := wasted.Load(); n != 0 {
				t.Fatalf("%d wasted reads after Gets of keys the table holds", n)
			}
			// Absent keys between the table's keys, each looked up twice.
			for range 2 {
				for i := range 500 {
					if get(fmt.Sprintf("k%05d", 2*i+1), base.MaxSeqNum) {
						t.Fatalf("k%05d found", 2*i+1)
					}
				}
			}
			_, skips, fps := r.FilterCounts()
			want := int64(1000)
			switch {
			case tc.rowCache:
				want = fps / 2 // the second round's false positives are row cache hits
			case r.filter != nil:
				want = fps
			}
			if n := wasted.Load(); n != want || r.filter != nil && (skips == 0 || fps == 0) {
				t.Fatalf("%d wasted reads, %d filter skips, %d false positives; want %d wasted reads, skips and false positives both > 0", n, skips, fps, want)
			}
		})
	}
}
