package compaction

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/itertest"
	"github.com/shale-db/shale/internal/merging"
	"github.com/shale-db/shale/internal/rangedel"
)

// TestIter runs testdata/iter. Command:
//
//	iter [snapshots=(s1,s2,...)] [elide=all|(k1,k2,...)]
//	one input entry a line, in internal-key order; and range tombstones,
//	one a line as "start-end#seq,RANGEDEL", anywhere
//
// elide lists the user keys for which no deeper level holds data; a range
// tombstone is elided only under elide=all. The output lists the entries
// written, then the range tombstones written, if any.
func TestIter(t *testing.T) {
	datadriven.RunTest(t, "testdata/iter", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "iter" {
			t.Fatalf("unknown command %q", d.Cmd)
		}
		var snapshots []base.SeqNum
		if arg, ok := d.Arg("snapshots"); ok {
			for _, s := range arg.Vals {
				n, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					t.Fatalf("bad snapshot %q", s)
				}
				snapshots = append(snapshots, base.SeqNum(n))
			}
		}
		var elide func([]byte) bool
		if arg, ok := d.Arg("elide"); ok {
			elide = func(ukey []byte) bool {
				return slices.Equal(arg.Vals, []string{"all"}) || slices.Contains(arg.Vals, string(ukey))
			}
		}
		var points []string
		var ts []rangedel.Tombstone
		for _, f := range strings.Fields(d.Input) {
			r, ok := strings.CutSuffix(f, ",RANGEDEL")
			if !ok {
				points = append(points, f)
				continue
			}
			var start, end string
			var seq uint64
			if _, err := fmt.Sscanf(strings.NewReplacer("-", " ", "#", " ").Replace(r), "%s %s %d", &start, &end, &seq); err != nil {
				t.Fatalf("bad tombstone %q: %v", f, err)
			}
			ts = append(ts, rangedel.Tombstone{Start: []byte(start), End: []byte(end), Seq: base.SeqNum(seq)})
		}
		keys, values := parseEntries(t, strings.Join(points, "\n"))
		spans := rangedel.Fragment(ts)
		it := NewIter(itertest.NewSliceIter(keys, values), spans, snapshots, elide)
		var b strings.Builder
		for ok := it.First(); ok; ok = it.Next() {
			fmt.Fprintln(&b, itertest.FormatEntry(it.Key(), it.Value()))
		}
		if err := it.Close(); err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
		}
		var elideRange func(start, end []byte) bool
		if elide != nil {
			elideRange = func(start, end []byte) bool { return elide(nil) && elide([]byte("\xff")) }
		}
		if out := CompactTombstones(spans, snapshots, elideRange); len(out) > 0 {
			fmt.Fprintf(&b, "tombstones: %s\n", out)
		}
		if b.Len() == 0 {
			return "(nothing)\n"
		}
		return b.String()
	})
}

// TestIterRandom compares the compaction iterator with a model on random
// histories: see checkIter.
func TestIterRandom(t *testing.T) {
	for seed := range uint64(10000) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			checkIter(t, rand.New(rand.NewPCG(seed, 0)))
		})
	}
}

// FuzzIter is TestIterRandom with the choices taken from the fuzzer's bytes.
func FuzzIter(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 0, 1, 1, 0, 2, 1, 2, 1, 0, 0, 1, 3, 1, 4, 1, 5, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(bytes.Repeat([]byte{1, 2, 0, 3}, 40))
	f.Add(bytes.Repeat([]byte{7, 0, 1, 1, 9, 4, 0}, 30))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkIter(t, itertest.NewByteSource(data))
	})
}

