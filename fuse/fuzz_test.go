package fuse

import (
	"errors"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/filtertest"
)

// FuzzDecode feeds arbitrary bytes to Decode: it must return a corruption
// error or a filter that probes without panicking.
//
//	go test -run '^$' -fuzz FuzzDecode ./fuse/
func FuzzDecode(f *testing.F) {
	for _, n := range []int{0, 1, 10, 1000} {
		_, data := buildFilter(f, filtertest.Sets[1].Hashes(0, n))
		f.Add(data)
	}
	hs := filtertest.Sets[0].Hashes(0, 256)
	f.Fuzz(func(t *testing.T, data []byte) {
		filter, err := NewPolicy().Decode(data)
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error %v does not match ErrCorruption", err)
			}
			return
		}
		for _, h := range hs {
			filter.MayContain(h)
		}
	})
}
