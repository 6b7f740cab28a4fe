package shale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// This file holds the pieces of the metamorphic test (metamorphic_test.go):
// the operations, their generator, and the in-memory model that every run's
// history is checked against.

// metaOp is one step of a metamorphic test. Running it against a target
// returns its observable result as text; the same operation must give the
// same text against every configuration of the store and against the model.
type metaOp interface {
	run(t metaTarget) string
	String() string
}

// metaTarget is what the operations run against: a DB under one option set
// (dbTarget) or the model (modelTarget). Snapshots and iterators are named by
// small integers chosen by the generator; snap -1 is the live store.
type metaTarget interface {
	write(w metaWrite) error
	get(snap int, key string) (string, error)
	newSnapshot(id int)
	closeSnapshot(id int) error
	newIter(id, snap int, lower, upper *string, prefix string)
	moveIter(id int, m iterMove, key string) (k, v string, ok bool, err error)
	closeIter(id int) error
	flush() error
	compact() error
	reopen() error
	crash() error
}

// metaMutation is one put, delete or range deletion.
type metaMutation struct {
	kind       mutationKind
	key, value string // value: a put's
	end        string // a range deletion's: it deletes [key, end)
}

type mutationKind int

const (
	mutPut mutationKind = iota
	mutDelete
	mutDeleteRange
)

// metaWrite is one acknowledged unit of writing: a single Put or Delete
// (batch false, one mutation), or a Batch, possibly empty, applied
// atomically.
type metaWrite struct {
	batch bool
	muts  []metaMutation
}

// iterMove is an iterator positioning call.
type iterMove int

const (
	moveFirst iterMove = iota
	moveLast
	moveSeekGE
	moveSeekLT
	moveNext
	movePrev
)

var iterMoveNames = [...]string{"First", "Last", "SeekGE", "SeekLT", "Next", "Prev"}

// The operations. Their String forms read like the Go calls they make.

type writeOp struct{ w metaWrite }

func (o writeOp) run(t metaTarget) string { return errResult(t.write(o.w)) }

func (o writeOp) String() string {
	if !o.w.batch {
		return "db" + o.w.muts[0].String()
	}
	var b strings.Builder
	b.WriteString("db.Apply(batch")
	for _, m := range o.w.muts {
		b.WriteString(m.String())
	}
	b.WriteString(")")
	return b.String()
}

// String is the mutation as the method call that makes it, after the
// receiver: `.Put("a", "1")`.
func (m metaMutation) String() string {
	switch m.kind {
	case mutDelete:
		return fmt.Sprintf(".Delete(%q)", m.key)
	case mutDeleteRange:
		return fmt.Sprintf(".DeleteRange(%q, %q)", m.key, m.end)
	}
	return fmt.Sprintf(".Put(%q, %q)", m.key, m.value)
}

type getOp struct {
	snap int
	key  string
}

func (o getOp) run(t metaTarget) string {
	v, err := t.get(o.snap, o.key)
	if err != nil {
		return errResult(err)
	}
	return strconv.Quote(v)
}

func (o getOp) String() string { return fmt.Sprintf("%s.Get(%q)", readerName(o.snap), o.key) }

type newSnapshotOp struct{ id int }

func (o newSnapshotOp) run(t metaTarget) string { t.newSnapshot(o.id); return "ok" }
func (o newSnapshotOp) String() string          { return fmt.Sprintf("s%d = db.NewSnapshot()", o.id) }

type closeSnapshotOp struct{ id int }

func (o closeSnapshotOp) run(t metaTarget) string { return errResult(t.closeSnapshot(o.id)) }
func (o closeSnapshotOp) String() string          { return fmt.Sprintf("s%d.Close()", o.id) }

type newIterOp struct {
	id, snap     int
	lower, upper *string // nil: unbounded
	prefix       string  // IterOptions.Prefix; "": none
}

func (o newIterOp) run(t metaTarget) string {
	t.newIter(o.id, o.snap, o.lower, o.upper, o.prefix)
	return "ok"
}

