package shale

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/shale-db/shale/rangefilter"
	"github.com/shale-db/shale/vfs"
)

// Flags of TestMetamorphic.
var (
	metaSeed       = flag.Uint64("metamorphic.seed", 0, "run only this seed of TestMetamorphic (0: seeds 1 to -metamorphic.seeds)")
	metaSeeds      = flag.Int("metamorphic.seeds", 5, "how many seeds TestMetamorphic runs")
	metaOps        = flag.Int("metamorphic.ops", 1200, "operations per seed in TestMetamorphic")
	metaDir        = flag.String("metamorphic.dir", "", "where TestMetamorphic writes the histories of a failing seed (empty: a new temporary directory, kept)")
	metaReduceFlag = flag.Bool("metamorphic.reduce", false, "TestMetamorphic shortens the sequence of the first failing configuration (see metaReduce) and prints it")
)

// metaConfig is one option set the sequence runs under: opts for the first
// Open, and if reopen is set, each later Open takes the next of reopen in
// turn, so that one store holds tables written under several option sets
// (filters, block sizes). All of them have opts' NoSync.
type metaConfig struct {
	name   string
	opts   Options
	reopen []Options
}

// smallOptions sets o's memtables, blocks, files and base level small, so
// that a thousand operations go through flushes and compactions into
// several levels.
func smallOptions(o Options) Options {
	o.MemTableSize = 2 << 10
	o.BlockSize = 256
	o.TargetFileSize = 2 << 10
	o.LBaseMaxBytes = 2 << 10
	o.L0CompactionThreshold = 2
	return o
}

// metaConfigs are the option sets of TestMetamorphic: fixed ones, most of
// them smallOptions, then one drawn from the seed.
func metaConfigs(seed uint64) []metaConfig {
	return []metaConfig{
		{"defaults", Options{}, nil},
		{"no-filter", smallOptions(Options{BloomBitsPerKey: NoFilter}), nil},
		{"bloom-1", smallOptions(Options{BloomBitsPerKey: 1}), nil},
		{"bloom-20", smallOptions(Options{BloomBitsPerKey: 20}), nil},
		{"fuse", smallOptions(Options{FilterPolicy: UniformFilter(FuseFilter())}), nil},
		{"monkey-5", smallOptions(Options{FilterPolicy: MonkeyBloom(5)}), nil},
		{"prefix-2", smallOptions(Options{Prefix: FixedPrefix(2)}), nil},
		// 6 bits per key: the range filters' key maps have short windows
		// and answer "maybe" often, so both answers are exercised.
		{"range-filter-6", smallOptions(Options{RangeFilter: &rangefilter.Options{BitsPerKey: 6}}), nil},
		{"range-filter-prefix", smallOptions(Options{RangeFilter: &rangefilter.Options{}, Prefix: FixedPrefix(1)}), []Options{
			smallOptions(Options{}),
			smallOptions(Options{RangeFilter: &rangefilter.Options{BitsPerKey: 10}, Prefix: FixedPrefix(2)}),
		}},
		{"tiny-memtable", Options{MemTableSize: 256, L0CompactionThreshold: 2, TargetFileSize: 1 << 10, LBaseMaxBytes: 1 << 10}, nil},
		{"large-memtable-blocks", Options{MemTableSize: 64 << 20, BlockSize: 64 << 10}, nil},
		{"no-cache-64B-blocks", smallOptions(Options{BlockCacheSize: -1, BlockSize: 64}), nil},
		{"tiny-cache", smallOptions(Options{BlockCacheSize: 1 << 10}), nil},
		// Rows cached, and one table file open at a time: every read of
		// another table reopens its file.
		{"row-cache-one-file", smallOptions(Options{RowCacheSize: 4 << 10, MaxOpenFiles: 1}), []Options{
			smallOptions(Options{RowCacheSize: 64 << 10, MaxOpenFiles: 2, BlockCacheSize: -1}),
			smallOptions(Options{}),
		}},
		{"no-compactions", Options{MemTableSize: 1 << 10, BlockSize: 128, DisableAutomaticCompactions: true}, nil},
		{"one-immutable", smallOptions(Options{MaxImmutableMemTables: 1, TargetFileSize: 512}), nil},
		// The WAL is mapped unless a configuration disables it; these write
		// it with write(2), and changing-options switches between the two
		// across reopens and crashes, so that each mode recovers the
		// other's logs.
		{"wal-write", smallOptions(Options{DisableWALMapping: true}), nil},
		// Tables are read through mappings unless a configuration
		// disables it; this one reads them with ReadAt, then, across
		// reopens, through mappings with two files open at a time (so
		// that mappings come and go with the table cache's evictions)
		// and no block cache, and with ReadAt again.
		{"pread-reads", smallOptions(Options{DisableMmapReads: true}), []Options{
			smallOptions(Options{MaxOpenFiles: 2, BlockCacheSize: -1}),
			smallOptions(Options{DisableMmapReads: true, MaxOpenFiles: 2}),
		}},
		// The compression changes too, so that the store mixes tables of
		// every compression.
		{"changing-options", smallOptions(Options{Prefix: FixedPrefix(2), Compression: PerLevelCompression{6: ZstdCompression}}), []Options{
			smallOptions(Options{FilterPolicy: UniformFilter(FuseFilter()), BlockSize: 1 << 10, Prefix: FixedPrefix(1), DisableWALMapping: true, Compression: ZstdCompression}),
			{BloomBitsPerKey: NoFilter, BlockSize: 64, BlockCacheSize: -1, MemTableSize: 1 << 10, Compression: NoCompression},
			smallOptions(Options{FilterPolicy: MonkeyBloom(3), Compression: PerLevelCompression{0: NoCompression, 1: ZstdCompression, 2: ZstdCompression}}),
			{},
		}},
		{"nosync", smallOptions(Options{NoSync: true}), nil},
		{"nosync-no-compactions", Options{NoSync: true, MemTableSize: 1 << 10, DisableAutomaticCompactions: true}, nil},
		{"nosync-defaults", Options{NoSync: true}, nil},
		{"nosync-wal-write", smallOptions(Options{NoSync: true, DisableWALMapping: true}), nil},
		metaRandomConfig(seed),
	}
}

