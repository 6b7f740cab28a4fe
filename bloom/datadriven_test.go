package bloom

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/testkeys"
)

// TestDataDriven runs testdata/bloom, a worked example. Commands:
//
//	sizing n=<keys> p=<rate>        the textbook and the blocked sizing
//	build bits-per-key=<b>          a table filter of the keys in the input,
//	build bits-per-key=<b> seq=(i,j)  or of keys key%010d for i ≤ x < j
//	probe                           maybe / definitely not for each input key,
//	probe seq=(i,j)                 or the count of maybes among key%010d
//	hex                             the bytes of the last filter built
//	decode                          what Decode makes of the hex input
func TestDataDriven(t *testing.T) {
	var data []byte // the last filter built
	var filter base.Filter
	datadriven.RunTest(t, "testdata/bloom", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "sizing":
			var n int
			var p float64
			d.ScanArgs(t, "n", &n)
			d.ScanArgs(t, "p", &p)
			m := BitsForKeys(n, p)
			tk := ProbesForBitsPerKey(float64(m) / float64(n))
			bpk, bk := blockedSizing(p)
			lines := linesFor(n, bpk)
			actual := float64(lines) * lineCells / float64(n)
			return fmt.Sprintf("textbook: m=%d bits (%.3f bits/key), k=%d, expected rate %.4f%%\n"+
				"blocked:  m=%d bits (%.3f bits/key, %d lines), k=%d, expected rate %.4f%%\n",
				m, float64(m)/float64(n), tk, 100*ExpectedFalsePositiveRate(float64(m)/float64(n), tk),
				lines*lineCells, actual, lines, bk, 100*blockedRate(actual, bk))

		case "build":
			var bpk int
			d.ScanArgs(t, "bits-per-key", &bpk)
			w := NewPolicy(bpk).NewWriter()
			for _, h := range inputHashes(t, d) {
				w.AddHash(h)
			}
			data = w.Finish()
			var err error
			if filter, err = NewPolicy(bpk).Decode(data); err != nil {
				t.Fatal(err)
			}
			return describe(t, data)

		case "probe":
			if d.HasArg("seq") {
				hs := inputHashes(t, d)
				maybe := 0
				for _, h := range hs {
					if filter.MayContain(h) {
						maybe++
					}
				}
				return fmt.Sprintf("%d maybe of %d (%.3f%%)\n", maybe, len(hs), 100*float64(maybe)/float64(len(hs)))
			}
			var b strings.Builder
			for _, k := range strings.Fields(d.Input) {
				answer := "definitely not"
				if filter.MayContain(base.FilterHash([]byte(k))) {
					answer = "maybe"
				}
				fmt.Fprintf(&b, "%s: %s\n", k, answer)
			}
			return b.String()

		case "hex":
			var b strings.Builder
			for off := 0; off < len(data); off += 16 {
				fmt.Fprintf(&b, "%04x: % x\n", off, data[off:min(off+16, len(data))])
			}
			return b.String()

		case "decode":
			var s strings.Builder
			for _, tok := range strings.Fields(d.Input) {
				if !strings.HasSuffix(tok, ":") { // skip offsets
					s.WriteString(tok)
				}
			}
			b, err := hex.DecodeString(s.String())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := NewPolicy(10).Decode(b); err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			return describe(t, b)
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}

// inputHashes returns the hashes of the keys of d: key%010d for
// seq=(i,j), else the words of the input.
func inputHashes(t *testing.T, d *datadriven.TestData) []uint64 {
	if d.HasArg("seq") {
		var from, to int
		d.ScanArgs(t, "seq", &from, &to)
		return testkeys.Sets[1].Hashes(from, to)
	}
	var hs []uint64
	for _, k := range strings.Fields(d.Input) {
		hs = append(hs, base.FilterHash([]byte(k)))
	}
	return hs
}

// describe summarizes an encoded filter from its trailer: its keys, size
// and expected rate.
func describe(t *testing.T, data []byte) string {
	tr, _, err := parseTrailer(data, layoutBits, "bloom filter")
	if err != nil {
		t.Fatal(err)
	}
	bpk := float64(tr.lines) * lineCells / float64(tr.keys)
	return fmt.Sprintf("n=%d keys, L=%d lines (%.2f bits/key), k=%d, %d bytes; expected rate %.4f%%\n",
		tr.keys, tr.lines, bpk, tr.k, len(data), 100*blockedRate(bpk, tr.k))
}
