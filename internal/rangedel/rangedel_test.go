package rangedel

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale/internal/base"
)

// TestDataDriven runs testdata/fragment. Commands:
//
//	fragment           fragment the input lines' tombstones, one a line as
//	                   "start end seq"; prints the spans and keeps them
//	covers             for each input line "key seq readseq": whether the
//	                   kept spans delete that version for that read
//	clip lo=K hi=K     the kept spans clipped to [lo, hi) ("-": no bound)
//	visible seq=N      the kept spans as a read at N sees them
func TestDataDriven(t *testing.T) {
	var spans Spans
	datadriven.RunTest(t, "testdata/fragment", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "fragment":
			var ts []Tombstone
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				f := strings.Fields(line)
				if len(f) != 3 {
					d.Fatalf(t, "bad line %q", line)
				}
				seq, _ := strconv.ParseUint(f[2], 10, 64)
				ts = append(ts, Tombstone{Start: []byte(f[0]), End: []byte(f[1]), Seq: base.SeqNum(seq)})
			}
			spans = Fragment(ts)
			return spansOut(spans)
		case "covers":
			var out strings.Builder
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				var key string
				var seq, read uint64
				if _, err := fmt.Sscan(line, &key, &seq, &read); err != nil {
					d.Fatalf(t, "bad line %q: %v", line, err)
				}
				fmt.Fprintf(&out, "%s#%d at %d: %v\n", key, seq, read, spans.Covers([]byte(key), base.SeqNum(seq), base.SeqNum(read)))
			}
			return out.String()
		case "clip":
			var lo, hi string
			d.ScanArgs(t, "lo", &lo)
			d.ScanArgs(t, "hi", &hi)
			bound := func(s string) []byte {
				if s == "-" {
					return nil
				}
				return []byte(s)
			}
			return spansOut(spans.Clip(bound(lo), bound(hi)))
		case "visible":
			var seq uint64
			d.ScanArgs(t, "seq", &seq)
			return spansOut(spans.Visible(base.SeqNum(seq)))
		}
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	})
}

func spansOut(s Spans) string {
	if len(s) == 0 {
		return "(none)\n"
	}
	return strings.ReplaceAll(s.String(), " ", "\n") + "\n"
}

// TestFragmentModel checks fragmentation against the definition on random
// tombstones over a small alphabet: for every key and every pair of seqnums,
// Covers agrees with a scan of the raw tombstones; the spans are sorted,
// disjoint and non-empty; they survive an encode and decode; and clipping
// then merging the pieces back gives the same answers.
func TestFragmentModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	key := func(i int) []byte { return []byte{byte('a' + i)} }
	for round := range 300 {
		var ts []Tombstone
		for range rng.IntN(8) {
			a, b := rng.IntN(10), rng.IntN(10)
			ts = append(ts, Tombstone{Start: key(a), End: key(b), Seq: base.SeqNum(1 + rng.IntN(20))})
		}
		spans := Fragment(ts)
		for i, sp := range spans {
			if bytes.Compare(sp.Start, sp.End) >= 0 || i > 0 && bytes.Compare(spans[i-1].End, sp.Start) > 0 {
				t.Fatalf("round %d: spans not fragmented: %s", round, spans)
			}
		}
		dec, err := Decode(spans.Encode(nil))
		if err != nil {
			t.Fatalf("round %d: decode: %v", round, err)
		}
		cut := key(rng.IntN(10))
		rejoined := Merge(spans.Clip(nil, cut), spans.Clip(cut, nil))
		half := len(ts) / 2
		union := Union(Fragment(ts[:half]), Fragment(ts[half:]))
		for i := 1; i < len(union); i++ {
			if bytes.Compare(union[i-1].End, union[i].Start) >= 0 {
				t.Fatalf("round %d: union %s: spans overlap or touch", round, union)
			}
		}
		for k := range 10 {
			want := false
			for _, tb := range ts {
				want = want || bytes.Compare(tb.Start, key(k)) <= 0 && bytes.Compare(key(k), tb.End) < 0
			}
			if got := union.Find(key(k)) >= 0; got != want {
				t.Fatalf("round %d: union %s holds %s: %v, want %v", round, union, key(k), got, want)
			}
		}
		for k := range 10 {
			for p := base.SeqNum(0); p <= 21; p++ {
				for _, r := range []base.SeqNum{p, 10, 21} {
					want := false
					for _, tb := range ts {
						if bytes.Compare(tb.Start, key(k)) <= 0 && bytes.Compare(key(k), tb.End) < 0 && p < tb.Seq && tb.Seq <= r {
							want = true
						}
					}
					for name, s := range map[string]Spans{"fragmented": spans, "decoded": dec, "clipped and merged": rejoined} {
						if got := s.Covers(key(k), p, r); got != want {
							t.Fatalf("round %d: %s %s: Covers(%s, %d, %d) = %v, want %v (tombstones %v)", round, name, s, key(k), p, r, got, want, ts)
						}
					}
				}
			}
		}
	}
}

