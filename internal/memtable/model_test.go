package memtable

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/base"
)

// model is what a memtable should hold: every entry, in a sorted slice.
type model []modelEntry

type modelEntry struct {
	key   base.InternalKey
	value []byte
}

func (m *model) add(k base.InternalKey, v []byte) {
	i, _ := slices.BinarySearchFunc(*m, k, func(e modelEntry, k base.InternalKey) int { return base.Compare(e.key, k) })
	*m = slices.Insert(*m, i, modelEntry{k, v})
}

// geq returns the index of the first entry >= k, or len(m).
func (m model) geq(k base.InternalKey) int {
	i, _ := slices.BinarySearchFunc(m, k, func(e modelEntry, k base.InternalKey) int { return base.Compare(e.key, k) })
	return i
}

// firstUserKeyGE returns the index of the first entry whose user key is >= ukey.
func (m model) firstUserKeyGE(ukey []byte) int {
	i, _ := slices.BinarySearchFunc(m, ukey, func(e modelEntry, ukey []byte) int {
		if bytes.Compare(e.key.UserKey, ukey) < 0 {
			return -1
		}
		return 1
	})
	return i
}

// chooser supplies the choices that drive runModel: random ones, or a fuzzer's
// bytes.
type chooser interface {
	intn(n int) int
	done() bool
}

type randChooser struct {
	rng   *rand.Rand
	steps int
}

func (c *randChooser) intn(n int) int { return c.rng.IntN(n) }
func (c *randChooser) done() bool     { c.steps--; return c.steps < 0 }

type byteChooser []byte

func (c *byteChooser) intn(n int) int {
	if len(*c) == 0 {
		return 0
	}
	b := (*c)[0]
	*c = (*c)[1:]
	return int(b) % n
}
func (c *byteChooser) done() bool { return len(*c) == 0 }

// modelAlphabet makes short user keys that collide often and sort around the
// edges of the byte range; the empty key is one of them.
var modelAlphabet = []byte{0x00, 'a', 'b', 0xff}

func modelKey(c chooser) []byte {
	k := make([]byte, c.intn(4))
	for i := range k {
		k[i] = modelAlphabet[c.intn(len(modelAlphabet))]
	}
	return k
}

// runModel applies a sequence of adds, gets and iterator moves, as c
// chooses, to a MemTable and to a model, and fails at the first difference.
// One iterator stays open throughout, so it also checks that an iterator
// sees entries added after it was positioned.
func runModel(t testing.TB, c chooser) {
	m := newMem(t)
	var want model
	it := m.NewIter()
	pos := -1 // the model's iterator position; -1: not positioned
	seq := base.SeqNum(0)
	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		for _, s := range trace[max(0, len(trace)-20):] {
			t.Log(s)
		}
		t.Fatalf(format, args...)
	}
	for !c.done() {
		var op string
		switch c.intn(9) {
		case 0, 1, 2:
			seq++
			k := base.MakeInternalKey(modelKey(c), seq, base.Kind(c.intn(2)))
			v := strconv.AppendUint(nil, uint64(seq), 10)
			m.Add(k.SeqNum(), k.Kind(), k.UserKey, v)
			// The iterator stays on the same entry, which may now be at a
			// new index.
			var cur base.InternalKey
			if pos >= 0 {
				cur = want[pos].key
			}
			want.add(k, v)
			if pos >= 0 {
				pos = want.geq(cur)
			}
			trace = append(trace, "add "+k.String())
			if m.Len() != len(want) {
				fail("Len = %d, want %d", m.Len(), len(want))
			}
			continue
		case 3:
			ukey := modelKey(c)
			at := base.SeqNum(c.intn(int(seq) + 2))
			trace = append(trace, "get "+base.FormatKey(ukey)+" at "+strconv.Itoa(int(at)))
			v, kind, ok := m.Get(ukey, at)
			i := want.geq(base.MakeSearchKey(ukey, at))
			wantOK := i < len(want) && bytes.Equal(want[i].key.UserKey, ukey)
			if ok != wantOK || ok && (kind != want[i].key.Kind() || !bytes.Equal(v, want[i].value)) {
				fail("Get(%s, %d) = %q %s %t; model says entry %d of %d", base.FormatKey(ukey), at, v, kind, ok, i, len(want))
			}
			continue
		case 4:
			op, pos = "first", 0
			it.First()
		case 5:
			op, pos = "last", len(want)-1
			it.Last()
		case 6:
			ukey := modelKey(c)
			if c.intn(2) == 0 {
				op, pos = "seek-ge "+base.FormatKey(ukey), want.firstUserKeyGE(ukey)
				it.SeekGE(ukey)
			} else {
				op, pos = "seek-lt "+base.FormatKey(ukey), want.firstUserKeyGE(ukey)-1
				it.SeekLT(ukey)
			}
		case 7:
			op = "next"
			if pos >= 0 {
				pos++
			}
			it.Next()
		case 8:
			op = "prev"
			if pos >= 0 {
				pos--
			}
			it.Prev()
		}
		if pos >= len(want) {
			pos = -1
		}
		trace = append(trace, op)
		switch {
		case it.Valid() != (pos >= 0):
			fail("after %s: Valid = %t, want %t", op, it.Valid(), pos >= 0)
		case pos >= 0 && (base.Compare(it.Key(), want[pos].key) != 0 || !bytes.Equal(it.Value(), want[pos].value)):
			fail("after %s: at %s=%s, want %s=%s", op, it.Key(), it.Value(), want[pos].key, want[pos].value)
		}
	}
}

// TestModel runs long random sequences of operations against the model.
func TestModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for i := range 20 {
		runModel(t, &randChooser{rng: rand.New(rand.NewPCG(seed, uint64(i))), steps: 5000})
	}
}

// FuzzModel reads the fuzzer's bytes as a sequence of operations and checks
// them against the model. The memtable decodes nothing from disk; this is
// the fuzzer's way into its search and linking logic.
func FuzzModel(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x03\x01\x02\x00\x01\x00\x01\x00\x04\x07\x07\x08\x05\x08\x08"))
	f.Add([]byte("\x00\x00\x00\x01\x00\x02\x02\x01\x01\x00\x03\x03\x01\x00\x06\x01\x00\x07\x08\x00\x02\x03\x03\x00\x06\x03\x01\x01"))
	seed := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		b := make([]byte, 200)
		for i := range b {
			b[i] = byte(seed.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := byteChooser(data)
		runModel(t, &c)
	})
}
