package rangefilter

import (
	"errors"
	"testing"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// FuzzUnmarshal feeds arbitrary bytes to every decoder of the package: each
// refuses them with an error or decodes something that answers queries
// without panicking.
func FuzzUnmarshal(f *testing.F) {
	fl, _ := New([]uint64{1, 5, 900, 1 << 40}, 8, 1)
	data, _ := fl.MarshalBinary()
	f.Add(data)
	b, _ := NewBuilder(nil)
	for _, k := range []string{"k001", "k002", "k1", "k77"} {
		b.Add([]byte(k))
	}
	data, _ = b.Finish()
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		var fl Filter
		if fl.UnmarshalBinary(data) == nil {
			fl.MayContain(0, 1000)
			fl.MayContain(1<<40, 1<<41)
		}
		var m KeyMap
		if m.UnmarshalBinary(data) == nil {
			m.Range([]byte("a"), []byte("z"))
		}
		if kf, err := Decode(data, nil); err == nil {
			kf.MayContain([]byte("k0"), []byte("k9"))
			kf.MayContain(nil, []byte{0xff, 0xff})
		}
	})
}
