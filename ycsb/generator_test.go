package ycsb

import (
	"math"
	"math/rand/v2"
	"testing"
)

const draws = 200_000

func newRNG() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

// within fails the test unless got is within tol (relative) of want.
func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*want {
		t.Errorf("%s = %.5f, want %.5f (±%.0f%%)", what, got, want, tol*100)
	}
}

// TestZipfian checks the two most popular items against their exact
// probabilities, 1/zeta(n) and 0.5^theta/zeta(n), and that every draw is in
// range and the first decade outdraws the rest.
func TestZipfian(t *testing.T) {
	const n = 1000
	z := NewZipfian(100, n, ZipfianConstant)
	rng := newRNG()
	counts := make([]int, n)
	for range draws {
		v := z.Next(rng)
		if v < 100 || v >= 100+n {
			t.Fatalf("draw %d outside [100, %d)", v, 100+n)
		}
		counts[v-100]++
	}
	zetan := zeta(0, n, ZipfianConstant, 0)
	within(t, "P(first)", float64(counts[0])/draws, 1/zetan, 0.03)
	within(t, "P(second)", float64(counts[1])/draws, math.Pow(0.5, ZipfianConstant)/zetan, 0.03)
	top10 := 0
	for _, c := range counts[:10] {
		top10 += c
	}
	// The first 10 of 1000 items hold zeta(10)/zeta(1000) of the mass.
	within(t, "P(first 10)", float64(top10)/draws, zeta(0, 10, ZipfianConstant, 0)/zetan, 0.05)
}

// TestZipfianGrows checks that growing the item count extends the sum: the
// result is the generator made for the larger count.
func TestZipfianGrows(t *testing.T) {
	grown := NewZipfian(0, 10, ZipfianConstant)
	grown.NextN(newRNG(), 5000)
	fresh := NewZipfian(0, 5000, ZipfianConstant)
	if math.Abs(grown.zetan-fresh.zetan) > 1e-9 || math.Abs(grown.eta-fresh.eta) > 1e-9 {
		t.Fatalf("grown: zetan %v eta %v; fresh: zetan %v eta %v", grown.zetan, grown.eta, fresh.zetan, fresh.eta)
	}
}

// TestScrambledZipfian checks that the popularity is spread over the range:
// the most drawn value is the hash of the big Zipfian's first item, not the
// range's first value, and it is drawn at least as often as that item alone
// (1/26.47 of the draws) but far from all the time.
func TestScrambledZipfian(t *testing.T) {
	const n = 1000
	s := NewScrambledZipfian(0, n-1)
	rng := newRNG()
	counts := make([]int, n)
	for range draws {
		v := s.Next(rng)
		if v < 0 || v >= n {
			t.Fatalf("draw %d outside [0, %d]", v, n-1)
		}
		counts[v]++
	}
	top := 0
	for v, c := range counts {
		if c > counts[top] {
			top = v
		}
	}
	if want := fnvHash64(0) % n; int64(top) != want {
		t.Errorf("most drawn value %d, want %d (the hash of item 0)", top, want)
	}
	if f := float64(counts[top]) / draws; f < 1/scrambledZeta*0.97 || f > 0.1 {
		t.Errorf("most drawn value has %.4f of the draws, want from %.4f to 0.1", f, 1/scrambledZeta)
	}
	if counts[0] > counts[top]/2 {
		t.Errorf("the first value is drawn %d times, as if unscrambled", counts[0])
	}
	// The constant is zeta(10^10, 0.99), of which the first million terms
	// are computable here: the rest must add a positive, smaller amount.
	if head := zeta(0, 1_000_000, ZipfianConstant, 0); head >= scrambledZeta || head < scrambledZeta/2 {
		t.Errorf("zeta of the first million items %.3f against the ten-billion constant %.3f", head, scrambledZeta)
	}
}

// TestLatest checks that workload D's reads favour the newest records and
// follow the inserts: the newest record is drawn with probability
// 1/zeta(n), and after more inserts the new newest one is.
func TestLatest(t *testing.T) {
	c := NewCounter(1000) // records 0..999 are written
	l := NewLatest(c)
	rng := newRNG()
	check := func(last int64) {
		t.Helper()
		newest, recent := 0, 0
		for range draws {
			v := l.Next(rng)
			if v < 1 || v > last {
				t.Fatalf("draw %d outside [1, %d]", v, last)
			}
			if v == last {
				newest++
			}
			if v > last-last/10 {
				recent++
			}
		}
		within(t, "P(newest)", float64(newest)/draws, 1/zeta(0, last, ZipfianConstant, 0), 0.03)
		if f := float64(recent) / draws; f < 0.6 {
			t.Errorf("the newest 10%% of records got %.3f of the reads, want most", f)
		}
	}
	check(999)
	for range 500 {
		c.Acknowledge(c.Next())
	}
	check(1499)
}

// TestCounter checks that Last covers only inserts acknowledged without a
// gap, whatever order they complete in.
func TestCounter(t *testing.T) {
	c := NewCounter(10)
	if c.Last() != 9 {
		t.Fatalf("Last = %d before any insert, want 9", c.Last())
	}
	a, b, d := c.Next(), c.Next(), c.Next()
	c.Acknowledge(d)
	c.Acknowledge(b)
	if c.Last() != 9 {
		t.Fatalf("Last = %d with record %d unwritten, want 9", c.Last(), a)
	}
	c.Acknowledge(a)
	if c.Last() != 12 {
		t.Fatalf("Last = %d, want 12", c.Last())
	}
}

// TestKey checks the key names against YCSB's: "user" and the FNV-1a hash
// of the record number.
func TestKey(t *testing.T) {
	for n, want := range map[int64]string{
		0: "user6284781860667377211",
		1: "user8517097267634966620",
	} {
		if got := string(Key(n)); got != want {
			t.Errorf("Key(%d) = %s, want %s", n, got, want)
		}
	}
}