// checkIter makes a random history of a few user keys: writes, deletes and
// range deletions at distinct seqnums, the point entries spread over 1 to 3
// inputs, some live snapshots, and for each key whether a deeper level
// holds an older version of it. It compacts the inputs with a merging
// iterator and an Iter, and the range tombstones with CompactTombstones,
// and checks that every snapshot, and the latest read, sees the same value
// of every key in the output as in the input; that the output is ordered;
// and that nothing stays that could be dropped: at most one point version
// of a key per stripe, and no tombstone, point or range, in the bottom
// stripe over keys with nothing deeper.
func checkIter(t *testing.T, src itertest.Intner) {
	const maxSeq = 40
	nkeys := 1 + src.IntN(4)
	ukey := func(i int) []byte { return []byte{'a' + byte(i)} }
	deeper := make([]bool, nkeys)
	for i := range deeper {
		deeper[i] = src.IntN(2) == 0
	}
	var snapshots []base.SeqNum
	for s := range base.SeqNum(maxSeq + 2) {
		if src.IntN(5) == 0 {
			snapshots = append(snapshots, s)
		}
	}
	// Newest first, as a read wants them.
	history := make([][]base.InternalKey, nkeys)
	nchildren := 1 + src.IntN(3)
	childKeys := make([][]base.InternalKey, nchildren)
	var tombstones []rangedel.Tombstone
	for seq := base.SeqNum(maxSeq); seq > 0; seq-- {
		if src.IntN(2) == 0 {
			continue
		}
		if src.IntN(6) == 0 {
			lo := src.IntN(nkeys)
			hi := lo + 1 + src.IntN(nkeys-lo)
			tombstones = append(tombstones, rangedel.Tombstone{Start: ukey(lo), End: ukey(hi), Seq: seq})
			for i := lo; i < hi; i++ {
				history[i] = append(history[i], base.MakeInternalKey(ukey(i), seq, base.KindRangeDelete))
			}
			continue
		}
		i := src.IntN(nkeys)
		kind := base.KindSet
		if src.IntN(3) == 0 {
			kind = base.KindDelete
		}
		k := base.MakeInternalKey(ukey(i), seq, kind)
		history[i] = append(history[i], k)
		c := src.IntN(nchildren)
		childKeys[c] = append(childKeys[c], k)
	}
	children := make([]base.InternalIterator, nchildren)
	for c, keys := range childKeys {
		slices.SortFunc(keys, base.Compare)
		values := make([][]byte, len(keys))
		for j, k := range keys {
			values[j] = valueOf(k)
		}
		children[c] = itertest.NewSliceIter(keys, values)
	}

	spans := rangedel.Fragment(tombstones)
	it := NewIter(merging.NewIter(children...), spans, snapshots, func(k []byte) bool { return !deeper[k[0]-'a'] })
	output := make([][]base.InternalKey, nkeys)
	var prev base.InternalKey
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key().Clone()
		if prev.UserKey != nil && base.Compare(prev, k) >= 0 { // every user key is non-empty
			t.Fatalf("output out of order: %s after %s", k, prev)
		}
		if !bytes.Equal(it.Value(), valueOf(k)) {
			t.Fatalf("%s has value %q", k, it.Value())
		}
		output[k.UserKey[0]-'a'] = append(output[k.UserKey[0]-'a'], k)
		prev = k
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// The range tombstones written, as each key's versions.
	noneDeeper := func(start, end []byte) bool {
		for i := start[0] - 'a'; i < end[0]-'a'; i++ {
			if deeper[i] {
				return false
			}
		}
		return true
	}
	for _, sp := range CompactTombstones(spans, snapshots, noneDeeper) {
		for _, seq := range sp.Seqs {
			stripe, _ := slices.BinarySearch(snapshots, seq)
			if stripe == 0 && noneDeeper(sp.Start, sp.End) {
				t.Fatalf("range tombstone %s#%d kept with nothing deeper (snapshots %v)", sp, seq, snapshots)
			}
			for i := sp.Start[0] - 'a'; i < sp.End[0]-'a'; i++ {
				output[i] = append(output[i], base.MakeInternalKey(ukey(int(i)), seq, base.KindRangeDelete))
			}
		}
	}

	for i := range nkeys {
		slices.SortFunc(output[i], base.Compare) // newest first
		slices.SortFunc(history[i], base.Compare)
		for _, s := range append(snapshots, base.MaxSeqNum) {
			want, got := read(history[i], deeper[i], s), read(output[i], deeper[i], s)
			if got != want {
				t.Fatalf("key %s at %d: read %q from the output, %q from the input\nsnapshots %v, deeper %t\ninput %v\noutput %v",
					ukey(i), s, got, want, snapshots, deeper[i], history[i], output[i])
			}
		}
		stripes := map[int]bool{}
		for _, k := range output[i] {
			if k.Kind() == base.KindRangeDelete {
				continue
			}
			stripe, _ := slices.BinarySearch(snapshots, k.SeqNum())
			if stripes[stripe] {
				t.Fatalf("key %s: two versions kept in stripe %d: %v (snapshots %v)", ukey(i), stripe, output[i], snapshots)
			}
			stripes[stripe] = true
			if stripe == 0 && k.Kind() == base.KindDelete && !deeper[i] {
				t.Fatalf("key %s: tombstone %s kept with nothing deeper (snapshots %v)", ukey(i), k, snapshots)
			}
		}
	}
}