// metaRandomConfig draws an option set from seed; its name lists what was
// drawn.
func metaRandomConfig(seed uint64) metaConfig {
	rng := rand.New(rand.NewPCG(seed, 0x6f707473))
	pick := func(choices ...int) int { return choices[rng.IntN(len(choices))] }
	o := Options{
		MemTableSize:                pick(256, 1<<10, 4<<10, 64<<10),
		BlockSize:                   pick(32, 64, 256, 1<<10, 4<<10, 32<<10),
		BlockCacheSize:              pick(-1, 512, 8<<10, 0),
		MaxImmutableMemTables:       pick(1, 2, 4),
		L0CompactionThreshold:       pick(1, 2, 4),
		TargetFileSize:              int64(pick(256, 2<<10, 64<<10)),
		LBaseMaxBytes:               int64(pick(1<<10, 8<<10, 1<<20)),
		DisableAutomaticCompactions: rng.IntN(4) == 0,
		NoSync:                      rng.IntN(4) == 0,
	}
	var filter string
	switch rng.IntN(5) {
	case 0:
		o.FilterPolicy, filter = UniformFilter(FuseFilter()), "fuse"
	case 1:
		o.BloomBitsPerKey, filter = NoFilter, "none"
	default:
		o.BloomBitsPerKey = 1 + rng.IntN(20)
		filter = fmt.Sprintf("bloom-%d", o.BloomBitsPerKey)
	}
	prefix := "none"
	if rng.IntN(2) == 0 {
		o.Prefix = FixedPrefix(1 + rng.IntN(3))
		prefix = o.Prefix.Name
	}
	rangeBits := 0
	if rng.IntN(2) == 0 {
		rangeBits = pick(6, 10, 16)
		o.RangeFilter = &rangefilter.Options{BitsPerKey: rangeBits}
	}
	wal := "mapped"
	if rng.IntN(2) == 0 {
		o.DisableWALMapping, wal = true, "write"
	}
	o.DisableMmapReads = rng.IntN(2) == 0
	name := fmt.Sprintf("random(memtable %d, block %d, cache %d, immutable %d, L0 %d, file %d, L1 %d, filter %s, prefix %s, range filter bits %d, no compactions %v, nosync %v, WAL %s, pread only %v)",
		o.MemTableSize, o.BlockSize, o.BlockCacheSize, o.MaxImmutableMemTables, o.L0CompactionThreshold,
		o.TargetFileSize, o.LBaseMaxBytes, filter, prefix, rangeBits, o.DisableAutomaticCompactions, o.NoSync, wal, o.DisableMmapReads)
	return metaConfig{name, o, nil}
}

