package rangefilter

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func buildKeyMap(keys [][]byte) *KeyMap {
	var b KeyMapBuilder
	for _, k := range keys {
		b.Add(k)
	}
	return b.Finish(1<<64 - 1)
}

func decimalKeys(from, step, n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%016d", from+i*step)
	}
	return keys
}

// TestKeyMapDecimal: 16-digit decimal keys whose last digits take every
// value map to their numeric value (less the common prefix's).
func TestKeyMapDecimal(t *testing.T) {
	keys := decimalKeys(0, 1, 100000)
	m := buildKeyMap(keys)
	for _, i := range []int{0, 1, 9, 10, 12345, 99999} {
		if got := m.Map(keys[i]); got != uint64(i) {
			t.Fatalf("key %s maps to %d, want %d", keys[i], got, i)
		}
	}
}

// TestKeyMapRange checks the ranks of half-open ranges [lo, hi) whose
// bounds are keys, are no key, or run past the window: every key in the
// range maps into its integer range, and a range between keys maps to
// nothing.
func TestKeyMapRange(t *testing.T) {
	keys := decimalKeys(0, 32, 1000) // multiples of 32
	m := buildKeyMap(keys)
	for _, tc := range []struct {
		lo, hi string
		a, b   uint64
		ok     bool
	}{
		// The last digit's alphabet is the even digits (radix 5), so 32
		// has rank 3*5 + 1.
		{"0000000000000032", "0000000000000033", 16, 16, true},
		{"0000000000000032", "0000000000000032", 0, 0, false}, // empty
		// 33 is no shape: its ceiling is 34's rank; 49's floor is 48's.
		{"0000000000000033", "0000000000000049", 17, 24, true},
		{"0000000000000033", "0000000000000064", 17, 31, true}, // 64 excluded
		{"0000000000000033", "0000000000000034", 0, 0, false},  // between two shapes
		{"", "0000000000000001", 0, 0, true},
		{"", "/", 0, 0, false},             // below the prefix
		{"1", "2", 0, 0, false},            // above every key
		{"000000000004", "1", 0, 0, false}, // 4 at the thousands digit: above every key
		// \xff is above every digit: its ceiling carries to 1000 (rank
		// 500); the bound 00000000000011 ends before the tens digit, so
		// its floor is 1098 (rank 549).
		{"0000000000000\xff", "00000000000011", 500, 549, true},
		{"0000000000000\xff", "0000000000001", 0, 0, false},
		// A bound longer than the window shares 32's shape, and so may a
		// key below it.
		{"0000000000000031x", "00000000000000320", 16, 16, true},
		{"00000000000000315", "00000000000000321", 16, 16, true},
		{"00000000000000319", "0000000000000031\xff", 0, 0, false},
	} {
		a, b, ok := m.Range([]byte(tc.lo), []byte(tc.hi))
		if ok != tc.ok || (ok && (a != tc.a || b != tc.b)) {
			t.Errorf("Range(%q, %q) = %d, %d, %v; want %d, %d, %v", tc.lo, tc.hi, a, b, ok, tc.a, tc.b, tc.ok)
		}
	}
}

// TestKeyMapOrder checks, on keys of mixed lengths and alphabets (short keys,
// keys longer than the window, bytes 0x00 and 0xff), that the map preserves
// order and that Range keeps every key of a byte range, for bounds that are
// keys and bounds that are not.
func TestKeyMapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte{0, 1, 'a', 'b', 'z', 0xfe, 0xff}
	randKey := func(maxLen int) []byte {
		k := []byte("pre/")
		for range rng.IntN(maxLen) {
			k = append(k, alphabet[rng.IntN(len(alphabet))])
		}
		return k
	}
	for _, maxLen := range []int{3, 8, 40} { // 40: far longer than the window
		var keys [][]byte
		for range 300 {
			keys = append(keys, randKey(maxLen))
		}
		slices.SortFunc(keys, bytes.Compare)
		keys = slices.CompactFunc(keys, bytes.Equal)
		m := buildKeyMap(keys)
		for i := 1; i < len(keys); i++ {
			if m.Map(keys[i-1]) > m.Map(keys[i]) {
				t.Fatalf("maxLen %d: %x maps above %x", maxLen, keys[i-1], keys[i])
			}
		}
		for range 2000 {
			lo, hi := randKey(maxLen+2), randKey(maxLen+2)
			if rng.IntN(3) == 0 {
				lo = slices.Clone(keys[rng.IntN(len(keys))])
			}
			if bytes.Compare(lo, hi) > 0 {
				lo, hi = hi, lo
			}
			a, b, ok := m.Range(lo, hi)
			for _, k := range keys {
				if bytes.Compare(lo, k) <= 0 && bytes.Compare(k, hi) < 0 {
					if v := m.Map(k); !ok || v < a || v > b {
						t.Fatalf("maxLen %d: key %x in [%x, %x) maps to %d, outside [%d, %d] (ok %v)", maxLen, k, lo, hi, v, a, b, ok)
					}
				}
			}
		}
	}
}