func valueOf(k base.InternalKey) []byte {
	if k.Kind() == base.KindDelete {
		return nil
	}
	return fmt.Appendf(nil, "%s@%d", k.UserKey, k.SeqNum())
}

// read returns what a read at seq sees, given one key's versions newest
// first (range tombstones over the key among them, as KindRangeDelete) and
// whether a deeper level holds an older one.
func read(versions []base.InternalKey, deeper bool, seq base.SeqNum) string {
	for _, k := range versions {
		if k.Visible(seq) {
			if k.Kind() != base.KindSet {
				return "(deleted)"
			}
			return string(valueOf(k))
		}
	}
	if deeper {
		return "(deeper)"
	}
	return "(deleted)"
}

func TestIterInputError(t *testing.T) {
	// Without errors the output is a#3, b#1, c#4: dropping a#2 costs the
	// input a move too.
	keys, values := parseEntries(t, "a#3,SET:x a#2,SET:y b#1,SET:z c#4,SET:w")
	for i, want := range []int{0, 1, 1, 2, 3} {
		failAt := i + 1
		it := NewIter(&itertest.ErrIter{InternalIterator: itertest.NewSliceIter(keys, values), FailAt: failAt}, nil, nil, nil)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if n != want {
			t.Errorf("failAt %d: %d entries before the error, want %d", failAt, n, want)
		}
		if !errors.Is(it.Error(), itertest.ErrInjected) || !errors.Is(it.Close(), itertest.ErrInjected) {
			t.Errorf("failAt %d: Error() = %v", failAt, it.Error())
		}
		if it.Next() {
			t.Errorf("failAt %d: Next after an error returned true", failAt)
		}
	}
}

func TestIterCorruptInput(t *testing.T) {
	bad := base.InternalKey{UserKey: []byte("b"), Trailer: base.MakeTrailer(3, base.KindMax+1)}
	for _, keys := range [][]base.InternalKey{
		{base.MakeInternalKey([]byte("b"), 1, base.KindSet), base.MakeInternalKey([]byte("a"), 2, base.KindSet)},
		{base.MakeInternalKey([]byte("a"), 1, base.KindSet), base.MakeInternalKey([]byte("a"), 2, base.KindSet)},
		{base.MakeInternalKey([]byte("a"), 1, base.KindSet), bad},
	} {
		it := NewIter(itertest.NewSliceIter(keys, make([][]byte, len(keys))), nil, nil, nil)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if n != 1 || !errors.Is(it.Error(), base.ErrCorruption) {
			t.Errorf("%v: %d entries, error %v; want 1 entry and a corruption error", keys, n, it.Error())
		}
	}
}

// BenchmarkIter compacts 4 inputs holding 1M entries, about 4 versions of
// each of 250k keys, with 2 snapshots.
func BenchmarkIter(b *testing.B) {
	const entries, versions = 1 << 20, 4
	rng := rand.New(rand.NewPCG(1, 0))
	children := make([][]base.InternalKey, 4)
	for i := range entries {
		ukey := fmt.Appendf(nil, "key%08d", i/versions)
		kind := base.KindSet
		if rng.IntN(10) == 0 {
			kind = base.KindDelete
		}
		c := rng.IntN(len(children))
		children[c] = append(children[c], base.MakeInternalKey(ukey, base.SeqNum(entries-i), kind))
	}
	value := make([]byte, 100)
	values := make([][]byte, entries)
	for i := range values {
		values[i] = value
	}
	iters := make([]base.InternalIterator, len(children))
	snapshots := []base.SeqNum{entries / 3, 2 * entries / 3}
	b.ReportAllocs()
	for b.Loop() {
		for c, keys := range children {
			iters[c] = itertest.NewSliceIter(keys, values[:len(keys)])
		}
		it := NewIter(merging.NewIter(iters...), nil, snapshots, func([]byte) bool { return true })
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if n == 0 || it.Close() != nil {
			b.Fatal("nothing out")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/entries, "ns/entry")
}
