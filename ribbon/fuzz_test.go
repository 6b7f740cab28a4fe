package ribbon

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/filtertest"
)

// FuzzDecode feeds arbitrary bytes to both decoders, the table policy's
// Decode and Filter.UnmarshalBinary: each must return a corruption error,
// or a filter that probes without panicking (and, for a Filter, marshals
// back to the same bytes).
//
//	go test -run '^$' -fuzz FuzzDecode ./ribbon/
func FuzzDecode(f *testing.F) {
	for _, n := range []int{0, 1, 10, 200} {
		for _, bpk := range []float64{0, 4.5, 10} {
			_, data := buildFilter(f, bpk, filtertest.Sets[1].Hashes(0, n))
			f.Add(data)
		}
	}
	hs := filtertest.Sets[0].Hashes(0, 64)
	f.Fuzz(func(t *testing.T, data []byte) {
		decoded, err := NewPolicy(10).Decode(data)
		var standalone Filter
		uerr := standalone.UnmarshalBinary(data)
		if (err == nil) != (uerr == nil) {
			t.Fatalf("Decode says %v, UnmarshalBinary %v", err, uerr)
		}
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) || !errors.Is(uerr, base.ErrCorruption) {
				t.Fatalf("errors %v, %v do not match ErrCorruption", err, uerr)
			}
			return
		}
		for _, h := range hs {
			decoded.MayContain(h)
		}
		standalone.MayContain([]byte("k"))
		if again, _ := standalone.MarshalBinary(); !bytes.Equal(again, data) {
			t.Fatal("a decoded filter marshals to other bytes")
		}
	})
}
