package sstable

import (
	"errors"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/vfs"
)

// TestVerify damages one data block of a table of several and checks that
// Verify reports that block, at its offset, alone, and passes on every
// entry of the other blocks.
func TestVerify(t *testing.T) {
	fs := vfs.NewMem()
	var entries []kv
	for i := range 100 {
		entries = append(entries, kv{base.MakeInternalKey([]byte{'a' + byte(i/10), '0' + byte(i%10)}, base.SeqNum(i+1), base.KindSet), []byte("value")})
	}
	buildTable(t, fs, "t.sst", entries, WriterOptions{BlockSize: 100, Compression: NoCompression})
	r := openTable(t, fs, "t.sst", ReaderOptions{})
	var kept int
	problems, err := r.Verify(func(base.InternalKey, []byte) { kept++ })
	if err != nil || len(problems) != 0 || kept != len(entries) {
		t.Fatalf("intact table: problems %v, err %v, kept %d of %d", problems, err, kept, len(entries))
	}
	r.Close()
	blockOff := damageBlockOf(t, fs, "t.sst", []byte("e5"), 3, 0x40)

	r = openTable(t, fs, "t.sst", ReaderOptions{})
	defer r.Close()
	kept = 0
	keys := map[string]bool{}
	problems, err = r.Verify(func(k base.InternalKey, _ []byte) {
		kept++
		keys[string(k.UserKey)] = true
	})
	if err != nil || len(problems) != 1 {
		t.Fatalf("damaged table: problems %v, err %v; want one", problems, err)
	}
	var ce *base.CorruptionError
	if !errors.As(problems[0], &ce) || ce.File != "t.sst" || ce.Offset != int64(blockOff) {
		t.Fatalf("problem %v, want corruption in t.sst at %d", problems[0], blockOff)
	}
	if keys["e5"] || !keys["a0"] || !keys["j9"] || kept < len(entries)-20 {
		t.Fatalf("kept %d entries (e5 %v, a0 %v, j9 %v): want all but the damaged block's", kept, keys["e5"], keys["a0"], keys["j9"])
	}
}