// TestMetamorphic is a metamorphic test in the style of Pebble's: a random
// sequence of operations (metamorphic_ops_test.go: writes, reads, iterators
// in both directions, snapshots, flushes, compactions, reopens, crashes)
// runs against the store under many option sets, and against an in-memory
// model. Each run records a history, the observable result of every
// operation, and every history must equal the model's. Options change where
// data lives (memtables, levels, blocks, filters, cache) but never what a
// read returns, so a difference between configurations is a bug in one of
// them, and a difference from the model is a bug even when every
// configuration shares it.
//
// After each reopen and crash the whole store is checked against what was
// acknowledged (dbTarget.reopen, dbTarget.crash): a synced store loses
// nothing; a NoSync store keeps a prefix of the writes, and what the crash
// lost is written again, so that its history stays comparable.
//
// Reproduce a failure with the seed it prints,
//
//	go test -run TestMetamorphic -metamorphic.seed N -metamorphic.ops M
//
// and add -metamorphic.reduce to shorten the sequence to the operations that
// matter. Long runs: -metamorphic.seeds 200 -metamorphic.ops 5000 (seeds 1
// to 200).
func TestMetamorphic(t *testing.T) {
	seeds := make([]uint64, 0, *metaSeeds)
	if *metaSeed != 0 {
		seeds = append(seeds, *metaSeed)
	} else {
		for s := 1; s <= *metaSeeds; s++ {
			seeds = append(seeds, uint64(s))
		}
	}
	var total metaStats
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			runMetamorphic(t, seed, *metaOps, &total)
		})
	}
	t.Logf("%d seeds: %d operations, %d run in all configurations; %d reopens, %d crashes (%d under NoSync, which lost %d acknowledged writes in all)",
		len(seeds), total.ops, total.runOps, total.reopens, total.crashes, total.noSyncCrashes, total.lostWrites)
}

// metaStats count what runs did, for the test's log: the operations
// generated, and over all configurations, the operations run, reopens and
// crashes.
type metaStats struct {
	ops, runOps, reopens, crashes, noSyncCrashes, lostWrites int
}

// runMetamorphic runs the sequence of seed under the model and every
// configuration, counts what it ran into stats, and fails at the first
// operation whose result differs.
func runMetamorphic(t *testing.T, seed uint64, n int, stats *metaStats) {
	ops := generateMetaOps(seed, n)
	want := runMetaOps(ops, newModelTarget())
	stats.ops += len(ops)
	type failure struct {
		config metaConfig
		got    []string
	}
	var failures []failure
	configs := metaConfigs(seed)
	for _, c := range configs {
		got := runConfig(c, ops, stats)
		if firstDiff(got, want) >= 0 {
			failures = append(failures, failure{c, got})
		}
	}
	if len(failures) == 0 {
		return
	}
	dir := saveHistories(t, seed, ops, want, func(save func(name string, ops []metaOp, results []string)) {
		for _, f := range failures {
			save(f.config.name, ops, f.got)
		}
	})
	var msg strings.Builder
	fmt.Fprintf(&msg, "seed %d: %d of %d configurations differ from the model", seed, len(failures), len(configs))
	for _, f := range failures {
		i := firstDiff(f.got, want)
		fmt.Fprintf(&msg, "\n  %s: first difference at operation %d: %s\n    got:  %s\n    want: %s",
			f.config.name, i, opText(ops, i), lineAt(f.got, i), lineAt(want, i))
	}
	if *metaReduceFlag {
		f := failures[0]
		fmt.Fprintf(&msg, "\n  %s, reduced:\n%s", f.config.name, reduceFailure(f.config, ops))
	} else {
		msg.WriteString("\nadd -metamorphic.reduce to shorten the failing sequences")
	}
	fmt.Fprintf(&msg, "\nhistories in %s\nreproduce: go test -run 'TestMetamorphic' -metamorphic.seed %d -metamorphic.ops %d", dir, seed, n)
	t.Fatal(msg.String())
}

