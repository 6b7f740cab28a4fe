package filter

import (
	"slices"
	"testing"
)

// TestHashListReuse checks that a list drops adjacent repeats only, and
// that a list started from a released one's memory holds only its own
// hashes. sync.Pool may drop what it is given (at random under -race, and
// at every collection), so the reuse is tried until it happens.
func TestHashListReuse(t *testing.T) {
	var a HashList
	for _, h := range []uint64{1, 1, 2, 3, 3, 3, 1} {
		a.Add(h)
	}
	if want := []uint64{1, 2, 3, 1}; !slices.Equal(a, want) {
		t.Fatalf("list %v, want %v", a, want)
	}
	a.Release()
	if a != nil {
		t.Fatalf("a released list holds %v", a)
	}
	const big = 1000
	for try := range 100 {
		var l HashList
		for h := range uint64(big) {
			l.Add(h)
		}
		l.Release()
		var b HashList
		b.Add(7)
		b.Add(8)
		if want := []uint64{7, 8}; !slices.Equal(b, want) {
			t.Fatalf("try %d: a new list holds %v, want %v", try, b, want)
		}
		if cap(b) >= big {
			return // started from the released list, and holds only its own
		}
		b.Release()
	}
	t.Fatal("no list was started from a released one's memory in 100 tries")
}
