package bloom

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/filtertest"
)

// FuzzDecode feeds arbitrary bytes to every decoder of the package: the
// table policy's Decode and the UnmarshalBinary of Filter, Counting and
// Scalable. Each must return a corruption error or a filter that probes
// without panicking and marshals back to the same bytes.
//
//	go test -run '^$' -fuzz FuzzDecode ./bloom/
func FuzzDecode(f *testing.F) {
	small := New(100, 0.01)
	counting := NewCounting(100, 0.01)
	scalable := NewScalable(10, 0.01)
	for i := range 50 {
		small.Add(filtertest.Sets[1].Key(i))
		counting.Add(filtertest.Sets[1].Key(i))
		scalable.Add(filtertest.Sets[1].Key(i))
	}
	for _, m := range []interface{ MarshalBinary() ([]byte, error) }{small, counting, scalable} {
		data, _ := m.MarshalBinary()
		f.Add(data)
	}
	f.Add(filtertest.Finish(f, NewPolicy(10).NewWriter()))
	f.Add([]byte{})

	hs := filtertest.Sets[0].Hashes(0, 64)
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(what string, err error) bool {
			if err != nil && !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("%s: error %v does not match ErrCorruption", what, err)
			}
			return err == nil
		}
		if tf, err := NewPolicy(10).Decode(data); check("Decode", err) {
			for _, h := range hs {
				tf.MayContain(h)
			}
		}
		type codec interface {
			MarshalBinary() ([]byte, error)
			UnmarshalBinary([]byte) error
			MayContain([]byte) bool
		}
		for _, c := range []codec{new(Filter), new(Counting), new(Scalable)} {
			if !check("UnmarshalBinary", c.UnmarshalBinary(data)) {
				continue
			}
			c.MayContain([]byte("k"))
			again, _ := c.MarshalBinary()
			if !bytes.Equal(again, data) {
				t.Fatalf("%T: unmarshal then marshal changed the bytes", c)
			}
		}
	})
}
