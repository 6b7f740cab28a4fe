package manifest

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/shale-db/shale/internal/base"
)

func file(num uint64, lo, hi string, seqLo, seqHi base.SeqNum) *FileMeta {
	return &FileMeta{
		FileNum:     num,
		Size:        num * 100,
		Smallest:    base.MakeInternalKey([]byte(lo), seqHi, base.KindSet),
		Largest:     base.MakeInternalKey([]byte(hi), seqLo, base.KindDelete),
		SmallestSeq: seqLo,
		LargestSeq:  seqHi,
	}
}

func TestEditRoundTrip(t *testing.T) {
	e := &VersionEdit{
		NextFileNum: 42,
		LastSeqNum:  1000,
		LogNum:      40,
		Deleted:     []DeletedFile{{Level: 0, FileNum: 7}, {Level: 3, FileNum: 9}},
		Added:       []NewFile{{Level: 1, Meta: file(12, "a", "m", 5, 9)}, {Level: 6, Meta: file(13, "", "\x00\xff", 1, 2)}},
	}
	got, err := DecodeRecord(e.Encode(nil), "MANIFEST-000001")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != formatVersion || !reflect.DeepEqual(got.Edit, e) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got.Edit, e)
	}
	c, err := DecodeRecord(AppendCommit(nil), "MANIFEST-000001")
	if err != nil || c.Edit != nil || c.Version != formatVersion {
		t.Fatalf("commit record decodes as %+v, %v", c, err)
	}
}

// TestDecodeVersion1: an edit written in format version 1 (before commit
// records) still decodes; a commit record claiming version 1, or with
// anything besides the version, is corruption.
func TestDecodeVersion1(t *testing.T) {
	v1 := []byte{tagFormatVersion, formatVersion1, tagNextFileNum, 9, tagLogNum, 4}
	r, err := DecodeRecord(v1, "M")
	if err != nil || r.Version != formatVersion1 || r.Edit.NextFileNum != 9 || r.Edit.LogNum != 4 {
		t.Fatalf("version 1 edit decodes as %+v, %v", r, err)
	}
	for _, b := range [][]byte{
		{tagFormatVersion, formatVersion1, tagCommit},
		{tagFormatVersion, formatVersion, tagNextFileNum, 9, tagCommit},
		{tagFormatVersion, formatVersion, tagCommit, tagLogNum, 4},
		{tagFormatVersion, 3, tagCommit},
	} {
		if _, err := DecodeRecord(b, "M"); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("%x: %v, want ErrCorruption", b, err)
		}
	}
}

