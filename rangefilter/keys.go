package rangefilter

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// UserMap maps keys that are numbers already to their integers, in place
// of the dense KeyMap (for example, 8-byte big-endian IDs, or a timestamp
// behind a fixed prefix).
//
// Map must preserve order weakly over all byte strings, not only the keys:
// a <= b (bytes.Compare) implies Map(a) <= Map(b). Query bounds map through
// it too, and a map that breaks this loses keys (false negatives). Name
// identifies the map in every table written with it: a table whose map's
// name is not the one configured is read without its range filter.
type UserMap struct {
	Name string
	Map  func(key []byte) uint64
}

// Options choose the range filter of a key set.
type Options struct {
	// BitsPerKey is the filter's size: a range of L values is a false
	// positive with probability at most L/2^(BitsPerKey-2).
	// 0: DefaultBitsPerKey.
	BitsPerKey int
	// Map, when set, maps keys to integers; nil: the dense KeyMap of each
	// key set.
	Map *UserMap
}

// Builder builds a KeyFilter from byte-string keys.
type Builder struct {
	bitsPerKey int
	user       *UserMap
	// keys holds the keys back to back, each ending at its entry of ends:
	// the dense map needs all of them before it can map one.
	keys   []byte
	ends   []int
	values []uint64 // the keys' integers, for a user map
}

// NewBuilder returns a Builder; opts nil means the defaults.
func NewBuilder(opts *Options) (*Builder, error) {
	b := &Builder{bitsPerKey: DefaultBitsPerKey}
	if opts != nil {
		if opts.BitsPerKey != 0 {
			b.bitsPerKey = opts.BitsPerKey
		}
		b.user = opts.Map
	}
	if b.bitsPerKey < MinBitsPerKey || b.bitsPerKey > MaxBitsPerKey {
		return nil, fmt.Errorf("rangefilter: %d bits per key, want %d to %d", b.bitsPerKey, MinBitsPerKey, MaxBitsPerKey)
	}
	if b.user != nil && (b.user.Name == "" || b.user.Map == nil) {
		return nil, errors.New("rangefilter: a UserMap needs a name and a map")
	}
	return b, nil
}

// Add adds a key, in any order; repeats are allowed. The builder copies
// what it keeps: with the dense map, every key's bytes until Finish.
func (b *Builder) Add(key []byte) {
	if b.user != nil {
		b.values = append(b.values, b.user.Map(key))
		return
	}
	b.keys = append(b.keys, key...)
	b.ends = append(b.ends, len(b.keys))
}

// key returns the i-th key added, for the dense map.
func (b *Builder) key(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.keys[start:b.ends[i]]
}

// Finish returns the encoded KeyFilter of the keys added:
//
//	map_name_len  uvarint
//	map_name      the UserMap's name; empty for the dense KeyMap
//	map_len       uvarint, dense map only
//	map           map_len bytes, dense map only: KeyMap.MarshalBinary
//	filter        the rest: Filter.MarshalBinary
func (b *Builder) Finish() ([]byte, error) {
	var out []byte
	values := b.values
	if b.user != nil {
		out = binary.AppendUvarint(out, uint64(len(b.user.Name)))
		out = append(out, b.user.Name...)
	} else {
		var mb KeyMapBuilder
		for i := range b.ends {
			mb.Add(b.key(i))
		}
		m := mb.Finish(codeSpace(len(b.ends), b.bitsPerKey))
		values = make([]uint64, len(b.ends))
		for i := range values {
			values[i] = m.Map(b.key(i))
		}
		enc, err := m.MarshalBinary()
		if err != nil {
			return nil, err
		}
		out = binary.AppendUvarint(out, 0)
		out = binary.AppendUvarint(out, uint64(len(enc)))
		out = append(out, enc...)
	}
	// The hash's seed follows the keys, so that tables differ in their
	// hashes and a rebuild of the same keys gives the same filter.
	seed := uint64(len(values))
	for _, v := range values {
		seed = splitmix(seed ^ v)
	}
	f, err := New(values, b.bitsPerKey, seed)
	if err != nil {
		return nil, err
	}
	enc, err := f.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return append(out, enc...), nil
}

// KeyFilter is a range filter over byte-string keys: a Filter and the map
// that took the keys to its integers.
type KeyFilter struct {
	keyMap *KeyMap  // nil with a user map
	user   *UserMap // nil with the dense map
	filter Filter
	size   int
}

// ErrUnknownMap is returned by Decode for a filter built with a UserMap
// other than the one given: the caller reads on without the filter.
var ErrUnknownMap = errors.New("rangefilter: filter built with another key map")

// Decode decodes what Builder.Finish returned. user is the UserMap in use,
// if any; a filter built with a UserMap of another name (or when user is
// nil) gives ErrUnknownMap. Any other malformed input gives another error.
func Decode(data []byte, user *UserMap) (*KeyFilter, error) {
	nameLen, n := binary.Uvarint(data)
	if n <= 0 || nameLen > uint64(len(data)-n) {
		return nil, errors.New("rangefilter: map name overruns the data")
	}
	name := data[n : n+int(nameLen)]
	data = data[n+int(nameLen):]
	kf := &KeyFilter{}
	if len(name) > 0 {
		if user == nil || user.Name != string(name) {
			return nil, fmt.Errorf("%w %q", ErrUnknownMap, name)
		}
		kf.user = user
	} else {
		mapLen, n := binary.Uvarint(data)
		if n <= 0 || mapLen > uint64(len(data)-n) {
			return nil, errors.New("rangefilter: key map overruns the data")
		}
		kf.keyMap = new(KeyMap)
		if err := kf.keyMap.UnmarshalBinary(data[n : n+int(mapLen)]); err != nil {
			return nil, err
		}
		data = data[n+int(mapLen):]
		kf.size = int(mapLen)
	}
	if err := kf.filter.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	kf.size += kf.filter.SizeBytes()
	return kf, nil
}

// MayContain reports whether a key of the set may lie in [lo, hi) (hi
// excluded, as an iterator's bounds). false is certain. The
// false-positive probability is at most L/2^(BitsPerKey-2), where L is the
// width of the range's image under the map; a range whose image is wider
// than the filter supports answers true. A UserMap maps the range to
// [Map(lo), Map(hi)], hi included: a weakly order-preserving map cannot
// say which integers lie strictly below hi's.
func (k *KeyFilter) MayContain(lo, hi []byte) bool {
	if k.user != nil {
		return k.filter.MayContain(k.user.Map(lo), k.user.Map(hi))
	}
	a, b, ok := k.keyMap.Range(lo, hi)
	return ok && k.filter.MayContain(a, b)
}

// SizeBytes is the memory the filter and its map hold.
func (k *KeyFilter) SizeBytes() int { return k.size }
