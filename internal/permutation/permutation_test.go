package permutation

import "testing"

// TestBijection checks that a permutation visits every index below n exactly
// once, for sizes around powers of two, and is not the identity.
func TestBijection(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 1000, 1024, 1025, 5000, 65537} {
		p := New(n, 1)
		seen := make([]bool, n)
		moved := 0
		for i := range n {
			x := p.At(i)
			if x >= uint64(n) || seen[x] {
				t.Fatalf("n=%d: At(%d) = %d, out of range or repeated", n, i, x)
			}
			seen[x] = true
			if x != uint64(i) {
				moved++
			}
		}
		if n >= 1000 && moved < n*9/10 {
			t.Errorf("n=%d: only %d indexes moved", n, moved)
		}
	}
}
