package shale

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestIteratorRandomWalk moves an iterator at random (seeks, steps both
// ways, direction changes) over data spread across the memtable, L0 and
// deeper levels, with overwrites and deletes, and checks every position
// against a sorted model.
func TestIteratorRandomWalk(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		db := mustOpen(t, "db", &Options{FS: vfs.NewMem(), MemTableSize: 2 << 10, BlockSize: 128,
			DisableAutomaticCompactions: true})
		key := func() string { return fmt.Sprintf("k%02d", rng.IntN(60)) }
		// The oldest data in L6, two L0 tables above it, the newest in the
		// memtable.
		model := writeRandomly(db, rng, 60, 400, 100, 200, 300)
		lo, hi := key(), key()
		if lo > hi {
			lo, hi = hi, lo
		}
		var keys []string
		for k := range model {
			if k >= lo && k < hi {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		it := db.NewIter(&IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)})
		pos := -1 // index into keys; -1 or len(keys) when not positioned
		for step := 0; step < 300; step++ {
			var ok bool
			var op string
			switch r := rng.IntN(6); r {
			case 0:
				op, ok = "first", it.First()
				pos = 0
			case 1:
				op, ok = "last", it.Last()
				pos = len(keys) - 1
			case 2:
				k := key()
				op, ok = "seek-ge "+k, it.SeekGE([]byte(k))
				pos = sort.SearchStrings(keys, k)
			case 3:
				k := key()
				op, ok = "seek-lt "+k, it.SeekLT([]byte(k))
				pos = sort.SearchStrings(keys, k) - 1
			case 4:
				if pos < 0 || pos >= len(keys) {
					continue // stepping off the end needs a new seek
				}
				op, ok = "next", it.Next()
				pos++
			case 5:
				if pos < 0 || pos >= len(keys) {
					continue
				}
				op, ok = "prev", it.Prev()
				pos--
			}
			want := pos >= 0 && pos < len(keys)
			if ok != want || ok && (string(it.Key()) != keys[pos] || string(it.Value()) != model[keys[pos]]) {
				t.Fatalf("seed %d step %d %s in [%s,%s): got ok=%v %s=%s, want ok=%v at %d of %v",
					seed, step, op, lo, hi, ok, it.Key(), it.Value(), want, pos, keys)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
}

// staleVersionStore builds the store of issue 9's defect 3: a=1 and b=old
// compacted into one L6 table of one-key blocks, then b=new flushed to L0.
// It returns the store's FS (closed) and the name of the L6 table.
func staleVersionStore(t *testing.T) (*vfs.MemFS, string) {
	t.Helper()
	fs := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: fs, BlockSize: 16, BlockCacheSize: -1, DisableAutomaticCompactions: true})
	defer db.Close()
	for _, kv := range [][2]string{{"a", "1"}, {"b", "old"}} {
		if err := db.Put([]byte(kv[0]), []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("b"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	rs, _ := db.loadReadState(readLatest)
	defer rs.unref()
	v := rs.v
	if len(v.Levels[0]) != 1 || len(v.Levels[6]) != 1 {
		t.Fatalf("want one table in L0 and one in L6:\n%s", fs)
	}
	return fs, db.fileName(fileTypeTable, v.Levels[6][0].FileNum)
}

// TestIteratorReadErrorNotStale: when reading a block fails while the
// iterator gathers a key's versions, the iterator stops with the error; it
// never returns an older version as the current value. Going backward the
// versions of b arrive oldest first (b=old from L6, then b=new from L0), and
// stepping past b=old in L6 reads the block holding a, which fails. Each
// walk may yield correct entries before it fails, never a stale one, and
// must end with the error.
func TestIteratorReadErrorNotStale(t *testing.T) {
	want := map[string]string{"a": "1", "b": "new"}
	next, prev := (*Iterator).Next, (*Iterator).Prev
	walks := []struct {
		name  string
		start func(*Iterator) bool
		step  func(*Iterator) bool
	}{
		{"Last, Prev", (*Iterator).Last, prev},
		{"SeekLT(c), Prev", func(it *Iterator) bool { return it.SeekLT([]byte("c")) }, prev},
		{"SeekGE(b), Prev", func(it *Iterator) bool { return it.SeekGE([]byte("b")) }, prev},
		{"First, Next", (*Iterator).First, next},
		{"SeekGE(a), Next", func(it *Iterator) bool { return it.SeekGE([]byte("a")) }, next},
		{"SeekLT(b), Next", func(it *Iterator) bool { return it.SeekLT([]byte("b")) }, next},
	}
	check := func(t *testing.T, db *DB, arm func(), wantErr error) {
		for _, w := range walks {
			it := db.NewIter(nil)
			arm()
			steps := 0
			for ok := w.start(it); ok; ok = w.step(it) {
				if k, v := string(it.Key()), string(it.Value()); v != want[k] {
					t.Errorf("%s: step %d on %s=%s, want %s=%s", w.name, steps, k, v, k, want[k])
				}
				if steps++; steps > len(want) {
					t.Fatalf("%s: %d steps over %d keys", w.name, steps, len(want))
				}
			}
			if it.Valid() {
				t.Errorf("%s: Valid() after a move returned false", w.name)
			}
			if err := it.Error(); !errors.Is(err, wantErr) {
				t.Errorf("%s: Error() = %v, want %v", w.name, err, wantErr)
			}
			if err := it.Close(); !errors.Is(err, wantErr) {
				t.Errorf("%s: Close() = %v, want %v", w.name, err, wantErr)
			}
			if err := it.Error(); !errors.Is(err, ErrClosed) || !errors.Is(err, wantErr) {
				t.Errorf("%s: Error() after Close = %v, want ErrClosed and %v", w.name, err, wantErr)
			}
		}
	}
	t.Run("checksum mismatch", func(t *testing.T) {
		fs, l6 := staleVersionStore(t)
		data := readFile(t, fs, l6)
		data[1] ^= 0x40 // inside data block 0, which holds a
		writeFile(t, fs, l6, data)
		db := mustOpen(t, "db", &Options{FS: fs, BlockCacheSize: -1, DisableAutomaticCompactions: true})
		defer db.Close()
		check(t, db, func() {}, ErrCorruption)
	})
	t.Run("I/O error", func(t *testing.T) {
		fs, l6 := staleVersionStore(t)
		efs := vfs.NewErrorFS(fs)
		db := mustOpen(t, "db", &Options{FS: efs, BlockCacheSize: -1, DisableAutomaticCompactions: true})
		defer db.Close()
		// Every read of the L6 table after the first of a walk fails.
		var reads atomic.Int64
		efs.SetInjector(func(op vfs.Op, path string) error {
			if op == vfs.OpRead && path == l6 && reads.Add(1) > 1 {
				return vfs.ErrInjected
			}
			return nil
		})
		check(t, db, func() { reads.Store(0) }, vfs.ErrInjected)
	})
}

// TestIteratorUseAfterClose: an iterator used after its Close, or its DB's,
// reports ErrClosed from Error, before any move and after each; every move
// returns false and leaves it invalid, with no key; nothing panics.
func TestIteratorUseAfterClose(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem()})
	for _, k := range []string{"a", "b", "c"} {
		if err := db.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	moves := map[string]func(*Iterator) bool{
		"First":     (*Iterator).First,
		"Last":      (*Iterator).Last,
		"Next":      (*Iterator).Next,
		"Prev":      (*Iterator).Prev,
		"SeekGE(b)": func(it *Iterator) bool { return it.SeekGE([]byte("b")) },
		"SeekLT(b)": func(it *Iterator) bool { return it.SeekLT([]byte("b")) },
	}
	check := func(what string, it *Iterator) {
		t.Helper()
		if err := it.Error(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Error() = %v, want ErrClosed", what, err)
		}
		for name, move := range moves {
			if move(it) || it.Valid() || it.Key() != nil || it.Value() != nil {
				t.Errorf("%s: %s moved onto %q", what, name, it.Key())
			}
			if err := it.Error(); !errors.Is(err, ErrClosed) {
				t.Errorf("%s: Error() after %s = %v, want ErrClosed", what, name, err)
			}
		}
		if err := it.Close(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: a second Close = %v, want ErrClosed", what, err)
		}
	}
	it := db.NewIter(nil)
	if !it.SeekGE([]byte("b")) {
		t.Fatal(it.Error())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	check("after its Close", it)

	left := db.NewIter(nil)
	if !left.First() {
		t.Fatal(left.Error())
	}
	db.Close() // reports the iterator left open
	check("after the DB's Close", left)
}

// TestIteratorKeyWritable: writing into the slices Key and Value returned
// does not disturb the iteration, in either direction or when turning: the
// iterator keeps its own copy of the position (issue 9, defect 8: Next used
// the slice Key returned to skip older versions, and looped forever).
func TestIteratorKeyWritable(t *testing.T) {
	db := mustOpen(t, "db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	keys := []string{"a", "b", "c", "d"}
	for i, k := range keys {
		// Two versions of each key, so that Next has one to skip.
		db.Put([]byte(k), []byte("old"))
		db.Put([]byte(k), []byte{byte('0' + i)})
	}
	scribble := func(b []byte) {
		for i := range b {
			b[i] = 'z'
		}
	}
	it := db.NewIter(nil)
	defer it.Close()
	var got []string
	walk := func(ok bool, step func() bool) {
		for steps := 0; ok; ok = step() {
			if steps++; steps > len(keys) {
				t.Fatalf("more than %d steps over %d keys: %v", steps, len(keys), got)
			}
			got = append(got, string(it.Key())+"="+string(it.Value()))
			scribble(it.Key())
			scribble(it.Value())
		}
	}
	walk(it.First(), it.Next)
	walk(it.Last(), it.Prev)
	// Turn around after scribbling: Prev then Next, Next then Prev.
	walk(it.SeekGE([]byte("c")), func() bool {
		scribble(it.Key())
		if !it.Prev() {
			return false
		}
		scribble(it.Key())
		it.Next()
		scribble(it.Key())
		return it.Next()
	})
	want := "[a=0 b=1 c=2 d=3 d=3 c=2 b=1 a=0 c=2 d=3]"
	if fmt.Sprint(got) != want || it.Error() != nil {
		t.Fatalf("got %v, %v; want %s", got, it.Error(), want)
	}
}

// TestIteratorReadErrorSweep fails each block read of a random walk in
// turn, once, over data in the memtable, L0 and L6 with overwrites and
// deletes: every move before the failure agrees with the model, the move
// that meets it returns false with Error() set, and so does every move
// after it (an error is not forgotten when the next read succeeds).
func TestIteratorReadErrorSweep(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	efs := vfs.NewErrorFS(vfs.NewMem())
	db := mustOpen(t, "db", &Options{FS: efs, MemTableSize: 2 << 10, BlockSize: 64, BlockCacheSize: -1,
		DisableAutomaticCompactions: true})
	defer db.Close()
	model := writeRandomly(db, rng, 40, 300, 100, 200, 250)
	key := func() string { return fmt.Sprintf("k%02d", rng.IntN(40)) }
	keys := slices.Sorted(maps.Keys(model))
	type op struct {
		name string
		key  string
	}
	var ops []op
	for range 60 {
		ops = append(ops, op{[]string{"first", "last", "seek-ge", "seek-lt", "next", "prev", "next", "prev"}[rng.IntN(8)], key()})
	}
	// walk runs ops on a new iterator and returns the number of block
	// reads it made.
	walk := func(failAt int64) int64 {
		var reads atomic.Int64
		efs.SetInjector(func(o vfs.Op, path string) error {
			if o == vfs.OpRead && strings.HasSuffix(path, ".sst") && reads.Add(1) == failAt {
				return vfs.ErrInjected
			}
			return nil
		})
		defer efs.SetInjector(nil)
		it := db.NewIter(nil)
		pos := -1
		failed := false
		for i, o := range ops {
			var ok bool
			switch o.name {
			case "first":
				ok, pos = it.First(), 0
			case "last":
				ok, pos = it.Last(), len(keys)-1
			case "seek-ge":
				ok, pos = it.SeekGE([]byte(o.key)), sort.SearchStrings(keys, o.key)
			case "seek-lt":
				ok, pos = it.SeekLT([]byte(o.key)), sort.SearchStrings(keys, o.key)-1
			case "next", "prev":
				if pos < 0 || pos >= len(keys) {
					continue // off the end: the model needs a seek
				}
				if o.name == "next" {
					ok, pos = it.Next(), pos+1
				} else {
					ok, pos = it.Prev(), pos-1
				}
			}
			want := pos >= 0 && pos < len(keys) && !failed
			switch {
			case ok && (!want || string(it.Key()) != keys[pos] || string(it.Value()) != model[keys[pos]]):
				t.Fatalf("read %d fails: op %d %s %s: on %s=%s, want ok=%v at %d of %v",
					failAt, i, o.name, o.key, it.Key(), it.Value(), want, pos, keys)
			case !ok && want:
				if !errors.Is(it.Error(), vfs.ErrInjected) {
					t.Fatalf("read %d fails: op %d %s %s: not positioned, Error() = %v", failAt, i, o.name, o.key, it.Error())
				}
				failed = true
			case !ok && failed && !errors.Is(it.Error(), vfs.ErrInjected):
				t.Fatalf("read %d fails: op %d after the failure: Error() = %v", failAt, i, it.Error())
			}
		}
		if err := it.Close(); failed != (err != nil) {
			t.Fatalf("read %d fails: Close() = %v after a walk that failed: %v", failAt, err, failed)
		}
		return reads.Load()
	}
	n := walk(0)
	if n < 100 {
		t.Fatalf("the walk reads only %d blocks", n)
	}
	for failAt := int64(1); failAt <= n; failAt++ {
		walk(failAt)
	}
	t.Logf("%d ops, %d keys, %d read failures swept", len(ops), len(keys), n)
}

// writeRandomly makes n writes to db of keys k00 to k<keys-1>, a delete
// one time in four and otherwise a put of "v<i>", compacting after write
// compactAt and flushing after each write of flushAt, and returns what the
// store holds then. Errors are left for the reads that follow to find.
func writeRandomly(db *DB, rng *rand.Rand, keys, n, compactAt int, flushAt ...int) map[string]string {
	model := map[string]string{}
	for i := range n {
		k := fmt.Sprintf("k%02d", rng.IntN(keys))
		if rng.IntN(4) == 0 {
			db.Delete([]byte(k))
			delete(model, k)
		} else {
			v := fmt.Sprintf("v%d", i)
			db.Put([]byte(k), []byte(v))
			model[k] = v
		}
		switch {
		case i == compactAt:
			db.Compact()
		case slices.Contains(flushAt, i):
			db.Flush()
		}
	}
	return model
}
