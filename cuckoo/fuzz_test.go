package cuckoo

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/filtertest"
)

// FuzzUnmarshal feeds arbitrary bytes to UnmarshalBinary: it must return a
// corruption error, or a filter that probes, adds and removes without
// panicking and marshals back to the same bytes.
//
//	go test -run '^$' -fuzz FuzzUnmarshal ./cuckoo/
func FuzzUnmarshal(f *testing.F) {
	for _, bits := range []int{4, 8, 12, 16} {
		c := New(20, bits)
		for i := range 15 {
			c.Add(filtertest.Sets[1].Key(i))
		}
		data, _ := c.MarshalBinary()
		f.Add(data)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Filter
		if err := c.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error %v does not match ErrCorruption", err)
			}
			return
		}
		if again, _ := c.MarshalBinary(); !bytes.Equal(again, data) {
			t.Fatal("a decoded filter marshals to other bytes")
		}
		for i := range 32 {
			key := filtertest.Sets[0].Key(i)
			c.MayContain(key)
			c.Add(key)
			c.Remove(key)
		}
	})
}
