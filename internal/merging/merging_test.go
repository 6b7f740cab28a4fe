package merging

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/itertest"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale/internal/base"
)

// TestMergingIter runs testdata/merging_iter. Commands:
//
//	define      one child a line, its entries separated by spaces; (empty) for none
//	iter        one operation a line: first, last, next, prev, seek-ge k, seek-lt k
//
// iter prints the entry each operation lands on, or "." when it lands on
// none.
func TestMergingIter(t *testing.T) {
	var children [][]string
	datadriven.RunTest(t, "testdata/merging_iter", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			children = children[:0]
			for line := range strings.Lines(d.Input) {
				children = append(children, strings.Fields(strings.TrimPrefix(line, "(empty)")))
			}
			return ""
		case "iter":
			iters := make([]base.InternalIterator, len(children))
			for i, entries := range children {
				iters[i] = itertest.NewSliceIter(parseEntries(t, strings.Join(entries, " ")))
			}
			m := NewIter(iters...)
			var b strings.Builder
			for _, line := range strings.Split(d.Input, "\n") {
				ok, known := itertest.Move(m, line)
				if !known {
					t.Fatalf("unknown operation %q", line)
				}
				fmt.Fprintf(&b, "%-12s %s\n", line+":", formatPosition(m, ok))
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}

func formatPosition(it base.InternalIterator, ok bool) string {
	if !ok {
		return "."
	}
	return itertest.FormatEntry(it.Key(), it.Value())
}

// TestMergingIterRandom compares the merging iterator with a sorted slice
// on random children and random sequences of moves: see checkMergingIter.
func TestMergingIterRandom(t *testing.T) {
	for seed := range uint64(10000) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			checkMergingIter(t, rand.New(rand.NewPCG(seed, 0)))
		})
	}
}

// FuzzMergingIter is TestMergingIterRandom with the choices taken from the
// fuzzer's bytes.
func FuzzMergingIter(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 5, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 1, 1, 2, 2, 0, 4, 5, 4, 5, 4, 5, 5, 5})
	f.Add(bytes.Repeat([]byte{3, 9, 1, 4, 4, 5, 2, 5, 4, 0}, 20))
	f.Add(bytes.Repeat([]byte{4, 7, 7, 2, 5, 5, 4, 4, 3}, 25))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkMergingIter(t, itertest.NewByteSource(data))
	})
}

// mergedEntry is an entry of the model: the sorted union of the children.
type mergedEntry struct {
	key   base.InternalKey
	value []byte
}

