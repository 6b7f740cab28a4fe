package fuse

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cockroachdb/datadriven"
	tablefilter "github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/filtertest"
)

// TestDataDriven runs testdata/fuse, a worked example. Commands:
//
//	params n=<keys>        the shape of a filter for n keys
//	build                  a filter of the keys in the input,
//	build seq=(i,j)        or of keys key%010d for i ≤ x < j
//	probe                  maybe / definitely not for each input key,
//	probe seq=(i,j)        or the count of maybes among key%010d
//	hex                    the bytes of the last filter built
//	decode                 what Decode makes of the hex input
func TestDataDriven(t *testing.T) {
	var data []byte // the last filter built
	var filter tablefilter.Filter
	datadriven.RunTest(t, "testdata/fuse", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "params":
			var n int
			d.ScanArgs(t, "n", &n)
			p := paramsFor(n)
			return fmt.Sprintf("%d segments of %d slots, plus 2: %d slots, %.2f bits/key\n",
				p.segmentCount, p.segmentLength(), p.arrayLength(), float64(8*p.arrayLength())/float64(n))

		case "build":
			w := NewPolicy().NewWriter()
			for _, h := range filtertest.InputHashes(t, d) {
				w.AddHash(h)
			}
			data = filtertest.Finish(t, w)
			var err error
			if filter, err = NewPolicy().Decode(data); err != nil {
				t.Fatal(err)
			}
			return describe(data)

		case "probe":
			return filtertest.Probe(t, d, filter)

		case "hex":
			return filtertest.Hex(data)

		case "decode":
			b := filtertest.ParseHex(t, d.Input)
			if _, err := NewPolicy().Decode(b); err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			return describe(b)
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}

// describe summarizes a valid encoded filter from its header.
func describe(data []byte) string {
	length := binary.LittleEndian.Uint32(data[14:])
	if length == 0 {
		return fmt.Sprintf("no keys; %d bytes\n", len(data))
	}
	return fmt.Sprintf("seed %#016x, %d segments of %d slots, plus 2: %d slots; %d bytes\n",
		binary.LittleEndian.Uint64(data[1:]), binary.LittleEndian.Uint32(data[10:]), 1<<data[9], length, len(data))
}
