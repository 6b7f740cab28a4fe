package base

import (
	"errors"
	"slices"
	"testing"
)

func TestInternalKeyOrder(t *testing.T) {
	// In sorted order: user key ascending, then newest first.
	keys := []InternalKey{
		MakeInternalKey([]byte(""), 5, KindSet),
		MakeInternalKey([]byte("a"), 9, KindSet),
		MakeInternalKey([]byte("a"), 7, KindSet),
		MakeInternalKey([]byte("a"), 7, KindDelete),
		MakeInternalKey([]byte("a"), 1, KindSet),
		MakeInternalKey([]byte("a\x00"), 100, KindSet),
		MakeInternalKey([]byte("b"), 2, KindDelete),
	}
	shuffled := slices.Clone(keys)
	slices.Reverse(shuffled)
	slices.SortFunc(shuffled, Compare)
	for i := range keys {
		if Compare(keys[i], shuffled[i]) != 0 {
			t.Fatalf("position %d: got %s, want %s", i, shuffled[i], keys[i])
		}
		enc := keys[i].Append(nil)
		dec, ok := DecodeInternalKey(enc)
		if !ok || Compare(dec, keys[i]) != 0 || dec.SeqNum() != keys[i].SeqNum() || dec.Kind() != keys[i].Kind() {
			t.Fatalf("round trip of %s gave %s", keys[i], dec)
		}
	}
	// A search key at seq s sorts before every version visible at s.
	search := MakeSearchKey([]byte("a"), 7)
	if Compare(search, keys[2]) > 0 || Compare(search, keys[1]) < 0 {
		t.Fatalf("search key %s misplaced", search)
	}
	if _, ok := DecodeInternalKey([]byte("short")); ok {
		t.Fatal("decoded a key shorter than a trailer")
	}
}

func TestFormatKey(t *testing.T) {
	for in, want := range map[string]string{
		"":          `""`,
		"abc":       "abc",
		"a b":       `"a b"`,
		"\x00\xff":  `"\x00\xff"`,
		`quo"te`:    `"quo\"te"`,
		"key000123": "key000123",
	} {
		if got := FormatKey([]byte(in)); got != want {
			t.Errorf("FormatKey(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCorruptionError(t *testing.T) {
	err := CorruptionErrorf("000012.sst", 4096, "bad checksum %x", 7)
	if !errors.Is(err, ErrCorruption) {
		t.Fatal("CorruptionError does not match ErrCorruption")
	}
	if got, want := err.Error(), "shale: corruption in 000012.sst at offset 4096: bad checksum 7"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
