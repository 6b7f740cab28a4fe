package shale

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
)

// This file holds a reusable workload and the checking idea of the crash and
// fault campaigns: a workload is a fixed list of steps generated from a seed;
// a history records, as fingerprints, the states the store may hold after
// each writing step, so that a store recovered after a crash can be matched
// to the prefix of the history it holds.

// stepKind is one kind of workload step.
type stepKind int

const (
	stepPut stepKind = iota
	stepDelete
	stepBatch
	stepFlush
	stepCompact
	stepSnapshot // take a snapshot, kept until stepRelease
	stepRelease  // check the oldest open snapshot still reads its state, then close it
	stepReopen   // Close and Open
	stepGroup    // several batches on disjoint keys, applied concurrently
)

// step is one operation of a workload. A put, delete or batch is one write,
// a group several: writes[i] holds the puts, deletes and range deletions of
// write i. The writes of a group touch disjoint keys and hold no range
// deletion.
type step struct {
	kind   stepKind
	writes [][]kv
}

// kv is one op of a write: a put of val to key; a delete of key when val
// is nil; or, when end is not empty, a range deletion of [key, end).
type kv struct {
	key string
	val *string
	end string
}

// covers tells whether op is a range deletion that deletes k.
func (op kv) covers(k string) bool { return op.end != "" && op.key <= k && k < op.end }

// genWorkload returns n steps drawn from seed over a small key space, with
// values from a few bytes to a few KiB (so that records span WAL pages).
func genWorkload(seed uint64, n int) []step {
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	const keys = 120
	key := func() string { return fmt.Sprintf("k%03d", rng.IntN(keys)) }
	// rangeDel deletes up to 12 consecutive keys with one tombstone.
	rangeDel := func() kv {
		start := rng.IntN(keys)
		return kv{key: fmt.Sprintf("k%03d", start), end: fmt.Sprintf("k%03d", start+1+rng.IntN(12))}
	}
	val := func(i int) *string {
		size := rng.IntN(200)
		if rng.IntN(10) == 0 {
			size = 1000 + rng.IntN(5000)
		}
		v := fmt.Sprintf("v%d-%s", i, strings.Repeat("x", size))
		return &v
	}
	steps := make([]step, 0, n)
	snapshots := 0
	for i := range n {
		var s step
		switch r := rng.IntN(100); {
		case r < 40:
			s = step{kind: stepPut, writes: [][]kv{{{key: key(), val: val(i)}}}}
		case r < 47:
			s = step{kind: stepDelete, writes: [][]kv{{{key: key()}}}}
		case r < 50:
			s = step{kind: stepDelete, writes: [][]kv{{rangeDel()}}}
		case r < 67:
			var ops []kv
			for j := 2 + rng.IntN(6); j > 0; j-- {
				switch rng.IntN(12) {
				case 0, 1, 2:
					ops = append(ops, kv{key: key()})
				case 3:
					ops = append(ops, rangeDel())
				default:
					ops = append(ops, kv{key: key(), val: val(i)})
				}
			}
			s = step{kind: stepBatch, writes: [][]kv{ops}}
		case r < 75:
			// Values of 1-3 KiB, so that a commit group spans WAL pages.
			s.kind = stepGroup
			used := map[string]bool{}
			for w := 2 + rng.IntN(3); w > 0; w-- {
				var ops []kv
				for j := 1 + rng.IntN(3); j > 0; j-- {
					k := key()
					if used[k] {
						continue
					}
					used[k] = true
					v := fmt.Sprintf("v%d-%s", i, strings.Repeat("g", 1000+rng.IntN(2000)))
					ops = append(ops, kv{key: k, val: &v})
				}
				if len(ops) > 0 {
					s.writes = append(s.writes, ops)
				}
			}
		case r < 83:
			s.kind = stepFlush
		case r < 86:
			s.kind = stepCompact
		case r < 91:
			s.kind = stepSnapshot
			snapshots++
		case r < 96 && snapshots > 0:
			s.kind = stepRelease
			snapshots--
		default:
			s.kind = stepReopen
		}
		steps = append(steps, s)
	}
	return steps
}

// addOps adds a write's ops to b.
func addOps(b *Batch, ops []kv) {
	for _, op := range ops {
		switch {
		case op.end != "":
			b.DeleteRange([]byte(op.key), []byte(op.end))
		case op.val == nil:
			b.Delete([]byte(op.key))
		default:
			b.Put([]byte(op.key), []byte(*op.val))
		}
	}
}