// TestKeyMapLongKeys: keys that differ only past the window collapse to
// one integer, and the filter still finds each of them.
func TestKeyMapLongKeys(t *testing.T) {
	var keys [][]byte
	for i := range 200 {
		// 20 random-byte positions overflow 64 bits of rank: the window
		// ends within them, and the decimal tail lies past it.
		k := make([]byte, 20)
		for j := range k {
			k[j] = byte(j * i)
		}
		for j := range 5 {
			keys = append(keys, fmt.Appendf(slices.Clone(k), "%04d", j))
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	m := buildKeyMap(keys)
	if len(m.digits) >= 20 {
		t.Fatalf("window of %d positions, want it to end within the random bytes", len(m.digits))
	}
	if m.Map(keys[0]) != m.Map(keys[4]) {
		t.Fatal("keys differing past the window map apart")
	}
	b, _ := NewBuilder(nil)
	for _, k := range keys {
		b.Add(k)
	}
	kf := decodeKeyFilter(t, b, nil)
	for _, k := range keys {
		if !kf.MayContain(k, append(slices.Clone(k), 0)) {
			t.Fatalf("key %x: filter says no", k)
		}
	}
}

func TestKeyMapMarshal(t *testing.T) {
	m := buildKeyMap([][]byte{[]byte("ab1"), []byte("ab22"), []byte("ab9")})
	data, _ := m.MarshalBinary()
	var g KeyMap
	if err := g.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if again, _ := g.MarshalBinary(); !bytes.Equal(again, data) {
		t.Fatal("re-encoding differs")
	}
	for i := range len(data) {
		if err := g.UnmarshalBinary(data[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", i)
		}
	}
}

// TestUserMap: a filter built with a user map answers with it, and a reader
// configured with another map (or none) gets ErrUnknownMap.
func TestUserMap(t *testing.T) {
	be := &UserMap{Name: "be64", Map: func(k []byte) uint64 {
		var v uint64
		for i := range 8 {
			v <<= 8
			if i < len(k) {
				v |= uint64(k[i])
			}
		}
		return v
	}}
	b, err := NewBuilder(&Options{BitsPerKey: 12, Map: be})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		b.Add([]byte{0, 0, 0, 0, 0, 0, byte(i), 0})
	}
	data, _ := b.Finish()
	kf, err := Decode(data, be)
	if err != nil {
		t.Fatal(err)
	}
	if !kf.MayContain([]byte{0, 0, 0, 0, 0, 0, 7, 0}, []byte{0, 0, 0, 0, 0, 0, 7, 1}) {
		t.Fatal("present key: filter says no")
	}
	for _, other := range []*UserMap{nil, {Name: "other", Map: be.Map}} {
		if _, err := Decode(data, other); err == nil || !errors.Is(err, ErrUnknownMap) {
			t.Fatalf("decoding with map %v: %v, want ErrUnknownMap", other, err)
		}
	}
}

func decodeKeyFilter(t *testing.T, b *Builder, user *UserMap) *KeyFilter {
	t.Helper()
	data, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	kf, err := Decode(data, user)
	if err != nil {
		t.Fatal(err)
	}
	return kf
}
