package memtable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/itertest"
)

// TestDataDriven runs testdata/memtable. Commands:
//
//	reset              start over with an empty memtable
//	add                add one entry per input line, as ukey#seq,KIND=value
//	                   (a range tombstone: start#seq,RANGEDEL=end)
//	get seq=N          look up each input line's user key at seq N
//	scan [reverse]     list every entry, First..Next or Last..Prev
//	iter               run one iterator through the input lines' operations:
//	                   first, last, next, prev, seek-ge KEY, seek-lt KEY
//
// Entries print as ukey#seq,KIND=value; "." is an unpositioned iterator.
func TestDataDriven(t *testing.T) {
	m := newMem(t)
	datadriven.RunTest(t, "testdata/memtable", func(t *testing.T, d *datadriven.TestData) string {
		var out strings.Builder
		switch d.Cmd {
		case "reset":
			m = newMem(t)
			return "ok"
		case "add":
			for _, line := range strings.Split(d.Input, "\n") {
				k, v, err := itertest.ParseEntry(line)
				if err != nil {
					d.Fatalf(t, "%s: %v", line, err)
				}
				m.Add(k.SeqNum(), k.Kind(), k.UserKey, v)
			}
			return fmt.Sprintf("len=%d", m.Len())
		case "get":
			var seq uint64
			d.ScanArgs(t, "seq", &seq)
			for _, line := range strings.Split(d.Input, "\n") {
				ukey := parseKey(t, d, line)
				v, kind, ok := m.Get(ukey, base.SeqNum(seq))
				if !ok {
					fmt.Fprintf(&out, "%s: not found\n", base.FormatKey(ukey))
					continue
				}
				fmt.Fprintf(&out, "%s: %s %q\n", base.FormatKey(ukey), kind, v)
			}
		case "scan":
			it := m.NewIter()
			if d.HasArg("reverse") {
				for ok := it.Last(); ok; ok = it.Prev() {
					out.WriteString(formatEntry(it) + "\n")
				}
			} else {
				for ok := it.First(); ok; ok = it.Next() {
					out.WriteString(formatEntry(it) + "\n")
				}
			}
			if out.Len() == 0 {
				return "(empty)"
			}
		case "iter":
			it := m.NewIter()
			for _, line := range strings.Split(d.Input, "\n") {
				op, arg, _ := strings.Cut(line, " ")
				switch op {
				case "first":
					it.First()
				case "last":
					it.Last()
				case "next":
					it.Next()
				case "prev":
					it.Prev()
				case "seek-ge":
					it.SeekGE(parseKey(t, d, arg))
				case "seek-lt":
					it.SeekLT(parseKey(t, d, arg))
				default:
					d.Fatalf(t, "unknown iterator op %q", op)
				}
				fmt.Fprintf(&out, "%-12s %s\n", line+":", formatEntry(it))
			}
		default:
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		return out.String()
	})
}

// parseKey reads a user key as base.FormatKey writes it: plain, or quoted.
func parseKey(t *testing.T, d *datadriven.TestData, s string) []byte {
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			d.Fatalf(t, "%s: %v", s, err)
		}
		return []byte(u)
	}
	return []byte(s)
}

// formatEntry prints the iterator's entry as itertest.FormatEntry does, or
// "." when it is not positioned.
func formatEntry(it base.InternalIterator) string {
	if !it.Valid() {
		return "."
	}
	return itertest.FormatEntry(it.Key(), it.Value())
}

// TestSize checks that Size charges each entry its key and value bytes plus
// a node and its outside links, and that the overhead stays small.
func TestSize(t *testing.T) {
	m := newMem(t)
	if m.Size() != 0 || !m.Empty() {
		t.Fatalf("new memtable: Size %d, Empty %t", m.Size(), m.Empty())
	}
	const n = 10000
	payload := 0
	for i := range n {
		prev := m.Size()
		k := fmt.Appendf(nil, "key%08d", i)
		v := bytes.Repeat([]byte{'v'}, i%200)
		m.Add(base.SeqNum(i+1), base.KindSet, k, v)
		payload += len(k) + len(v)
		grew := m.Size() - prev
		if lo, hi := len(k)+len(v)+nodeOverhead, len(k)+len(v)+nodeOverhead+(maxHeight-lowLinks)*linkSize; grew < lo || grew > hi {
			t.Fatalf("entry %d grew Size by %d, want [%d, %d]", i, grew, lo, hi)
		}
	}
	if m.Len() != n || m.Empty() {
		t.Fatalf("Len %d, Empty %t; want %d, false", m.Len(), m.Empty(), n)
	}
	// A node averages 1/12 of a link outside itself.
	if perEntry := (m.Size() - payload) / n; perEntry > nodeOverhead+linkSize/2 {
		t.Fatalf("overhead %d bytes per entry, want <= %d", perEntry, nodeOverhead+linkSize/2)
	}
}

