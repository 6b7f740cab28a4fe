package shale

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shale-db/shale/rangefilter"
	"github.com/shale-db/shale/vfs"
)

// TestRangeFilterIterEquivalence applies one random history (puts, deletes,
// range deletions, flushes, compactions, snapshots) to a store with range
// filters and to one without, and checks that bounded iterations, forward,
// backward and mixed, at the latest state and at snapshots, return exactly
// the same entries. Keys are decimal (the dense map's best case) and
// longer keys that run past the key map's window. The filters must have
// ruled tables out, or the test proves nothing.
func TestRangeFilterIterEquivalence(t *testing.T) {
	for _, bits := range []int{rangefilter.MinBitsPerKey, rangefilter.DefaultBitsPerKey} {
		t.Run(fmt.Sprint(bits), func(t *testing.T) {
			testRangeFilterIterEquivalence(t, bits)
		})
	}
}

func testRangeFilterIterEquivalence(t *testing.T, bits int) {
	rng := rand.New(rand.NewPCG(uint64(bits), 11))
	open := func(rf *rangefilter.Options) *DB {
		db, err := Open("db", &Options{FS: vfs.NewMem(), BlockCacheSize: -1, BlockSize: 256,
			DisableAutomaticCompactions: true, L0CompactionThreshold: 2, LBaseMaxBytes: 4096,
			TargetFileSize: 4096, RangeFilter: rf})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	with, without := open(&rangefilter.Options{BitsPerKey: bits}), open(nil)
	defer with.Close()
	defer without.Close()
	dbs := []*DB{with, without}

	key := func() []byte {
		k := fmt.Appendf(nil, "%08d", rng.IntN(4000)*4)
		if rng.IntN(8) == 0 { // past the window: 9 bytes of many values
			k = append(k, "/"...)
			for range 9 {
				k = append(k, byte(rng.IntN(256)))
			}
		}
		return k
	}
	type snap struct{ s [2]*Snapshot }
	var snaps []snap
	for op := range 3000 {
		k, end := key(), fmt.Appendf(nil, "%08d", rng.IntN(4000)*4)
		start := k
		if bytes.Compare(start, end) > 0 {
			start, end = end, start // a reversed range is an error
		}
		for _, db := range dbs {
			var err error
			switch r := op % 97; {
			case r < 70:
				err = db.Put(k, fmt.Appendf(nil, "v%d", op))
			case r < 85:
				err = db.Delete(k)
			case r < 88:
				err = db.DeleteRange(start, end)
			case r < 92:
				err = db.Flush()
			case r < 95:
				err = db.Flush()
				if err == nil {
					settleCompactions(t, db)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if op%97 == 96 && len(snaps) < 6 {
			snaps = append(snaps, snap{[2]*Snapshot{with.NewSnapshot(), without.NewSnapshot()}})
		}
	}
	for _, db := range dbs {
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}

	for i := range 400 {
		lo := rng.IntN(4000) * 4
		lower := fmt.Appendf(nil, "%08d", lo+rng.IntN(3))
		upper := fmt.Appendf(nil, "%08d", lo+1+rng.IntN(40))
		opts := &IterOptions{LowerBound: lower, UpperBound: upper}
		var iters [2]*Iterator
		if i%3 == 0 && len(snaps) > 0 {
			s := snaps[rng.IntN(len(snaps))]
			iters = [2]*Iterator{s.s[0].NewIter(opts), s.s[1].NewIter(opts)}
		} else {
			iters = [2]*Iterator{with.NewIter(opts), without.NewIter(opts)}
		}
		moves := randomMoves(rng, lower, upper)
		got, want := replay(iters[0], moves), replay(iters[1], moves)
		if got != want {
			t.Fatalf("[%s, %s) %v:\nwith range filters:\n%s\nwithout:\n%s", lower, upper, moves, got, want)
		}
	}
	for _, s := range snaps {
		s.s[0].Close()
		s.s[1].Close()
	}
	m := with.Metrics()
	if m.RangeFilterSkips == 0 || m.RangeFilterChecks <= m.RangeFilterSkips {
		t.Fatalf("range filters: %d checks, %d skips: want skips and maybes both", m.RangeFilterChecks, m.RangeFilterSkips)
	}
	t.Logf("range filters: %d checks, %d skips, %d false positives", m.RangeFilterChecks, m.RangeFilterSkips, m.RangeFilterFalsePositives)
}

// randomMoves returns a sequence of iterator moves: a start (first, last,
// a seek inside or outside the bounds), then steps either way.
func randomMoves(rng *rand.Rand, lower, upper []byte) []string {
	starts := []string{"first", "last", "seek-ge " + string(lower), "seek-lt " + string(upper),
		"seek-ge 00000000", "seek-lt 99999999", fmt.Sprintf("seek-ge %s", upper)}
	moves := []string{starts[rng.IntN(len(starts))]}
	for range rng.IntN(12) {
		moves = append(moves, []string{"next", "prev"}[rng.IntN(2)])
	}
	return moves
}

// replay runs moves on it, closes it, and returns what each move saw.
func replay(it *Iterator, moves []string) string {
	var b strings.Builder
	for _, m := range moves {
		var ok bool
		switch arg, _ := strings.CutPrefix(m, "seek-"); {
		case m == "first":
			ok = it.First()
		case m == "last":
			ok = it.Last()
		case m == "next":
			ok = it.Next()
		case m == "prev":
			ok = it.Prev()
		case strings.HasPrefix(arg, "ge "):
			ok = it.SeekGE([]byte(arg[3:]))
		default:
			ok = it.SeekLT([]byte(arg[3:]))
		}
		if ok {
			fmt.Fprintf(&b, "%s: %q=%q\n", m, it.Key(), it.Value())
		} else {
			fmt.Fprintf(&b, "%s: -\n", m)
		}
	}
	if err := it.Close(); err != nil {
		fmt.Fprintf(&b, "close: %v\n", err)
	}
	return b.String()
}

// TestRangeFilterUserMapEngine: a store whose keys are 8-byte big-endian
// numbers uses a UserMap; bounded scans skip its tables. Reopened with a
// map of another name, the store reads the tables without their range
// filters and returns the same entries.
func TestRangeFilterUserMapEngine(t *testing.T) {
	be := func(name string) *rangefilter.UserMap {
		return &rangefilter.UserMap{Name: name, Map: func(k []byte) uint64 {
			var v uint64
			for i := range 8 {
				v <<= 8
				if i < len(k) {
					v |= uint64(k[i])
				}
			}
			return v
		}}
	}
	fs := vfs.NewMem()
	opts := &Options{FS: fs, BlockCacheSize: -1, DisableAutomaticCompactions: true,
		RangeFilter: &rangefilter.Options{Map: be("be64")}}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	key := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	for f := range 4 {
		for i := range 500 {
			if err := db.Put(key(uint64(i*4+f)*1000), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// scan scans 200 ranges of 500 values from offset past a key: none
	// holds a key for offset 1; each starts on one for offset 0.
	scan := func(db *DB, offset uint64) (found int) {
		for i := range 200 {
			lo := uint64(i*10)*1000 + offset
			it := db.NewIter(&IterOptions{LowerBound: key(lo), UpperBound: key(lo + 500)})
			if it.First() {
				found++
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		return found
	}
	if found := scan(db, 1); found != 0 {
		t.Fatalf("%d empty scans found an entry", found)
	}
	if m := db.Metrics(); m.RangeFilterSkips < 790 || m.DiskReads > 50 {
		t.Fatalf("with the map: %d range-filter skips, %d disk reads; want nearly 800 skips", m.RangeFilterSkips, m.DiskReads)
	}
	if found := scan(db, 0); found != 200 {
		t.Fatalf("with the map: %d of 200 scans that start on a key found it", found)
	}
	db.Close()
	opts.RangeFilter = &rangefilter.Options{Map: be("other")}
	if db, err = Open("db", opts); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if found := scan(db, 1); found != 0 {
		t.Fatalf("%d empty scans found an entry", found)
	}
	if found := scan(db, 0); found != 200 {
		t.Fatalf("another map's name: %d of 200 scans that start on a key found it", found)
	}
	if m := db.Metrics(); m.RangeFilterChecks != 0 {
		t.Fatalf("another map's name: %d range-filter checks, want the filters unused", m.RangeFilterChecks)
	}
}

func TestRangeFilterOptionsValidated(t *testing.T) {
	for _, o := range []*rangefilter.Options{{BitsPerKey: rangefilter.MinBitsPerKey - 1}, {Map: &rangefilter.UserMap{Name: "x"}}} {
		if db, err := Open("db", &Options{FS: vfs.NewMem(), RangeFilter: o}); err == nil {
			db.Close()
			t.Fatalf("Options.RangeFilter %+v accepted", o)
		}
	}
}
