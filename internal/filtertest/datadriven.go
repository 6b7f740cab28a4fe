package filtertest

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale/filter"
)

// InputHashes returns the hashes of a command's keys: the sequential keys
// [i, j) for seq=(i,j), or else the keys of the input, one per field.
func InputHashes(t *testing.T, d *datadriven.TestData) []uint64 {
	if d.HasArg("seq") {
		var from, to int
		d.ScanArgs(t, "seq", &from, &to)
		return Sets[1].Hashes(from, to)
	}
	var hs []uint64
	for _, k := range strings.Fields(d.Input) {
		hs = append(hs, filter.Hash([]byte(k)))
	}
	return hs
}

// Probe answers a "probe" command: with seq=(i,j), how many of those
// sequential keys the filter may contain; otherwise "maybe" or "definitely
// not" for each key of the input.
func Probe(t *testing.T, d *datadriven.TestData, f filter.Filter) string {
	if d.HasArg("seq") {
		hs := InputHashes(t, d)
		maybe := 0
		for _, h := range hs {
			if f.MayContain(h) {
				maybe++
			}
		}
		return fmt.Sprintf("%d maybe of %d (%.3f%%)\n", maybe, len(hs), 100*float64(maybe)/float64(len(hs)))
	}
	var b strings.Builder
	for _, k := range strings.Fields(d.Input) {
		answer := "definitely not"
		if f.MayContain(filter.Hash([]byte(k))) {
			answer = "maybe"
		}
		fmt.Fprintf(&b, "%s: %s\n", k, answer)
	}
	return b.String()
}

// Hex dumps data, 16 bytes a line after the offset, for golden bytes.
func Hex(data []byte) string {
	var b strings.Builder
	for off := 0; off < len(data); off += 16 {
		fmt.Fprintf(&b, "%04x: % x\n", off, data[off:min(off+16, len(data))])
	}
	return b.String()
}

// ParseHex reads back what Hex wrote (offsets are skipped).
func ParseHex(t *testing.T, input string) []byte {
	var s strings.Builder
	for _, tok := range strings.Fields(input) {
		if !strings.HasSuffix(tok, ":") {
			s.WriteString(tok)
		}
	}
	b, err := hex.DecodeString(s.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Finish returns the filter w built, failing tb if it could not build one.
func Finish(tb testing.TB, w filter.Writer) []byte {
	tb.Helper()
	data, err := w.Finish()
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