func (o newIterOp) String() string {
	bound := func(b *string) string {
		if b == nil {
			return "nil"
		}
		return strconv.Quote(*b)
	}
	prefix := ""
	if o.prefix != "" {
		prefix = ", prefix " + strconv.Quote(o.prefix)
	}
	return fmt.Sprintf("i%d = %s.NewIter(%s, %s%s)", o.id, readerName(o.snap), bound(o.lower), bound(o.upper), prefix)
}

type moveIterOp struct {
	id   int
	move iterMove
	key  string // for SeekGE and SeekLT
}

func (o moveIterOp) run(t metaTarget) string {
	k, v, ok, err := t.moveIter(o.id, o.move, o.key)
	switch {
	case err != nil:
		return errResult(err)
	case !ok:
		return "invalid"
	}
	return fmt.Sprintf("%q=%q", k, v)
}

func (o moveIterOp) String() string {
	if o.move == moveSeekGE || o.move == moveSeekLT {
		return fmt.Sprintf("i%d.%s(%q)", o.id, iterMoveNames[o.move], o.key)
	}
	return fmt.Sprintf("i%d.%s()", o.id, iterMoveNames[o.move])
}

type closeIterOp struct{ id int }

func (o closeIterOp) run(t metaTarget) string { return errResult(t.closeIter(o.id)) }
func (o closeIterOp) String() string          { return fmt.Sprintf("i%d.Close()", o.id) }

type flushOp struct{}

func (flushOp) run(t metaTarget) string { return errResult(t.flush()) }
func (flushOp) String() string          { return "db.Flush()" }

type compactOp struct{}

func (compactOp) run(t metaTarget) string { return errResult(t.compact()) }
func (compactOp) String() string          { return "db.Compact()" }

// reopenOp closes the store and opens it again; the target then checks that
// the whole store holds exactly what was acknowledged.
type reopenOp struct{}

func (reopenOp) run(t metaTarget) string { return errResult(t.reopen()) }
func (reopenOp) String() string          { return "db.Close(); db = Open()" }

// crashOp takes what a power loss would leave (vfs.MemFS.CrashClone) and
// opens that; the target checks the store against what was acknowledged
// (see dbTarget.crash for the rule under NoSync).
type crashOp struct{}

func (crashOp) run(t metaTarget) string { return errResult(t.crash()) }
func (crashOp) String() string          { return "db = Open(CrashClone())" }

func readerName(snap int) string {
	if snap < 0 {
		return "db"
	}
	return fmt.Sprintf("s%d", snap)
}

func errResult(err error) string {
	if err == nil {
		return "ok"
	}
	if errors.Is(err, ErrNotFound) {
		return "not found"
	}
	return "err: " + err.Error()
}

// metaGenerator builds a random operation sequence from a seed. Keys come
// from a small set so that operations collide; every value names the write
// that made it (operation index and position in the batch).
type metaGenerator struct {
	rng      *rand.Rand
	keys     []string
	ops      []metaOp
	snaps    []int // open snapshots
	iters    []int // open iterators
	nextSnap int
	nextIter int
}

// Most open snapshots and iterators at a time.
const (
	metaMaxSnapshots = 3
	metaMaxIters     = 4
)

// generateMetaOps returns n operations (plus the closes and final reopen
// that end a sequence) generated from seed.
func generateMetaOps(seed uint64, n int) []metaOp {
	g := &metaGenerator{rng: rand.New(rand.NewPCG(seed, 0x6d657461))}
	g.keys = g.keySet()
	// Each seed scales every weight by 1/4 to 2, so that seeds differ in
	// their mix: some mostly write, some mostly iterate, some flush often.
	kinds := []metaKind{
		{200, g.put},
		{60, g.delete},
		{15, g.deleteRange},
		{80, g.batch},
		{150, func() { g.add(getOp{snap: -1, key: g.key()}) }},
		{15, g.newSnapshot},
		{40, g.snapshotGet},
		{12, g.closeSnapshot},
		{40, g.newIter},
		{250, g.moveIter},
		{30, g.closeIter},
		{20, func() { g.add(flushOp{}) }},
		{5, func() { g.add(compactOp{}) }},
		{6, func() { g.closeAll(); g.add(reopenOp{}) }},
		{6, func() { g.closeAll(); g.add(crashOp{}) }},
	}
	for i := range kinds {
		kinds[i].weight = kinds[i].weight * (1 + g.rng.IntN(8)) / 4
	}
	return g.generate(kinds, n)
}

