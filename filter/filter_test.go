package filter

import (
	"slices"
	"testing"
)

// TestHashListReuse checks that a list started from released memory holds
// only its own hashes, and drops adjacent repeats only.
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
	var b HashList
	b.Add(7)
	b.Add(8)
	if want := []uint64{7, 8}; !slices.Equal(b, want) {
		t.Fatalf("a list started from released memory holds %v, want %v", b, want)
	}
}