// state is the content of a store.
type state map[string]string

// apply applies a write's ops to the state.
func (s state) apply(ops []kv) {
	for _, op := range ops {
		switch {
		case op.end != "":
			maps.DeleteFunc(s, func(k, _ string) bool { return op.covers(k) })
		case op.val == nil:
			delete(s, op.key)
		default:
			s[op.key] = *op.val
		}
	}
}

// entryHash hashes one key/value pair of a state.
func entryHash(k, v string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(k))
	h.Write([]byte{0})
	h.Write([]byte(v))
	return h.Sum64()
}

// fingerprint identifies a state: the XOR of the entryHash of each pair, so
// that a write changes it by the XOR of the pairs it removes and adds.
func fingerprint(s state) uint64 {
	var fp uint64
	for k, v := range s {
		fp ^= entryHash(k, v)
	}
	return fp
}

// history is the sequence of states a workload's writes went through. It is
// safe for concurrent use: crash points are taken on the DB's background
// goroutines while the workload runs.
type history struct {
	mu  sync.Mutex
	cur state // the state after the acknowledged steps
	// fps[i] holds the fingerprints of the states the store may pass
	// through in the i-th writing step: fps[i][0] is the state after it
	// whole; for a group, whose writes commit in an order the test does not
	// know, the others are the states after each subset of its writes.
	fps   [][]uint64
	acked int // writing steps acknowledged: all of fps but one in flight
}

func newHistory() *history { return &history{cur: state{}, fps: [][]uint64{{0}}} }

// begin records the writes of one step as in flight.
func (h *history) begin(writes [][]kv) {
	h.mu.Lock()
	defer h.mu.Unlock()
	base := h.fps[h.acked][0]
	deltas := make([]uint64, len(writes))
	for i, ops := range writes {
		deltas[i] = h.delta(ops)
	}
	fps := []uint64{base}
	for _, d := range deltas {
		fps[0] ^= d
	}
	if len(writes) > 1 {
		for subset := 0; subset < 1<<len(writes)-1; subset++ {
			fp := base
			for i, d := range deltas {
				if subset&(1<<i) != 0 {
					fp ^= d
				}
			}
			fps = append(fps, fp)
		}
	}
	h.fps = append(h.fps[:h.acked+1], fps)
}

// delta returns what applying ops to h.cur changes in its fingerprint: the
// keys the ops touch are replayed on an overlay of h.cur (nil: deleted), then
// each touched key's old pair is XORed out and its new pair in.
func (h *history) delta(ops []kv) uint64 {
	overlay := map[string]*string{}
	for _, op := range ops {
		if op.end == "" {
			overlay[op.key] = op.val
			continue
		}
		for k := range h.cur {
			if op.covers(k) {
				overlay[k] = nil
			}
		}
		for k := range overlay {
			if op.covers(k) {
				overlay[k] = nil
			}
		}
	}
	var d uint64
	for k, v := range overlay {
		if old, ok := h.cur[k]; ok {
			d ^= entryHash(k, old)
		}
		if v != nil {
			d ^= entryHash(k, *v)
		}
	}
	return d
}

// end records the outcome of the step in flight: acknowledged if every
// write returned nil, otherwise forgotten.
func (h *history) end(writes [][]kv, errs []error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if errors.Join(errs...) != nil {
		h.fps = h.fps[:h.acked+1]
		return
	}
	for _, ops := range writes {
		h.cur.apply(ops)
	}
	h.acked++
}

// mark tells what a crash now may leave.
func (h *history) mark() crashMark {
	h.mu.Lock()
	defer h.mu.Unlock()
	return crashMark{lo: h.acked, hi: len(h.fps) - 1}
}

// crashMark bounds the writes a crash may keep: the first lo acknowledged
// writes were acknowledged before it, and no more than hi had begun.
type crashMark struct{ lo, hi int }