// metaKind is a kind of operation and its weight in a sequence.
type metaKind struct {
	weight int
	add    func()
}

// generate draws kinds of operations by their weights until there are n
// operations (a kind that cannot run now, no open iterator to move, say,
// adds nothing, and the loop draws again), then ends the sequence: it
// closes what is open and reopens the store.
func (g *metaGenerator) generate(kinds []metaKind, n int) []metaOp {
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	for len(g.ops) < n {
		r := g.rng.IntN(total)
		for _, k := range kinds {
			if r < k.weight {
				k.add()
				break
			}
			r -= k.weight
		}
	}
	g.closeAll()
	g.add(reopenOp{})
	return g.ops
}

func (g *metaGenerator) add(op metaOp) { g.ops = append(g.ops, op) }

// keySet returns the keys of a sequence, sometimes with the empty key among
// them: mostly 8 to 40 short keys over 4 letters, so that operations collide
// often; for one seed in four, 100 to 400 longer keys over 8 letters, so that
// more data reaches the deeper levels.
func (g *metaGenerator) keySet() []string {
	n, maxLen, alphabet := 8+g.rng.IntN(33), 4, "abcd"
	if g.rng.IntN(4) == 0 {
		n, maxLen, alphabet = 100+g.rng.IntN(301), 8, "abcdefgh"
	}
	set := map[string]bool{}
	if g.rng.IntN(2) == 0 {
		set[""] = true
	}
	for len(set) < n {
		set[g.randomString(1+g.rng.IntN(maxLen), alphabet)] = true
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (g *metaGenerator) randomString(n int, alphabet string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return string(b)
}

func (g *metaGenerator) key() string { return g.keys[g.rng.IntN(len(g.keys))] }

// seekKey is a key of the set, or a key between or beyond them.
func (g *metaGenerator) seekKey() string {
	switch g.rng.IntN(4) {
	case 0:
		return g.key() + "\x00"
	case 1:
		return g.randomString(g.rng.IntN(4), "abcde")
	}
	return g.key()
}

// value names the write: "op.position", then padding, mostly short and
// sometimes a few KiB so that values span blocks and fill memtables. One
// value in 40 is empty instead.
func (g *metaGenerator) value(pos int) string {
	if g.rng.IntN(40) == 0 {
		return ""
	}
	v := fmt.Sprintf("%d.%d", len(g.ops), pos)
	var pad int
	switch r := g.rng.IntN(100); {
	case r < 70:
		pad = g.rng.IntN(8)
	case r < 95:
		pad = 10 + g.rng.IntN(90)
	default:
		pad = 300 + g.rng.IntN(3000)
	}
	if pad > 0 {
		v += "-" + g.randomString(pad, "xyz")
	}
	return v
}

func (g *metaGenerator) mutation(pos int) metaMutation {
	switch g.rng.IntN(12) {
	case 0, 1:
		return metaMutation{kind: mutDelete, key: g.key()}
	case 2:
		return g.deleteRangeMutation()
	}
	return metaMutation{key: g.key(), value: g.value(pos)}
}

// deleteRangeMutation deletes [start, end) between keys of the set or
// beyond them; now and then the range is empty (start == end), a no-op. (A
// reversed range is an error, which TestDeleteRangeReversed tests.)
func (g *metaGenerator) deleteRangeMutation() metaMutation {
	start, end := g.seekKey(), g.seekKey()
	if start > end {
		start, end = end, start
	}
	if g.rng.IntN(10) == 0 {
		end = start
	}
	return metaMutation{kind: mutDeleteRange, key: start, end: end}
}

func (g *metaGenerator) deleteRange() {
	g.add(writeOp{metaWrite{muts: []metaMutation{g.deleteRangeMutation()}}})
}

func (g *metaGenerator) put() {
	g.add(writeOp{metaWrite{muts: []metaMutation{{key: g.key(), value: g.value(0)}}}})
}

func (g *metaGenerator) delete() {
	g.add(writeOp{metaWrite{muts: []metaMutation{{kind: mutDelete, key: g.key()}}}})
}

// batch writes a batch of 1 to 8 puts and deletes, or now and then an
// empty one.
func (g *metaGenerator) batch() {
	w := metaWrite{batch: true}
	n := 1 + g.rng.IntN(8)
	if g.rng.IntN(20) == 0 {
		n = 0
	}
	for i := range n {
		w.muts = append(w.muts, g.mutation(i))
	}
	g.add(writeOp{w})
}

func (g *metaGenerator) newSnapshot() {
	if len(g.snaps) == metaMaxSnapshots {
		return
	}
	g.snaps = append(g.snaps, g.nextSnap)
	g.add(newSnapshotOp{g.nextSnap})
	g.nextSnap++
}

func (g *metaGenerator) snapshotGet() {
	if len(g.snaps) == 0 {
		return
	}
	g.add(getOp{snap: g.snaps[g.rng.IntN(len(g.snaps))], key: g.key()})
}

func (g *metaGenerator) closeSnapshot() {
	if len(g.snaps) == 0 {
		return
	}
	i := g.rng.IntN(len(g.snaps))
	g.add(closeSnapshotOp{g.snaps[i]})
	g.snaps = slices.Delete(g.snaps, i, i+1)
}

// newIter opens an iterator on the live store or on an open snapshot, with
// random bounds (each possibly nil, lower never above upper), and one time
// in four a prefix of 1 to 3 bytes.
func (g *metaGenerator) newIter() {
	if len(g.iters) == metaMaxIters {
		return
	}
	op := newIterOp{id: g.nextIter, snap: -1}
	if len(g.snaps) > 0 && g.rng.IntN(3) == 0 {
		op.snap = g.snaps[g.rng.IntN(len(g.snaps))]
	}
	if g.rng.IntN(3) != 0 {
		lo := g.seekKey()
		op.lower = &lo
	}
	if g.rng.IntN(3) != 0 {
		hi := g.seekKey()
		op.upper = &hi
	}
	if op.lower != nil && op.upper != nil && *op.lower > *op.upper {
		op.lower, op.upper = op.upper, op.lower
	}
	if g.rng.IntN(4) == 0 {
		op.prefix = g.randomString(1+g.rng.IntN(3), "abcde")
	}
	g.iters = append(g.iters, g.nextIter)
	g.add(op)
	g.nextIter++
}

// moveIter moves an open iterator; Next and Prev are drawn most often, so
// that walks change direction.
func (g *metaGenerator) moveIter() {
	if len(g.iters) == 0 {
		return
	}
	op := moveIterOp{id: g.iters[g.rng.IntN(len(g.iters))]}
	switch r := g.rng.IntN(10); {
	case r < 4:
		op.move = moveNext
	case r < 7:
		op.move = movePrev
	default:
		op.move = iterMove(g.rng.IntN(4)) // First, Last, SeekGE, SeekLT
		op.key = g.seekKey()
	}
	if op.move == moveFirst || op.move == moveLast {
		op.key = ""
	}
	g.add(op)
}

func (g *metaGenerator) closeIter() {
	if len(g.iters) == 0 {
		return
	}
	i := g.rng.IntN(len(g.iters))
	g.add(closeIterOp{g.iters[i]})
	g.iters = slices.Delete(g.iters, i, i+1)
}

// closeAll closes every open iterator and snapshot, as a reopen or crash
// needs.
func (g *metaGenerator) closeAll() {
	for _, id := range g.iters {
		g.add(closeIterOp{id})
	}
	for _, id := range g.snaps {
		g.add(closeSnapshotOp{id})
	}
	g.iters, g.snaps = nil, nil
}

// metaState is the model's picture of a store: key -> value.
type metaState map[string]string

func (s metaState) apply(w metaWrite) {
	for _, m := range w.muts {
		switch m.kind {
		case mutDelete:
			delete(s, m.key)
		case mutDeleteRange:
			for k := range s {
				if m.key <= k && k < m.end {
					delete(s, k)
				}
			}
		default:
			s[m.key] = m.value
		}
	}
}

func (s metaState) clone() metaState {
	c := make(metaState, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

// diff describes the first difference between got and want, or returns ""
// when they are equal.
func (s metaState) diff(want metaState) string {
	keys := make([]string, 0, len(s)+len(want))
	for k := range s {
		keys = append(keys, k)
	}
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		got, inGot := s[k]
		w, inWant := want[k]
		switch {
		case !inGot && inWant:
			return fmt.Sprintf("%q missing (want %q)", k, w)
		case inGot && !inWant:
			return fmt.Sprintf("%q=%q present (want absent)", k, got)
		case got != w:
			return fmt.Sprintf("%q=%q (want %q)", k, got, w)
		}
	}
	return ""
}

// modelIter is an iterator over a copy of the model's state: the keys
// within its bounds, sorted, and a position among them.
type modelIter struct {
	state metaState
	keys  []string
	pos   int
	valid bool
}

func newModelIter(s metaState, lower, upper *string, prefix string) *modelIter {
	it := &modelIter{state: s.clone()}
	for k := range s {
		if (lower == nil || k >= *lower) && (upper == nil || k < *upper) && strings.HasPrefix(k, prefix) {
			it.keys = append(it.keys, k)
		}
	}
	slices.Sort(it.keys)
	return it
}

// move follows the Iterator contract: Next and Prev on an iterator that is
// not positioned stay unpositioned; seeks are clamped to the bounds, which
// the key list already obeys.
func (it *modelIter) move(m iterMove, key string) bool {
	switch m {
	case moveFirst:
		it.pos = 0
	case moveLast:
		it.pos = len(it.keys) - 1
	case moveSeekGE:
		it.pos, _ = slices.BinarySearch(it.keys, key)
	case moveSeekLT:
		i, _ := slices.BinarySearch(it.keys, key)
		it.pos = i - 1
	case moveNext, movePrev:
		if !it.valid {
			return false
		}
		if m == moveNext {
			it.pos++
		} else {
			it.pos--
		}
	}
	it.valid = it.pos >= 0 && it.pos < len(it.keys)
	return it.valid
}

// modelTarget runs operations against the model: a map, copied for each
// snapshot and iterator. Flushes, compactions, reopens and crashes change
// nothing a reader can see.
type modelTarget struct {
	state metaState
	snaps map[int]metaState
	iters map[int]*modelIter
}

func newModelTarget() *modelTarget {
	return &modelTarget{state: metaState{}, snaps: map[int]metaState{}, iters: map[int]*modelIter{}}
}

func (m *modelTarget) reader(snap int) metaState {
	if snap < 0 {
		return m.state
	}
	return m.snaps[snap]
}

func (m *modelTarget) write(w metaWrite) error { m.state.apply(w); return nil }

func (m *modelTarget) get(snap int, key string) (string, error) {
	v, ok := m.reader(snap)[key]
	if !ok {
		return "", ErrNotFound
	}
	return v, nil
}

func (m *modelTarget) newSnapshot(id int)         { m.snaps[id] = m.state.clone() }
func (m *modelTarget) closeSnapshot(id int) error { delete(m.snaps, id); return nil }

func (m *modelTarget) newIter(id, snap int, lower, upper *string, prefix string) {
	m.iters[id] = newModelIter(m.reader(snap), lower, upper, prefix)
}

func (m *modelTarget) moveIter(id int, mv iterMove, key string) (string, string, bool, error) {
	it := m.iters[id]
	if !it.move(mv, key) {
		return "", "", false, nil
	}
	k := it.keys[it.pos]
	return k, it.state[k], true, nil
}

func (m *modelTarget) closeIter(id int) error { delete(m.iters, id); return nil }
func (m *modelTarget) flush() error           { return nil }
func (m *modelTarget) compact() error         { return nil }
func (m *modelTarget) reopen() error          { return nil }
func (m *modelTarget) crash() error           { return nil }
