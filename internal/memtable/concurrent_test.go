package memtable

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/base"
)

// TestConcurrentReaders has one goroutine add entries while others iterate
// and read without locks. Every entry's value is its index in the order of
// adds, so a reader that loaded the count of finished adds before it started
// knows exactly which entries it must see. Readers check that:
//   - a forward scan is in strictly increasing internal-key order and sees
//     every entry added before the scan began;
//   - a backward walk (SeekLT, then Prev) is strictly decreasing and sees
//     every such entry in the range it covers;
//   - Get finds such an entry at its own sequence number, and SeekGE lands on
//     its user key at a version no older.
//
// Run it with -race: it is also the check that every access to shared
// memory is ordered by the atomic links.
func TestConcurrentReaders(t *testing.T) {
	const n = 20000
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	// entries[i] is added i-th, at seq i+1. Keys come from a space of n/4,
	// so most user keys have several versions.
	entries := make([]base.InternalKey, n)
	for i := range entries {
		ukey := binary.BigEndian.AppendUint32([]byte("k"), rng.Uint32N(n/4))
		entries[i] = base.MakeInternalKey(ukey, base.SeqNum(i+1), base.Kind(rng.IntN(2)))
	}
	// sorted lists entry indexes in internal-key order.
	sorted := make([]int, n)
	for i := range sorted {
		sorted[i] = i
	}
	slices.SortFunc(sorted, func(a, b int) int { return base.Compare(entries[a], entries[b]) })
	rank := make([]int, n)
	for r, i := range sorted {
		rank[i] = r
	}

	m := newMem(t)
	var added atomic.Int64 // entries[:added] are in m
	var stop atomic.Bool
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(r+1)))
			for last := false; !last; {
				last = stop.Load()
				k := int(added.Load())
				checkForward(t, m, entries, k)
				checkBackward(t, m, entries, sorted, rank, k, rng)
				checkPoints(t, m, entries, k, rng)
				if t.Failed() {
					return
				}
			}
		}()
	}
	for i, e := range entries {
		m.Add(e.SeqNum(), e.Kind(), e.UserKey, binary.BigEndian.AppendUint32(nil, uint32(i)))
		added.Store(int64(i + 1))
	}
	stop.Store(true)
	wg.Wait()
}

// entryIndex checks that the iterator's value names an entry with the
// iterator's key, and returns that entry's index.
func entryIndex(t *testing.T, it base.InternalIterator, entries []base.InternalKey) (int, bool) {
	v := it.Value()
	if len(v) != 4 || int(binary.BigEndian.Uint32(v)) >= len(entries) {
		t.Errorf("at %s: value %x is no entry index", it.Key(), v)
		return 0, false
	}
	i := int(binary.BigEndian.Uint32(v))
	if base.Compare(entries[i], it.Key()) != 0 {
		t.Errorf("at %s: value names entry %d, %s", it.Key(), i, entries[i])
		return 0, false
	}
	return i, true
}

// checkForward scans the whole memtable, which holds at least entries[:k].
func checkForward(t *testing.T, m *MemTable, entries []base.InternalKey, k int) {
	it := m.NewIter()
	defer it.Close()
	seen := 0
	var prev base.InternalKey
	for ok := it.First(); ok; ok = it.Next() {
		if seen > 0 && base.Compare(prev, it.Key()) >= 0 {
			t.Errorf("forward scan: %s after %s", it.Key(), prev)
			return
		}
		prev = it.Key()
		i, ok := entryIndex(t, it, entries)
		if !ok {
			return
		}
		if i < k {
			seen++
		}
	}
	if seen != k {
		t.Errorf("forward scan saw %d of the %d entries added before it began", seen, k)
	}
}