// reduceFailure shortens ops while config still differs from the model, and
// returns the result as lines of "operation // result", marking where the
// result differs from the model's.
func reduceFailure(config metaConfig, ops []metaOp) string {
	histories := func(ops []metaOp) (got, want []string) {
		return runConfig(config, ops, &metaStats{}), runMetaOps(ops, newModelTarget())
	}
	ops = metaReduce(ops, func(ops []metaOp) bool {
		got, want := histories(ops)
		return firstDiff(got, want) >= 0
	})
	got, want := histories(ops)
	var b strings.Builder
	for i := range max(len(ops), len(got)) {
		fmt.Fprintf(&b, "    %s // %s", opText(ops, i), lineAt(got, i))
		if g, w := lineAt(got, i), lineAt(want, i); g != w {
			fmt.Fprintf(&b, " (model: %s)", w)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// runConfig runs ops against a new store under config and returns the
// history, ending with Close's error if Close fails.
func runConfig(config metaConfig, ops []metaOp, stats *metaStats) []string {
	target := newDBTarget(config, stats)
	if err := target.open(); err != nil {
		return []string{"Open: " + errResult(err)}
	}
	got := runMetaOps(ops, target)
	stats.runOps += len(got)
	if err := target.close(); err != nil {
		got = append(got, "Close: "+errResult(err))
	}
	return got
}

// runMetaOps runs ops against target and returns each one's result. A panic
// ends the history with the panic's text, and a store that could not be
// reopened ends it at that operation.
func runMetaOps(ops []metaOp, target metaTarget) (results []string) {
	defer func() {
		if r := recover(); r != nil {
			results = append(results, fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
		}
	}()
	for _, op := range ops {
		results = append(results, op.run(target))
		if d, ok := target.(*dbTarget); ok && d.db == nil {
			break
		}
	}
	return results
}

// firstDiff returns the index of the first result that differs, or -1.
func firstDiff(got, want []string) int {
	for i := range max(len(got), len(want)) {
		if lineAt(got, i) != lineAt(want, i) {
			return i
		}
	}
	return -1
}

func lineAt(results []string, i int) string {
	if i < len(results) {
		return results[i]
	}
	return "(history ended)"
}

func opText(ops []metaOp, i int) string {
	if i < len(ops) {
		return ops[i].String()
	}
	return "(after the last operation)"
}

// saveHistories writes the model's history and each failing configuration's
// as "index operation // result" lines, for diffing. They go to
// -metamorphic.dir, or else to a new temporary directory that is kept (a
// t.TempDir would be removed when the test ends).
func saveHistories(t *testing.T, seed uint64, ops []metaOp, want []string, each func(save func(name string, ops []metaOp, results []string))) string {
	dir := *metaDir
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", fmt.Sprintf("shale-metamorphic-seed%d-", seed))
	} else {
		dir = filepath.Join(dir, fmt.Sprintf("seed%d", seed))
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		t.Logf("cannot save histories: %v", err)
		return "(not saved)"
	}
	save := func(name string, ops []metaOp, results []string) {
		var b strings.Builder
		for i := range max(len(ops), len(results)) {
			fmt.Fprintf(&b, "%d %s // %s\n", i, opText(ops, i), lineAt(results, i))
		}
		if err := os.WriteFile(filepath.Join(dir, name+".history"), []byte(b.String()), 0o644); err != nil {
			t.Logf("cannot save %s: %v", name, err)
		}
	}
	save("model", ops, want)
	each(save)
	return dir
}

// TestMetamorphicKeptPrefix tests the rule a NoSync crash is checked by.
func TestMetamorphicKeptPrefix(t *testing.T) {
	put := func(k, v string) metaMutation { return metaMutation{key: k, value: v} }
	durable := metaState{"a": "1"}
	since := []metaWrite{
		{muts: []metaMutation{put("b", "2")}},
		{batch: true, muts: []metaMutation{put("c", "3"), {kind: mutDelete, key: "a"}}},
		{muts: []metaMutation{put("b", "4")}},
	}
	for _, tc := range []struct {
		got  metaState
		want int
	}{
		{metaState{"a": "1"}, 0},
		{metaState{"a": "1", "b": "2"}, 1},
		{metaState{"b": "2", "c": "3"}, 2},
		{metaState{"b": "4", "c": "3"}, 3},
		{metaState{}, -1},                             // lost the durable state
		{metaState{"a": "1", "b": "2", "c": "3"}, -1}, // half a batch
		{metaState{"a": "1", "b": "4"}, -1},           // a later write without an earlier one
		{metaState{"a": "1", "b": "2", "z": "9"}, -1}, // a write never made
		{metaState{"b": "4", "c": "3", "a": "1"}, -1}, // a deleted key back
	} {
		if got := keptPrefix(durable, since, tc.got); got != tc.want {
			t.Errorf("keptPrefix(%v) = %d, want %d", tc.got, got, tc.want)
		}
	}
}

// dbTarget runs operations against a DB on a vfs.MemFS. Besides the open
// snapshots and iterators it keeps a ledger of what was acknowledged, which
// it checks the whole store against after every reopen and crash.
type dbTarget struct {
	config metaConfig
	opens  int // Opens so far
	fs     *vfs.MemFS
	db     *DB // nil once an Open failed
	snaps  map[int]*Snapshot
	iters  map[int]*Iterator
	stats  *metaStats

	// acked is the state every acknowledged write leads to. durable is the
	// state no crash may lose: as of the last reopen or recovery, whose
	// data Open wrote out and synced. sinceDurable are the writes
	// acknowledged after it, in order.
	acked        metaState
	durable      metaState
	sinceDurable []metaWrite
}

// newDBTarget returns a target on an empty file system; open it before
// use.
func newDBTarget(config metaConfig, stats *metaStats) *dbTarget {
	return &dbTarget{
		config:  config,
		fs:      vfs.NewMem(),
		snaps:   map[int]*Snapshot{},
		iters:   map[int]*Iterator{},
		stats:   stats,
		acked:   metaState{},
		durable: metaState{},
	}
}

// open opens the store with the configuration's options, for a reopen
// with the next of its reopen options if it has some.
func (d *dbTarget) open() error {
	opts := d.config.opts
	if d.opens > 0 && len(d.config.reopen) > 0 {
		opts = d.config.reopen[(d.opens-1)%len(d.config.reopen)]
		opts.NoSync = d.config.opts.NoSync
	}
	d.opens++
	opts.FS = d.fs
	db, err := Open("db", &opts)
	d.db = db
	return err
}

// close closes the store at the end of a run.
func (d *dbTarget) close() error {
	if d.db == nil {
		return nil
	}
	return d.db.Close()
}

func (d *dbTarget) write(w metaWrite) error {
	if err := d.apply(w); err != nil {
		return err
	}
	d.acked.apply(w)
	d.sinceDurable = append(d.sinceDurable, w)
	return nil
}

// apply makes w's calls on the DB.
func (d *dbTarget) apply(w metaWrite) error {
	if !w.batch {
		switch m := w.muts[0]; m.kind {
		case mutDelete:
			return d.db.Delete([]byte(m.key))
		case mutDeleteRange:
			return d.db.DeleteRange([]byte(m.key), []byte(m.end))
		default:
			return d.db.Put([]byte(m.key), []byte(m.value))
		}
	}
	b := d.db.NewBatch()
	for _, m := range w.muts {
		switch m.kind {
		case mutDelete:
			b.Delete([]byte(m.key))
		case mutDeleteRange:
			b.DeleteRange([]byte(m.key), []byte(m.end))
		default:
			b.Put([]byte(m.key), []byte(m.value))
		}
	}
	return d.db.Apply(b)
}

func (d *dbTarget) get(snap int, key string) (string, error) {
	var v []byte
	var err error
	if snap < 0 {
		v, err = d.db.Get([]byte(key))
	} else {
		v, err = d.snaps[snap].Get([]byte(key))
	}
	return string(v), err
}

func (d *dbTarget) newSnapshot(id int) { d.snaps[id] = d.db.NewSnapshot() }

func (d *dbTarget) closeSnapshot(id int) error {
	err := d.snaps[id].Close()
	delete(d.snaps, id)
	return err
}

func (d *dbTarget) newIter(id, snap int, lower, upper *string, prefix string) {
	opts := &IterOptions{LowerBound: boundBytes(lower), UpperBound: boundBytes(upper), Prefix: []byte(prefix)}
	if snap < 0 {
		d.iters[id] = d.db.NewIter(opts)
	} else {
		d.iters[id] = d.snaps[snap].NewIter(opts)
	}
}

// boundBytes is the bound as IterOptions takes it: nil for none, and a
// non-nil slice for every key, the empty one included.
func boundBytes(b *string) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, *b...)
}

func (d *dbTarget) moveIter(id int, m iterMove, key string) (string, string, bool, error) {
	it := d.iters[id]
	var ok bool
	switch m {
	case moveFirst:
		ok = it.First()
	case moveLast:
		ok = it.Last()
	case moveSeekGE:
		ok = it.SeekGE([]byte(key))
	case moveSeekLT:
		ok = it.SeekLT([]byte(key))
	case moveNext:
		ok = it.Next()
	case movePrev:
		ok = it.Prev()
	}
	if !ok {
		return "", "", false, it.Error()
	}
	return string(it.Key()), string(it.Value()), true, nil
}

func (d *dbTarget) closeIter(id int) error {
	err := d.iters[id].Close()
	delete(d.iters, id)
	return err
}

func (d *dbTarget) flush() error   { return d.db.Flush() }
func (d *dbTarget) compact() error { return d.db.Compact() }

// reopen closes the DB and opens it again. A clean Close loses nothing, in
// any mode: the store must hold exactly what was acknowledged.
func (d *dbTarget) reopen() error {
	d.stats.reopens++
	closeErr := d.db.Close()
	if err := d.open(); err != nil {
		return err
	}
	if closeErr != nil {
		return closeErr
	}
	return d.checkAllKept("a reopen")
}

// crash opens what a power loss would leave now (MemFS.CrashClone: the
// synced bytes of the files whose names were synced). Synced, the store must
// hold exactly what was acknowledged. Under NoSync it must hold what some
// prefix of the acknowledged writes leads to, each batch whole or absent,
// and no less than the durable state; the writes the crash lost are then
// applied again, so that the store once more holds everything acknowledged
// and the rest of the history is comparable with every other
// configuration's.
func (d *dbTarget) crash() error {
	d.stats.crashes++
	crashed := d.fs.CrashClone()
	// The process is gone; what its Close does to the old FS no longer
	// matters.
	d.db.Close()
	d.fs = crashed
	if err := d.open(); err != nil {
		return err
	}
	if !d.config.opts.NoSync {
		return d.checkAllKept("a crash")
	}
	d.stats.noSyncCrashes++
	got, err := d.contents()
	if err != nil {
		return err
	}
	kept := keptPrefix(d.durable, d.sinceDurable, got)
	if kept < 0 {
		return fmt.Errorf("after a NoSync crash the store holds no prefix of the %d writes acknowledged since the last reopen; against all of them: %s",
			len(d.sinceDurable), got.diff(d.acked))
	}
	lost := d.sinceDurable[kept:]
	d.stats.lostWrites += len(lost)
	d.durable, d.sinceDurable = got, nil
	for _, w := range lost {
		if err := d.apply(w); err != nil {
			return fmt.Errorf("writing again what the crash lost: %w", err)
		}
		d.sinceDurable = append(d.sinceDurable, w)
	}
	return nil
}

// keptPrefix returns how many of the writes since, applied in order to
// durable, lead to got (the most, if several counts do), or -1 if none
// does: got then lost part of durable, holds part of a batch, or holds
// writes out of order.
func keptPrefix(durable metaState, since []metaWrite, got metaState) int {
	state, kept := durable.clone(), -1
	if got.diff(state) == "" {
		kept = 0
	}
	for i, w := range since {
		state.apply(w)
		if got.diff(state) == "" {
			kept = i + 1
		}
	}
	return kept
}

// checkAllKept checks that the store holds exactly what was acknowledged;
// that state is then durable.
func (d *dbTarget) checkAllKept(after string) error {
	got, err := d.contents()
	if err != nil {
		return err
	}
	if diff := got.diff(d.acked); diff != "" {
		return fmt.Errorf("after %s the store lost acknowledged writes or kept others: %s", after, diff)
	}
	d.durable, d.sinceDurable = d.acked.clone(), nil
	return nil
}

// contents reads the whole store with an iterator.
func (d *dbTarget) contents() (metaState, error) {
	s := metaState{}
	it := d.db.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		s[string(it.Key())] = string(it.Value())
	}
	return s, errors.Join(it.Error(), it.Close())
}