// TestAddAllocs checks that inserts share slabs: far fewer than one
// allocation per Add, including entries that outgrow the first slabs.
func TestAddAllocs(t *testing.T) {
	m := newMem(t)
	k := make([]byte, 16)
	v := make([]byte, 100)
	seq := base.SeqNum(0)
	allocs := testing.AllocsPerRun(20000, func() {
		seq++
		binary.BigEndian.PutUint64(k, uint64(seq)*0x9e3779b97f4a7c15) // scattered keys
		m.Add(seq, base.KindSet, k, v)
	})
	if allocs > 0.05 {
		t.Fatalf("%.3f allocations per Add, want < 0.05", allocs)
	}
}

// TestLargeEntry checks that a key or value bigger than a slab is stored
// whole, and that small entries around it still read back.
func TestLargeEntry(t *testing.T) {
	m := newMem(t)
	big := bytes.Repeat([]byte("0123456789"), maxSlabBytes/5)
	m.Add(1, base.KindSet, []byte("a"), []byte("small"))
	m.Add(2, base.KindSet, big, big)
	m.Add(3, base.KindSet, []byte("z"), big[:maxSlabBytes/4])
	m.Add(4, base.KindSet, []byte("b"), []byte("after"))
	for _, c := range []struct{ key, value []byte }{
		{[]byte("a"), []byte("small")}, {big, big}, {[]byte("z"), big[:maxSlabBytes/4]}, {[]byte("b"), []byte("after")},
	} {
		v, _, ok := m.Get(c.key, base.MaxSeqNum)
		if !ok || !bytes.Equal(v, c.value) {
			t.Fatalf("Get(%.10q) = %d bytes, %t; want %d bytes", c.key, len(v), ok, len(c.value))
		}
	}
}

// TestAliasingCapacity checks that appending to a returned key or value
// cannot overwrite the entry stored after it in the same slab.
func TestAliasingCapacity(t *testing.T) {
	m := newMem(t)
	m.Add(1, base.KindSet, []byte("a"), []byte("1"))
	m.Add(2, base.KindSet, []byte("b"), []byte("2"))
	v, _, _ := m.Get([]byte("a"), 1)
	_ = append(v, 'X')
	it := m.NewIter()
	it.First()
	_ = append(it.Key().UserKey, 'Y')
	if v, _, _ := m.Get([]byte("b"), 2); string(v) != "2" {
		t.Fatalf("b = %q after appending to a's slices, want \"2\"", v)
	}
	if v, _, _ := m.Get([]byte("a"), 1); string(v) != "1" {
		t.Fatalf("a = %q after appending to its key, want \"1\"", v)
	}
}

// TestLessAroundPrefix checks node.less against bytes.Compare for keys that
// share all or part of the 16 bytes a node keeps as its prefix, are
// shorter or longer than it, and end in zero bytes that the prefix's
// padding could be mistaken for; then that a memtable holding them all
// iterates them in order.
func TestLessAroundPrefix(t *testing.T) {
	var keys [][]byte
	stem := []byte("0123456789abcdefgh")
	for _, n := range []int{0, 1, 7, 8, 9, 14, 15, 16, 17, 18} {
		for _, tail := range []string{"", "\x00", "\x00\x00", "a", "\xff", "\x00a"} {
			keys = append(keys, append(append([]byte{}, stem[:n]...), tail...))
		}
	}
	for _, a := range keys {
		na := node{kv: a, keyLen: len(a), prefix: keyPrefix(a), trailer: 5 << 8}
		for _, b := range keys {
			for _, trailer := range []uint64{4 << 8, 5 << 8, 6 << 8} {
				c := bytes.Compare(a, b)
				want := c < 0 || c == 0 && na.trailer > trailer
				if got := na.less(b, keyPrefix(b), trailer); got != want {
					t.Fatalf("(%q, %d).less(%q, %d) = %t, want %t", a, na.trailer, b, trailer, got, want)
				}
			}
		}
	}

	m := newMem(t)
	for i, k := range keys {
		m.Add(base.SeqNum(i+1), base.KindSet, k, nil)
	}
	it := m.NewIter()
	defer it.Close()
	var prev []byte
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key().UserKey
		if n > 0 && bytes.Compare(prev, k) > 0 {
			t.Fatalf("iteration yields %q after %q", k, prev)
		}
		prev = append(prev[:0], k...)
		n++
	}
	if n != len(keys) {
		t.Fatalf("iteration yields %d entries, want %d", n, len(keys))
	}
}

// TestNodeLayout checks what node's comment promises: the fields a search
// step reads lie in the first 32 bytes, and nodes are a multiple of 32
// bytes, so in an aligned slab those 32 bytes never straddle a cache line.
func TestNodeLayout(t *testing.T) {
	var n node
	if end := unsafe.Offsetof(n.low) + unsafe.Sizeof(n.low); unsafe.Offsetof(n.prefix) != 0 || end > 32 {
		t.Fatalf("prefix at %d, low links end at %d; want 0 and at most 32", unsafe.Offsetof(n.prefix), end)
	}
	if size := unsafe.Sizeof(n); size%32 != 0 {
		t.Fatalf("a node is %d bytes, not a multiple of 32", size)
	}
}