func TestApply(t *testing.T) {
	v := &Version{}
	v, err := v.Apply(&VersionEdit{Added: []NewFile{
		{0, file(1, "a", "z", 1, 10)},
		{0, file(2, "b", "c", 11, 20)},
		{1, file(4, "m", "p", 1, 1)},
		{1, file(3, "a", "c", 1, 1)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Levels[0][0].FileNum != 2 || v.Levels[1][0].FileNum != 3 {
		t.Fatalf("L0 must be newest first and L1 sorted by key:\n%s", v)
	}
	if f := v.FileForKey(1, []byte("n")); f == nil || f.FileNum != 4 {
		t.Fatalf("FileForKey(n) = %v", f)
	}
	if f := v.FileForKey(1, []byte("d")); f != nil {
		t.Fatalf("FileForKey(d) = %v, want none", f)
	}
	if _, err := v.Apply(&VersionEdit{Added: []NewFile{{1, file(5, "b", "n", 1, 1)}}}); err == nil {
		t.Fatal("overlapping L1 files accepted")
	}
	if _, err := v.Apply(&VersionEdit{Deleted: []DeletedFile{{2, 3}}}); err == nil {
		t.Fatal("deleting a file from the wrong level accepted")
	}
	nv, err := v.Apply(&VersionEdit{Deleted: []DeletedFile{{0, 1}}})
	if err != nil || len(nv.Levels[0]) != 1 || len(v.Levels[0]) != 2 {
		t.Fatalf("delete: %v, new %d L0 files, old %d", err, len(nv.Levels[0]), len(v.Levels[0]))
	}
}

func TestDecodeCorrupt(t *testing.T) {
	good := (&VersionEdit{NextFileNum: 3, Added: []NewFile{{1, file(2, "a", "b", 1, 2)}}}).Encode(nil)
	// A cut between two fields leaves a shorter valid edit (the MANIFEST's
	// record checksums catch that); a cut inside a field is corruption.
	errs := 0
	for i := 0; i < len(good); i++ {
		r, err := DecodeRecord(good[:i], "M")
		switch {
		case err == nil:
			if string(r.Edit.Encode(nil)) != string(good[:i]) {
				t.Fatalf("truncated to %d bytes: decoded an edit that is not those bytes", i)
			}
		case !errors.Is(err, base.ErrCorruption):
			t.Fatalf("truncated to %d bytes: %v does not match ErrCorruption", i, err)
		default:
			errs++
		}
	}
	if errs < len(good)-4 {
		t.Fatalf("only %d of %d truncations were errors", errs, len(good))
	}
}

// TestRangeDelBounds checks tables whose bounds come from range tombstones:
// an edit adding one is written in format version 3 (others stay in 2, so
// that binaries from before range deletions read them), decodes back, and a
// version 2 record with such a bound is corrupt. A largest key that is a
// sentinel is exclusive: the next table of the level may start at its user
// key.
func TestRangeDelBounds(t *testing.T) {
	a := file(2, "a", "c", 1, 2)
	a.Largest = base.RangeDelSentinel([]byte("c"))
	b := file(3, "c", "e", 3, 4)
	plain := (&VersionEdit{Added: []NewFile{{1, b}}}).Encode(nil)
	if r, err := DecodeRecord(plain, "M"); err != nil || r.Version != formatVersion {
		t.Fatalf("edit without a tombstone bound: version %d, %v; want %d", r.Version, err, formatVersion)
	}
	enc := (&VersionEdit{Added: []NewFile{{1, a}, {1, b}}}).Encode(nil)
	r, err := DecodeRecord(enc, "M")
	if err != nil || r.Version != formatVersionRangeDels || !reflect.DeepEqual(r.Edit.Added[0].Meta, a) {
		t.Fatalf("edit with a tombstone bound: version %d, %v", r.Version, err)
	}
	v, err := (&Version{}).Apply(r.Edit)
	if err != nil {
		t.Fatalf("tables [a,c) and [c,e] of one level: %v", err)
	}
	if f := v.FileForKey(1, []byte("c")); f == nil || f.FileNum != b.FileNum {
		t.Fatalf("FileForKey(c) = %v, want %v", f, b)
	}
	if a.Overlaps([]byte("c"), []byte("d")) || !a.Overlaps([]byte("b"), []byte("c")) {
		t.Fatal("an exclusive largest key counted as inclusive, or the range before it lost")
	}
	// The same bytes marked version 2 are refused.
	old := slices.Clone(enc)
	if old[1] != formatVersionRangeDels {
		t.Fatalf("version byte %d", old[1])
	}
	old[1] = formatVersion
	if _, err := DecodeRecord(old, "M"); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("version 2 record with a RANGEDEL bound: %v", err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add((&VersionEdit{NextFileNum: 3, LogNum: 2, Added: []NewFile{{1, file(2, "a", "b", 1, 2)}}}).Encode(nil))
	withSentinel := file(4, "a", "b", 1, 2)
	withSentinel.Largest = base.RangeDelSentinel([]byte("b"))
	f.Add((&VersionEdit{Added: []NewFile{{1, withSentinel}}}).Encode(nil))
	f.Add((&VersionEdit{Deleted: []DeletedFile{{6, 1}}}).Encode(nil))
	f.Add(AppendCommit(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b, "M")
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error %v does not match ErrCorruption", err)
			}
			return
		}
		if r.Edit == nil {
			if string(b) != string(AppendCommit(nil)) {
				t.Fatalf("%x decoded as a commit record", b)
			}
			return
		}
		again, err := DecodeRecord(r.Edit.Encode(nil), "M")
		if err != nil || !reflect.DeepEqual(again.Edit, r.Edit) {
			t.Fatalf("re-encoding a decoded edit: %v", err)
		}
	})
}
