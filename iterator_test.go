package shale

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
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
		model := map[string]string{}
		key := func() string { return fmt.Sprintf("k%02d", rng.IntN(60)) }
		for i := 0; i < 400; i++ {
			k := key()
			if rng.IntN(4) == 0 {
				db.Delete([]byte(k))
				delete(model, k)
			} else {
				v := fmt.Sprintf("v%d", i)
				db.Put([]byte(k), []byte(v))
				model[k] = v
			}
			switch i {
			case 100:
				db.Compact() // the oldest data in L6
			case 200, 300:
				db.Flush()
			}
		}
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
