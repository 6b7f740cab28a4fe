package rangefilter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// fuzzRand is a generator seeded by the fuzzer's input, for the queries a
// target asks of what it decoded.
func fuzzRand(data []byte) *rand.Rand {
	h := fnv.New64a()
	h.Write(data)
	return rand.New(rand.NewPCG(h.Sum64(), 1))
}

// codesOf returns the codes an Elias-Fano sequence holds, walked one by
// one.
func codesOf(e *eliasFano) []uint64 {
	codes := make([]uint64, 0, e.n)
	pos := uint64(0)
	for i := range e.n {
		pos = e.nextOne(pos)
		codes = append(codes, e.value(i, pos))
		pos++
	}
	return codes
}

// FuzzFilterUnmarshal feeds arbitrary bytes to Filter.UnmarshalBinary. A
// filter it accepts must marshal back to the same bytes (a version 1
// filter of no codes to the one byte of version 2), hold strictly
// increasing codes below its code space, answer "is a code in [lo, hi]"
// as a plain scan of its codes does, have no false negative (the key of
// block 0 with each code is found), and answer a range that contains
// another "maybe" whenever it answers the inner one so.
//
//	go test -run '^$' -fuzz '^FuzzFilterUnmarshal$' ./rangefilter/
func FuzzFilterUnmarshal(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{0, 1, 3, 64, 300} {
		for _, bpk := range []int{MinBitsPerKey, 10, DefaultBitsPerKey} {
			keys := randomKeys(rng, n)
			if n == 300 {
				keys = sequentialKeys(1000, 3, n)
			}
			fl, _ := New(keys, bpk, rng.Uint64())
			data, _ := fl.MarshalBinary()
			f.Add(data)
		}
	}
	f.Add(oldEmptyFilter(MinBitsPerKey))
	f.Add(oldEmptyFilter(10))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fl Filter
		if fl.UnmarshalBinary(data) != nil {
			return
		}
		again, _ := fl.MarshalBinary()
		if fl.codes == nil {
			if !bytes.Equal(again, []byte{formatEmpty}) || fl.MayContain(0, 1<<64-1) || fl.MaxRange() != 0 {
				t.Fatalf("a filter of no codes marshals to %x, or answers maybe", again)
			}
			return
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("decoded filter marshals to other bytes")
		}
		codes := codesOf(fl.codes)
		for i, c := range codes {
			if c >= fl.r || i > 0 && c <= codes[i-1] {
				t.Fatalf("code %d = %d after %v, in a space of %d", i, c, codes[max(i-1, 0):i], fl.r)
			}
		}
		r := fuzzRand(data)
		for range 64 {
			lo := r.Uint64N(fl.r)
			hi := min(lo+r.Uint64N(64), fl.r-1)
			i, _ := slices.BinarySearch(codes, lo)
			if want := i < len(codes) && codes[i] <= hi; fl.codes.anyIn(lo, hi) != want {
				t.Fatalf("anyIn(%d, %d) = %v; the codes say %v", lo, hi, !want, want)
			}
		}
		q0 := fl.q(0)
		for _, c := range codes[:min(len(codes), 64)] {
			x := (c + fl.r - q0) % fl.r // the key of block 0 with code c
			if !fl.MayContain(x, x) || !fl.MayContain(x-min(x, 5), x+3) {
				t.Fatalf("key %d (code %d) is not found", x, c)
			}
		}
		for range 64 {
			lo := r.Uint64()
			hi := lo + min(r.Uint64N(2*fl.r), 1<<64-1-lo)
			if fl.MayContain(lo, hi) && !fl.MayContain(lo-min(lo, 1+r.Uint64N(9)), hi+min(1<<64-1-hi, r.Uint64N(9))) {
				t.Fatalf("[%d, %d] may hold a key, a range around it says no", lo, hi)
			}
		}
	})
}