// check tells whether a recovered state of fingerprint fp is allowed at
// mark m: with synced writes, every step acknowledged before the crash (and
// maybe some of those in flight); with NoSync, any prefix of the writes
// begun. It returns "" when the state is allowed, otherwise what is wrong.
func (h *history) check(fp uint64, m crashMark, noSync bool) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	lo := m.lo
	if noSync {
		lo = 0
	}
	// The latest matching step: states can repeat (a put undone by a delete).
	for i := min(m.hi, len(h.fps)-1); i >= 0; i-- {
		if i == m.lo && !noSync && h.fps[i][0] == fp {
			return ""
		}
		if !slices.Contains(h.fps[i], fp) {
			continue
		}
		if i > lo || noSync {
			return ""
		}
		return fmt.Sprintf("holds a state of writing step %d, want the state after step %d", i, m.lo)
	}
	return fmt.Sprintf("matches no prefix of the %d writing steps begun (a partial batch, a lost write or garbage)", m.hi)
}

// scanState reads the whole store, forward.
func scanState(db *DB) (state, error) { return scanIter(db.NewIter(nil), true) }

// scanIter reads everything it iterates over, forward or backward, and
// closes it.
func scanIter(it *Iterator, forward bool) (state, error) {
	s := state{}
	var ok bool
	move := it.Next
	if forward {
		ok = it.First()
	} else {
		ok, move = it.Last(), it.Prev
	}
	for ; ok; ok = move() {
		s[string(it.Key())] = string(it.Value())
	}
	return s, errors.Join(it.Error(), it.Close())
}

// diffStates describes how got differs from want, briefly.
func diffStates(got, want state) string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			d = append(d, k+" missing")
		} else if g != want[k] {
			d = append(d, k+" differs")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			d = append(d, k+" extra")
		}
	}
	if len(d) > 5 {
		d = append(d[:5], fmt.Sprintf("and %d more", len(d)-5))
	}
	return strings.Join(d, ", ")
}

// errSnapshotChanged: a snapshot no longer reads the state it was taken at.
var errSnapshotChanged = errors.New("snapshot reads a changed state")

// recorder learns the outcome of each writing step a runner makes.
type recorder interface {
	begin(writes [][]kv)             // before the step
	end(writes [][]kv, errs []error) // after: errs[i] is what write i returned
}

// runner runs a workload's steps against a DB and tells rec about each
// write. Step errors are returned to the caller, which decides what they
// mean. A snapshot is checked against a scan of the DB made when it was
// taken, so the check holds whatever the fate of failed writes.
type runner struct {
	open  func() (*DB, error)
	db    *DB
	rec   recorder
	snaps []openSnapshot
}

type openSnapshot struct {
	snap *Snapshot
	want state
}

// run applies one step. A write that fails is not acknowledged.
func (r *runner) run(s step) error {
	switch s.kind {
	case stepPut, stepDelete, stepBatch, stepGroup:
		errs := make([]error, len(s.writes))
		r.rec.begin(s.writes)
		var wg sync.WaitGroup
		for i, ops := range s.writes {
			wg.Go(func() {
				b := r.db.NewBatch()
				addOps(b, ops)
				errs[i] = r.db.Apply(b)
			})
		}
		wg.Wait()
		r.rec.end(s.writes, errs)
		return errors.Join(errs...)
	case stepFlush:
		return r.db.Flush()
	case stepCompact:
		return r.db.Compact()
	case stepSnapshot:
		snap := r.db.NewSnapshot()
		want, err := scanState(r.db)
		if err != nil {
			return errors.Join(err, snap.Close())
		}
		r.snaps = append(r.snaps, openSnapshot{snap, want})
	case stepRelease:
		if len(r.snaps) == 0 {
			return nil
		}
		s := r.snaps[0]
		r.snaps = r.snaps[1:]
		defer s.snap.Close()
		for _, forward := range []bool{true, false} {
			got, err := scanIter(s.snap.NewIter(nil), forward)
			if err != nil {
				return err
			}
			if fingerprint(got) != fingerprint(s.want) {
				return fmt.Errorf("%w (forward %v): %s", errSnapshotChanged, forward, diffStates(got, s.want))
			}
		}
		return s.snap.Close()
	case stepReopen:
		err := r.close()
		if err != nil {
			return err
		}
		r.db, err = r.open()
		return err
	}
	return nil
}

// close closes the open snapshots and the DB.
func (r *runner) close() error {
	var errs []error
	for _, s := range r.snaps {
		errs = append(errs, s.snap.Close())
	}
	r.snaps = nil
	if r.db != nil {
		errs = append(errs, r.db.Close())
		r.db = nil
	}
	return errors.Join(errs...)
}
