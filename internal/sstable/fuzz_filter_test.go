package sstable

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/fuse"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/ribbon"
	"github.com/shale-db/shale/vfs"
)

// filterBlockPolicies are the filter formats a table can carry, as the
// engine's reader knows them.
var filterBlockPolicies = []filter.Policy{bloom.NewPolicy(10), fuse.NewPolicy(), ribbon.NewPolicy(10)}

// filterBlockEntries are the entries of FuzzFilterBlock's table: four
// prefixes ("a/" to "d/", under slashPrefix) of six keys each, every third
// one a deletion.
var filterBlockEntries = func() []kv {
	var entries []kv
	for i := range 24 {
		k := fmt.Appendf(nil, "%c/%03d", 'a'+i/6, i)
		e := kv{key: base.MakeInternalKey(k, base.SeqNum(100+i), base.KindSet), value: append([]byte("v"), k...)}
		if i%3 == 2 {
			e = kv{key: base.MakeInternalKey(k, base.SeqNum(100+i), base.KindDelete)}
		}
		entries = append(entries, e)
	}
	return entries
}()

// slashPrefix is a key's prefix up to its first '/', included; a key
// without one has none.
func slashPrefix(key []byte) int { return bytes.IndexByte(key, '/') + 1 }

// fixedPolicy writes the given bytes as the filter, whatever the keys,
// under the name of the policy it stands for, so that a reader decodes them
// with that policy.
type fixedPolicy struct {
	filter.Policy
	data []byte
}

func (p fixedPolicy) NewWriter() filter.Writer { return fixedWriter(p.data) }

type fixedWriter []byte

func (fixedWriter) AddHash(uint64)            {}
func (w fixedWriter) Finish() ([]byte, error) { return w, nil }

// recordingPolicy is a policy that keeps a copy of the filter its writer
// builds.
type recordingPolicy struct {
	filter.Policy
	out *[]byte
}

func (p recordingPolicy) NewWriter() filter.Writer {
	return recordingWriter{p.Policy.NewWriter(), p.out}
}

type recordingWriter struct {
	filter.Writer
	out *[]byte
}

func (w recordingWriter) Finish() ([]byte, error) {
	data, err := w.Writer.Finish()
	*w.out = bytes.Clone(data)
	return data, err
}

// writeFilterTable writes filterBlockEntries as table t.sst in a new MemFS
// with policy, putting the entries' prefixes in the filter too when
// prefixed.
func writeFilterTable(t testing.TB, policy filter.Policy, prefixed bool) vfs.FS {
	fs := vfs.NewMem()
	opts := WriterOptions{FilterPolicy: policy, BlockSize: 64}
	if prefixed {
		opts.PrefixLength, opts.PrefixName = slashPrefix, "slash"
	}
	buildTable(t, fs, "t.sst", filterBlockEntries, opts)
	return fs
}

// FuzzFilterBlock opens a table whose filter block holds arbitrary bytes,
// under each filter format's name, with and without prefixes in it: the
// path every bloom, fuse and ribbon filter (and prefix filter) takes from
// disk, through the reader's pinned buffer into the policy's Decode. Open
// must fail with a corruption error naming the file exactly when the
// policy's Decode refuses the bytes on their own; otherwise every Get and
// prefix check must consult the filter and answer as the filter decoded on
// its own answers: a "no" skips the table, a "maybe" reads it and finds
// exactly the entries it holds. The seeds are real filters of the table's
// keys, whole and damaged.
//
//	go test -run '^$' -fuzz '^FuzzFilterBlock$' ./internal/sstable/
func FuzzFilterBlock(f *testing.F) {
	for kind, p := range filterBlockPolicies {
		for _, prefixed := range []bool{false, true} {
			var data []byte
			writeFilterTable(f, recordingPolicy{p, &data}, prefixed)
			f.Add(uint8(kind), prefixed, data)
			f.Add(uint8(kind), prefixed, data[:len(data)-1])
			damaged := bytes.Clone(data)
			damaged[len(damaged)-2] ^= 0x40
			f.Add(uint8(kind), prefixed, damaged)
		}
	}
	f.Add(uint8(0), false, []byte{})

	absent := [][]byte{[]byte("a/"), []byte("a/999"), []byte("b/0070"), []byte("z"), {}, {0xff}}
	f.Fuzz(func(t *testing.T, kind uint8, prefixed bool, data []byte) {
		p := filterBlockPolicies[int(kind)%len(filterBlockPolicies)]
		alone, decodeErr := p.Decode(bytes.Clone(data))
		fs := writeFilterTable(t, fixedPolicy{p, data}, prefixed)
		file, err := fs.Open("t.sst")
		if err != nil {
			t.Fatal(err)
		}
		r, err := Open(file, "t.sst", ReaderOptions{Filters: filterBlockPolicies})
		if (err == nil) != (decodeErr == nil) {
			t.Fatalf("Open: %v; the policy's Decode alone: %v", err, decodeErr)
		}
		if err != nil {
			file.Close()
			checkCorruption(t, err, "t.sst")
			return
		}
		defer r.Close()

		probe := func(k []byte, e *kv) {
			var trace GetTrace
			value, kind, found, err := r.Get(k, base.MaxSeqNum, &trace)
			if err != nil {
				t.Fatalf("Get(%q): %v", k, err)
			}
			may := alone.MayContain(filter.Hash(k))
			if !trace.FilterChecked || trace.FilterMayContain != may {
				t.Fatalf("Get(%q): filter checked %v, said %v; the filter alone says %v", k, trace.FilterChecked, trace.FilterMayContain, may)
			}
			switch {
			case e == nil && found:
				t.Fatalf("Get(%q) found an entry the table does not hold", k)
			case e != nil && found != may:
				t.Fatalf("Get(%q): found %v after the filter said %v", k, found, may)
			case found && (kind != e.key.Kind() || !bytes.Equal(value, e.value)):
				t.Fatalf("Get(%q) = %q, %v; want %q, %v", k, value, kind, e.value, e.key.Kind())
			}
		}
		for i := range filterBlockEntries {
			probe(filterBlockEntries[i].key.UserKey, &filterBlockEntries[i])
		}
		for _, k := range absent {
			probe(k, nil)
		}
		for _, pre := range []string{"a/", "d/", "e/", "a"} {
			checked, may := r.MayContainPrefix("slash", []byte(pre))
			if checked != prefixed || checked && may != alone.MayContain(PrefixHash([]byte(pre))) {
				t.Fatalf("prefix %q: checked %v, may %v, in a table with prefixes %v", pre, checked, may, prefixed)
			}
		}
	})
}