// FuzzKeyMapUnmarshal feeds arbitrary bytes to KeyMap.UnmarshalBinary,
// with two strings to map. A map it accepts must marshal to bytes that
// decode to the same map and marshal again unchanged, map strings in order
// (x <= y gives Map(x) <= Map(y)), and give Range bounds that agree with
// Map.
//
//	go test -run '^$' -fuzz '^FuzzKeyMapUnmarshal$' ./rangefilter/
func FuzzKeyMapUnmarshal(f *testing.F) {
	for _, keys := range [][][]byte{
		nil,
		{[]byte("k")},
		decimalKeys(0, 7, 50),
		{[]byte("user1"), []byte("user22"), []byte("user3\xff"), []byte("usex")},
	} {
		var b KeyMapBuilder
		for _, k := range keys {
			b.Add(k)
		}
		for _, maxRanks := range []uint64{1 << 10, 1<<64 - 1} {
			data, _ := b.Finish(maxRanks).MarshalBinary()
			f.Add(data, []byte("0000000000000014"), []byte("user3"))
		}
	}
	f.Fuzz(func(t *testing.T, data, x, y []byte) {
		var m KeyMap
		if m.UnmarshalBinary(data) != nil {
			return
		}
		enc, _ := m.MarshalBinary()
		var m2 KeyMap
		if err := m2.UnmarshalBinary(enc); err != nil {
			t.Fatalf("a decoded map's encoding is refused: %v", err)
		}
		if again, _ := m2.MarshalBinary(); !bytes.Equal(again, enc) || !reflect.DeepEqual(m.digits, m2.digits) || !bytes.Equal(m.prefix, m2.prefix) {
			t.Fatal("a decoded map does not survive a second round")
		}
		if bytes.Compare(x, y) > 0 {
			x, y = y, x
		}
		// Strings around x and y, in order.
		strs := [][]byte{{}, x[:len(x)/2], x, append(slices.Clone(x), 0), y, append(slices.Clone(y), 0xff), {0xff, 0xff}}
		slices.SortFunc(strs, bytes.Compare)
		for i := 1; i < len(strs); i++ {
			if a, b := m.Map(strs[i-1]), m.Map(strs[i]); a > b {
				t.Fatalf("%q < %q, but they map to %d > %d", strs[i-1], strs[i], a, b)
			}
		}
		if a, b, ok := m.Range(x, y); ok && (a > b || a != m.Map(x) || b > m.Map(y)) {
			t.Fatalf("Range(%q, %q) = [%d, %d]; Map gives %d and %d", x, y, a, b, m.Map(x), m.Map(y))
		}
	})
}

// fuzzUserMap maps a key to its first 8 bytes, big-endian (shorter keys
// padded with zeros): an order-preserving map.
var fuzzUserMap = &UserMap{Name: "be64", Map: func(key []byte) uint64 {
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}}

// FuzzDecode feeds arbitrary bytes to Decode, the decoder of a table's
// range-filter block, with and without a user map, and a query range. A
// KeyFilter it accepts must answer without panicking, and answer "maybe"
// for every range around one it answers "maybe" for: the filter cannot
// lose a key by widening the query. A filter of another user map gives
// ErrUnknownMap.
//
//	go test -run '^$' -fuzz '^FuzzDecode$' ./rangefilter/
func FuzzDecode(f *testing.F) {
	for _, opts := range []*Options{nil, {BitsPerKey: MinBitsPerKey}, {Map: fuzzUserMap}} {
		for _, keys := range [][]string{
			nil,
			{"k001", "k002", "k1", "k77"},
			{"user00000064", "user00000096", "user00000128", "zz"},
		} {
			b, err := NewBuilder(opts)
			if err != nil {
				f.Fatal(err)
			}
			for _, k := range keys {
				b.Add([]byte(k))
			}
			data, _ := b.Finish()
			f.Add(data, []byte("k0"), []byte("user00000100"))
		}
	}
	f.Add(append([]byte{0, 2, 0, 0}, oldEmptyFilter(MinBitsPerKey)...), []byte("a"), []byte("b"))
	f.Fuzz(func(t *testing.T, data, lo, hi []byte) {
		kf, err := Decode(data, nil)
		user, uerr := Decode(data, fuzzUserMap)
		switch {
		case err == nil && (uerr != nil || user.user != nil):
			t.Fatalf("a filter of the dense map: with a user map given, %v", uerr)
		case errors.Is(err, ErrUnknownMap) && uerr == nil && user.user != fuzzUserMap:
			t.Fatal("a filter of a user map decoded without it")
		case err != nil && !errors.Is(err, ErrUnknownMap) && uerr == nil:
			t.Fatalf("Decode refuses the bytes without a user map (%v), but not with one", err)
		}
		for _, k := range []*KeyFilter{kf, user} {
			if k == nil {
				continue
			}
			if k.MayContain(lo, hi) {
				wlo, whi := lo[:len(lo)/2], append(slices.Clone(hi), 0xff)
				if !k.MayContain(wlo, whi) {
					t.Fatalf("[%q, %q) may hold a key; [%q, %q) around it says no", lo, hi, wlo, whi)
				}
			}
			k.MayContain(nil, []byte{0xff, 0xff})
		}
	})
}
