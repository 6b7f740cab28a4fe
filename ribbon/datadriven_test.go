package ribbon

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/cockroachdb/datadriven"
	tablefilter "github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/filtertest"
)

// TestDataDriven runs testdata/ribbon, a worked example. Commands:
//
//	shape n=<keys> bpk=<bits>      the shape of a filter of n keys
//	build bpk=<bits>               a filter of the keys in the input,
//	build bpk=<bits> seq=(i,j)     or of keys key%010d for i ≤ x < j
//	probe                          maybe / definitely not for each input key,
//	probe seq=(i,j)                or the count of maybes among key%010d
//	hex                            the bytes of the last filter built
//	decode                         what Decode makes of the hex input
func TestDataDriven(t *testing.T) {
	var data []byte // the last filter built
	var f tablefilter.Filter
	datadriven.RunTest(t, "testdata/ribbon", func(t *testing.T, d *datadriven.TestData) string {
		bitsPerKey := func() float64 {
			var s string
			d.ScanArgs(t, "bpk", &s)
			bpk, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			return bpk
		}
		switch d.Cmd {
		case "shape":
			var n int
			d.ScanArgs(t, "n", &n)
			s := shapeFor(n, bitsPerKey(), slack(n))
			return fmt.Sprintf("%s; %.2f slots/key, %.3f bits/key, expected rate %.4f%%\n",
				describeShape(s), float64(s.slots())/float64(n), float64(64*s.words())/float64(n), 100*expectedRate(s))

		case "build":
			w := NewPolicy(bitsPerKey()).NewWriter()
			for _, h := range filtertest.InputHashes(t, d) {
				w.AddHash(h)
			}
			var err error
			data = filtertest.Finish(t, w)
			if f, err = NewPolicy(10).Decode(data); err != nil {
				t.Fatal(err)
			}
			return describe(data)

		case "probe":
			return filtertest.Probe(t, d, f)

		case "hex":
			return filtertest.Hex(data)

		case "decode":
			b := filtertest.ParseHex(t, d.Input)
			if _, err := NewPolicy(10).Decode(b); err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			return describe(b)
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}

func describeShape(s shape) string {
	return fmt.Sprintf("%d blocks of 64 slots: %d with %d columns, %d with %d", s.blocks, s.upper, s.columns, s.blocks-s.upper, s.columns+1)
}

// describe summarizes a valid encoded filter from its header.
func describe(data []byte) string {
	f, keys, err := parse(data, "test")
	if err != nil {
		panic(err)
	}
	if f.blocks == 0 {
		return fmt.Sprintf("no keys; %d bytes\n", len(data))
	}
	return fmt.Sprintf("%d keys, seed %#016x, %s; %d bytes\n", keys, f.seed, describeShape(f.shape), len(data))
}