// TestDecodeRefuses checks that Decode refuses sets that are not
// fragmented, and damaged bytes, rather than return them.
func TestDecodeRefuses(t *testing.T) {
	good := Spans{{Start: []byte("a"), End: []byte("c"), Seqs: []base.SeqNum{5, 3}}, {Start: []byte("d"), End: []byte("e"), Seqs: []base.SeqNum{2}}}
	bad := map[string]Spans{
		"empty range":      {{Start: []byte("c"), End: []byte("c"), Seqs: []base.SeqNum{1}}},
		"overlap":          {{Start: []byte("a"), End: []byte("c"), Seqs: []base.SeqNum{1}}, {Start: []byte("b"), End: []byte("d"), Seqs: []base.SeqNum{2}}},
		"seqs not sorted":  {{Start: []byte("a"), End: []byte("c"), Seqs: []base.SeqNum{1, 2}}},
		"repeated seq":     {{Start: []byte("a"), End: []byte("c"), Seqs: []base.SeqNum{2, 2}}},
		"zero seq":         {{Start: []byte("a"), End: []byte("c"), Seqs: []base.SeqNum{0}}},
		"no seq":           {{Start: []byte("a"), End: []byte("c")}},
		"seq out of range": {{Start: []byte("a"), End: []byte("c"), Seqs: []base.SeqNum{base.MaxSeqNum + 1}}},
	}
	if _, err := Decode(good.Encode(nil)); err != nil {
		t.Fatalf("good set: %v", err)
	}
	for name, s := range bad {
		if _, err := Decode(s.Encode(nil)); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	enc := good.Encode(nil)
	for n := range len(enc) {
		if _, err := Decode(enc[:n]); err == nil {
			t.Errorf("cut to %d bytes: decoded", n)
		}
	}
	if _, err := Decode(append(enc, 0)); err == nil {
		t.Error("trailing byte: decoded")
	}
	enc[0] = 2
	if _, err := Decode(enc); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("version 2: %v", err)
	}
}

// FuzzDecode checks that Decode never panics and that what it accepts is
// fragmented and survives an encode and decode unchanged. (Varints may be
// written in more bytes than needed, so the bytes themselves can differ.)
func FuzzDecode(f *testing.F) {
	f.Add(Spans{{Start: []byte("a"), End: []byte("c"), Seqs: []base.SeqNum{5, 3}}}.Encode(nil))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			return
		}
		for i, sp := range s {
			if bytes.Compare(sp.Start, sp.End) >= 0 || i > 0 && bytes.Compare(s[i-1].End, sp.Start) > 0 || len(sp.Seqs) == 0 {
				t.Fatalf("decoded a set that is not fragmented: %s", s)
			}
		}
		again, err := Decode(s.Encode(nil))
		if err != nil || again.String() != s.String() {
			t.Fatalf("re-encoded %s: %s, %v", s, again, err)
		}
	})
}
