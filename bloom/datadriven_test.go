package bloom

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/filtertest"
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
	var filter filter.Filter
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
			for _, h := range filtertest.InputHashes(t, d) {
				w.AddHash(h)
			}
			data = filtertest.Finish(t, w)
			var err error
			if filter, err = NewPolicy(bpk).Decode(data); err != nil {
				t.Fatal(err)
			}
			return describe(t, data)

		case "probe":
			return filtertest.Probe(t, d, filter)

		case "hex":
			return filtertest.Hex(data)

		case "decode":
			b := filtertest.ParseHex(t, d.Input)
			if _, err := NewPolicy(10).Decode(b); err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			return describe(t, b)
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
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