// checkBackward walks back up to 300 entries from a random SeekLT, and
// checks that it saw every entry of entries[:k] in the range it covered.
func checkBackward(t *testing.T, m *MemTable, entries []base.InternalKey, sorted, rank []int, k int, rng *rand.Rand) {
	target := entries[rng.IntN(len(entries))].UserKey
	end, _ := slices.BinarySearchFunc(sorted, target, func(i int, ukey []byte) int {
		if bytes.Compare(entries[i].UserKey, ukey) < 0 {
			return -1
		}
		return 1
	})
	it := m.NewIter()
	defer it.Close()
	start, seen := 0, 0 // the walk covers sorted[start:end]
	var prev base.InternalKey
	ok := it.SeekLT(target)
	for steps := 0; ok && steps < 300; steps++ {
		key := it.Key()
		if bytes.Compare(key.UserKey, target) >= 0 || steps > 0 && base.Compare(key, prev) >= 0 {
			t.Errorf("backward walk from SeekLT(%s): %s after %s", base.FormatKey(target), key, prev)
			return
		}
		prev = key
		i, valid := entryIndex(t, it, entries)
		if !valid {
			return
		}
		if i < k {
			seen++
		}
		start = rank[i]
		ok = it.Prev()
	}
	want := 0
	for _, i := range sorted[start:end] {
		if i < k {
			want++
		}
	}
	if seen != want {
		t.Errorf("backward walk from SeekLT(%s) saw %d of the %d entries added before it began", base.FormatKey(target), seen, want)
	}
}

// checkPoints looks up a few of entries[:k] with Get and SeekGE.
func checkPoints(t *testing.T, m *MemTable, entries []base.InternalKey, k int, rng *rand.Rand) {
	if k == 0 {
		return
	}
	it := m.NewIter()
	defer it.Close()
	for range 50 {
		i := rng.IntN(k)
		e := entries[i]
		v, kind, ok := m.Get(e.UserKey, e.SeqNum())
		if !ok || kind != e.Kind() || len(v) != 4 || int(binary.BigEndian.Uint32(v)) != i {
			t.Errorf("Get(%s) = %x %s %t, want entry %d", e, v, kind, ok, i)
			return
		}
		if !it.SeekGE(e.UserKey) || !bytes.Equal(it.Key().UserKey, e.UserKey) || it.Key().SeqNum() < e.SeqNum() {
			t.Errorf("SeekGE(%s) = %s, want the newest version of %s", base.FormatKey(e.UserKey), it.Key(), e)
			return
		}
	}
}

// TestConcurrentHotKeys has one goroutine add version after version of a few
// user keys while others read them at the last finished seqnum. Each new
// version lands right in front of the versions a reader is looking at, so
// this catches a search that returns a node added after it chose its place:
// Get must return exactly the newest version at or below its seqnum, and
// SeekGE exactly the user key asked for.
func TestConcurrentHotKeys(t *testing.T) {
	const versions = 50000
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")}
	nkeys := uint64(len(keys))
	m := newMem(t)
	var added atomic.Uint64 // versions with seq <= added are in m
	add := func(s uint64) {
		m.Add(base.SeqNum(s), base.KindSet, keys[s%nkeys], binary.BigEndian.AppendUint64(nil, s))
		added.Store(s)
	}
	// Seq s writes keys[s%nkeys]; start with a version of every key.
	for s := uint64(1); s <= nkeys; s++ {
		add(s)
	}
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it := m.NewIter()
			defer it.Close()
			for i := r; added.Load() < versions; i++ {
				seq := added.Load()
				k := uint64(i) % nkeys
				want := seq - (seq+nkeys-k)%nkeys // the largest s <= seq with s%nkeys == k
				v, _, ok := m.Get(keys[k], base.SeqNum(seq))
				if !ok || len(v) != 8 || binary.BigEndian.Uint64(v) != want {
					t.Errorf("Get(%s, %d) = %x, %t; want version %d", keys[k], seq, v, ok, want)
					return
				}
				if !it.SeekGE(keys[k]) || !bytes.Equal(it.Key().UserKey, keys[k]) {
					t.Errorf("SeekGE(%s) = %s", keys[k], it.Key())
					return
				}
			}
		}()
	}
	for s := nkeys + 1; s <= versions; s++ {
		add(s)
	}
	wg.Wait()
}