// checkMergingIter builds up to 4 children over a few user keys (so that
// the same user key, and even the same internal key, shows up in several
// children), then makes 60 random moves on a merging iterator and on a
// model, a sorted slice of every entry, and compares where they land.
func checkMergingIter(t *testing.T, src itertest.Intner) {
	ukeys := []string{"", "a", "b", "c", "d", "e"}
	children := make([]base.InternalIterator, src.IntN(5))
	var model []mergedEntry
	for c := range children {
		var keys []base.InternalKey
		for range src.IntN(10) {
			kind := base.Kind(src.IntN(int(base.KindMax) + 1))
			keys = append(keys, base.MakeInternalKey([]byte(ukeys[src.IntN(len(ukeys))]), base.SeqNum(src.IntN(4)), kind))
		}
		slices.SortFunc(keys, base.Compare)
		keys = slices.CompactFunc(keys, func(a, b base.InternalKey) bool { return base.Compare(a, b) == 0 })
		values := make([][]byte, len(keys))
		for i, k := range keys {
			values[i] = fmt.Appendf(nil, "child%d.%d", c, i)
			model = append(model, mergedEntry{k, values[i]})
		}
		children[c] = itertest.NewSliceIter(keys, values)
	}
	slices.SortStableFunc(model, func(a, b mergedEntry) int { return base.Compare(a.key, b.key) })
	search := func(ukey []byte) int {
		i, _ := slices.BinarySearchFunc(model, ukey, func(e mergedEntry, k []byte) int { return bytes.Compare(e.key.UserKey, k) })
		return i
	}

	m := NewIter(children...)
	pos := -1 // in the model; on an entry when 0 <= pos < len(model)
	var history []string
	for range 60 {
		seek := []byte(ukeys[src.IntN(len(ukeys))] + []string{"", "a"}[src.IntN(2)])
		var op string
		var ok bool
		onEntry := pos >= 0 && pos < len(model)
		switch src.IntN(8) {
		case 0:
			op, ok, pos = "first", m.First(), 0
		case 1:
			op, ok, pos = "last", m.Last(), len(model)-1
		case 2:
			op, ok, pos = fmt.Sprintf("seek-ge %q", seek), m.SeekGE(seek), search(seek)
		case 3:
			op, ok, pos = fmt.Sprintf("seek-lt %q", seek), m.SeekLT(seek), search(seek)-1
		case 4, 5:
			op, ok = "next", m.Next()
			if onEntry {
				pos++
			}
		default:
			op, ok = "prev", m.Prev()
			if onEntry {
				pos--
			}
		}
		history = append(history, op)
		want := pos >= 0 && pos < len(model)
		if ok != want || m.Valid() != want {
			t.Fatalf("after %v: ok %t, Valid %t; want %t", history, ok, m.Valid(), want)
		}
		if want && (base.Compare(m.Key(), model[pos].key) != 0 || !bytes.Equal(m.Value(), model[pos].value)) {
			t.Fatalf("after %v: at %s, want %s", history, itertest.FormatEntry(m.Key(), m.Value()), itertest.FormatEntry(model[pos].key, model[pos].value))
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMergingIterError injects an error into one child at each of its
// moves in turn, and checks that the merging iterator lands where the model
// says until then, and reports the error and lands nowhere from then on.
func TestMergingIterError(t *testing.T) {
	a, av := parseEntries(t, "a#5,SET:a5 c#3,SET:c3 e#1,SET:e1")
	b, bv := parseEntries(t, "b#4,SET:b4 c#2,SET:c2 d#6,SET:d6")
	model := []string{"a#5,SET:a5", "b#4,SET:b4", "c#3,SET:c3", "c#2,SET:c2", "d#6,SET:d6", "e#1,SET:e1"}
	type op struct {
		name string
		move func(base.InternalIterator) bool
		pos  func(int) int
	}
	ops := []op{
		{"first", base.InternalIterator.First, func(int) int { return 0 }},
		{"next", base.InternalIterator.Next, func(p int) int { return p + 1 }},
		{"next", base.InternalIterator.Next, func(p int) int { return p + 1 }},
		{"prev", base.InternalIterator.Prev, func(p int) int { return p - 1 }},
		{"seek-ge d", func(it base.InternalIterator) bool { return it.SeekGE([]byte("d")) }, func(int) int { return 4 }},
		{"prev", base.InternalIterator.Prev, func(p int) int { return p - 1 }},
		{"last", base.InternalIterator.Last, func(int) int { return 5 }},
		{"seek-lt c", func(it base.InternalIterator) bool { return it.SeekLT([]byte("c")) }, func(int) int { return 1 }},
		{"next", base.InternalIterator.Next, func(p int) int { return p + 1 }},
	}
	for failAt := 1; failAt < 40; failAt++ {
		m := NewIter(itertest.NewSliceIter(a, av), &itertest.ErrIter{InternalIterator: itertest.NewSliceIter(b, bv), FailAt: failAt})
		pos, failed := -1, false
		for i, o := range ops {
			ok := o.move(m)
			failed = failed || m.Error() != nil
			pos = o.pos(pos)
			switch {
			case failed && (ok || m.Valid() || !errors.Is(m.Error(), itertest.ErrInjected)):
				t.Fatalf("failAt %d, op %d (%s): ok %t, Valid %t, Error %v after the error", failAt, i, o.name, ok, m.Valid(), m.Error())
			case !failed && (!ok || itertest.FormatEntry(m.Key(), m.Value()) != model[pos]):
				t.Fatalf("failAt %d, op %d (%s): at %s (ok %t), want %s", failAt, i, o.name, formatPosition(m, ok), ok, model[pos])
			}
		}
		if err := m.Close(); failed != (err != nil) {
			t.Fatalf("failAt %d: Close() = %v", failAt, err)
		}
	}
}

// BenchmarkMergingIter measures moves over 1M entries spread over a number
// of children.
func BenchmarkMergingIter(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		const entries = 1 << 20
		rng := rand.New(rand.NewPCG(1, 0))
		keys := make([][]base.InternalKey, n)
		for i := range entries {
			c := rng.IntN(n)
			keys[c] = append(keys[c], base.MakeInternalKey(fmt.Appendf(nil, "key%08d", i), 1, base.KindSet))
		}
		m := NewIter(sliceIters(keys)...)
		b.Run(fmt.Sprintf("children=%d/next", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !m.Next() && !m.First() {
					b.Fatal("empty")
				}
			}
		})
		b.Run(fmt.Sprintf("children=%d/prev", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !m.Prev() && !m.Last() {
					b.Fatal("empty")
				}
			}
		})
		b.Run(fmt.Sprintf("children=%d/next-prev", n), func(b *testing.B) {
			m.First()
			b.ReportAllocs()
			for b.Loop() {
				m.Next()
				m.Prev()
			}
		})
		b.Run(fmt.Sprintf("children=%d/seek-ge", n), func(b *testing.B) {
			seeks := make([][]byte, 1024)
			for i := range seeks {
				seeks[i] = fmt.Appendf(nil, "key%08d", rng.IntN(entries))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				m.SeekGE(seeks[i%len(seeks)])
				i++
			}
		})
	}
}

func sliceIters(keys [][]base.InternalKey) []base.InternalIterator {
	iters := make([]base.InternalIterator, len(keys))
	for i := range keys {
		iters[i] = itertest.NewSliceIter(keys[i], make([][]byte, len(keys[i])))
	}
	return iters
}

func parseEntries(t testing.TB, s string) ([]base.InternalKey, [][]byte) {
	t.Helper()
	keys, values, err := itertest.ParseEntries(s)
	if err != nil {
		t.Fatal(err)
	}
	return keys, values
}
