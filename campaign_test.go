package shale

import (
	"errors"
	"flag"
	"fmt"
	"iter"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

var long = flag.Bool("long", false, "run the long crash, fault and metamorphic campaigns")

// walMode is how a campaign's store writes its WAL: groups stored through a
// shared mapping of the file (the default), or written with write(2)
// (Options.DisableWALMapping). The two leave different bytes to a crash
// (a mapped WAL ends in allocated zeros until it is closed) and issue
// different operations (a mapped WAL's Close cuts the file). The mapped
// mode reads tables through mappings too (the default), so that faults
// of views and mappings are campaigned; the written one with ReadAt
// (Options.DisableMmapReads).
type walMode struct {
	name  string
	write bool // Options.DisableWALMapping and DisableMmapReads
}

var walModes = []walMode{{"mapped", false}, {"write", true}}

// campaignOptions make a small store in which data moves through every
// layer within a few hundred writes: tiny memtables, blocks and files, and
// compactions that start early.
func campaignOptions(fs vfs.FS, noSync bool, wal walMode) *Options {
	return &Options{
		FS:                    fs,
		NoSync:                noSync,
		DisableWALMapping:     wal.write,
		DisableMmapReads:      wal.write,
		MemTableSize:          8 << 10,
		BlockSize:             512,
		BlockCacheSize:        32 << 10,
		L0CompactionThreshold: 2,
		LBaseMaxBytes:         24 << 10,
		TargetFileSize:        8 << 10,
	}
}

// failures tallies a campaign's failures by kind, keeping the first example
// of each, so that one run reports every distinct problem and how often it
// occurs instead of stopping at the first.
type failures struct {
	mu      sync.Mutex
	total   int
	count   map[string]int
	example map[string]string
}

func newFailures() *failures {
	return &failures{count: map[string]int{}, example: map[string]string{}}
}

var digits = regexp.MustCompile(`[0-9]+`)

// add records a failure. Its kind is the problem with numbers (file names,
// offsets, counts) blanked, so that one defect is one kind.
func (f *failures) add(problem, where string) {
	kind := digits.ReplaceAllString(problem, "N")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total++
	f.count[kind]++
	if _, ok := f.example[kind]; !ok {
		f.example[kind] = where + ": " + problem
	}
}

// report logs each kind of failure with its count and first example, and
// fails the test if there was any.
func (f *failures) report(t *testing.T, tried string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	t.Logf("%s, %d failures", tried, f.total)
	if f.total == 0 {
		return
	}
	kinds := slices.SortedFunc(func(yield func(string) bool) {
		for k := range f.count {
			if !yield(k) {
				return
			}
		}
	}, func(a, b string) int { return f.count[b] - f.count[a] })
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n%6d x %s\n         first: %s", f.count[k], k, f.example[k])
	}
	t.Errorf("%d failures, by kind:%s", f.total, b.String())
}

// mutates reports whether an operation can change what a crash leaves.
func mutates(op vfs.Op) bool {
	switch op {
	case vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpSyncDir, vfs.OpRename, vfs.OpRemove, vfs.OpTruncate, vfs.OpLink:
		return true
	}
	return false
}

// crashModels are the crash models every crash point is tried with.
var crashModels = []struct {
	name string
	mode vfs.CrashMode
}{{"synced", vfs.CrashSynced}, {"pages", vfs.CrashPages}, {"torn", vfs.CrashTorn}}

// TestCrashCampaign simulates a power loss before every file-system
// operation that can change what a crash leaves (create, write or mapped
// store, sync, directory sync, rename, remove, truncate) of a mixed workload
// (puts, deletes, batches, groups of concurrent batches that commit
// together, flushes, compactions, snapshots, reopens), in synced and NoSync
// modes, with the WAL mapped and written (walModes), under each crash model
// (exactly the synced bytes; a random subset of the unsynced pages; a torn
// prefix of them). Each crashed store must open and hold, synced, every
// acknowledged write and no partial batch, or, NoSync, a prefix of the
// acknowledged history. At some crash points (all with -long) the store is
// crashed again before every mutating operation of its recovery, and each of
// those must recover to the same data. The short run tries every 4th crash
// point of one seed in each WAL mode (the points between them in the other
// mode) and nests a second crash in every 25th store checked; -long tries
// every point of 2 longer workloads in both modes.
func TestCrashCampaign(t *testing.T) {
	seeds, steps, every, nestedEvery := []uint64{1}, 250, 4, 25
	if *long {
		seeds, steps, every, nestedEvery = []uint64{1, 2}, 500, 1, 1
	}
	for _, noSync := range []bool{false, true} {
		for _, seed := range seeds {
			for i, wal := range walModes {
				offset := i * every / len(walModes) // 0 with -long
				t.Run(fmt.Sprintf("nosync=%v/seed=%d/wal=%s", noSync, seed, wal.name), func(t *testing.T) {
					crashCampaign(t, seed, steps, every, offset, nestedEvery, noSync, wal)
				})
			}
		}
	}
}

// crashCampaign runs the workload of seed and crashes it before every
// every-th mutating operation, starting with the offset-th.
func crashCampaign(t *testing.T, seed uint64, steps, every, offset, nestedEvery int, noSync bool, wal walMode) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	h := newHistory()
	fails := newFailures()
	var (
		mu                       sync.Mutex // serializes crash points
		points, checked, nestedN int
		walWrites, cuts          int          // crash points before a WAL write (or store) and before a truncate
		walCreates               int          // crash points before a WAL's creation: a rotation's, once the old WAL is ended, or Open's
		progress                 atomic.Int64 // mutating operations seen and crashed stores checked
	)
	crashAt := func(op vfs.Op, path string) error {
		if !mutates(op) {
			return nil
		}
		progress.Add(1)
		mu.Lock()
		defer mu.Unlock()
		p := points
		points++
		switch {
		case op == vfs.OpWrite && strings.HasSuffix(path, ".log"):
			walWrites++
		case op == vfs.OpTruncate:
			cuts++
		case op == vfs.OpCreate && strings.HasSuffix(path, ".log"):
			walCreates++
		}
		if p%every != offset {
			return nil
		}
		for i, model := range crashModels {
			before := h.mark()
			c := mem.CrashCloneWith(vfs.CrashOptions{Mode: model.mode, Seed: seed<<32 | uint64(p)})
			m := crashMark{lo: before.lo, hi: h.mark().hi}
			where := fmt.Sprintf("WAL %s, crash point %d (before %v %s), model %s", wal.name, p, op, path, model.name)
			checked++
			nest := (p/every+i)%nestedEvery == 0
			nestedN += checkCrash(c, h, m, noSync, wal, nest, fails, where)
			progress.Add(1)
		}
		return nil
	}
	efs.SetInjector(crashAt)

	r := &runner{open: func() (*DB, error) { return Open("db", campaignOptions(efs, noSync, wal)) }, rec: h}
	var err error
	withProgress(t, 2*time.Minute, "the workload", progress.Load, func() { err = runWorkload(r, genWorkload(seed, steps)) })
	if err != nil {
		t.Fatal(err)
	}
	efs.SetInjector(nil)
	for _, model := range crashModels {
		c := mem.CrashCloneWith(vfs.CrashOptions{Mode: model.mode, Seed: seed})
		checked++
		checkCrash(c, h, h.mark(), noSync, wal, false, fails, "WAL "+wal.name+", after Close, model "+model.name)
	}
	fails.report(t, fmt.Sprintf("WAL %s: %d writing steps acknowledged; %d crash points (%d before a WAL write or store, %d before a truncate, %d before a WAL's creation), %d crashed stores checked, %d second crashes during recovery",
		wal.name, h.mark().lo, points, walWrites, cuts, walCreates, checked, nestedN))
}

// runWorkload opens the store and runs steps; any error fails it.
func runWorkload(r *runner, steps []step) error {
	var err error
	if r.db, err = r.open(); err != nil {
		return err
	}
	for i, s := range steps {
		if err := r.run(s); err != nil {
			r.close()
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	return r.close()
}

// checkCrash opens the crashed store c and checks it holds a state the
// history allows at mark m. With nest, it crashes again before every
// mutating operation of that recovery (Open, the scan and Close), under each
// crash model in turn, and checks that each of those stores recovers to the
// same state. It returns the number of second crashes tried.
func checkCrash(c *vfs.MemFS, h *history, m crashMark, noSync bool, wal walMode, nest bool, fails *failures, where string) int {
	var (
		mu     sync.Mutex // the recovered DB's background work also crashes
		nested []*vfs.MemFS
	)
	fs := vfs.FS(c)
	if nest {
		efs := vfs.NewErrorFS(c)
		efs.SetInjector(func(op vfs.Op, _ string) error {
			mu.Lock()
			defer mu.Unlock()
			if mutates(op) {
				model := crashModels[len(nested)%len(crashModels)].mode
				nested = append(nested, c.CrashCloneWith(vfs.CrashOptions{Mode: model, Seed: uint64(len(nested))}))
			}
			return nil
		})
		fs = efs
	}
	fp, err := recoverState(fs, noSync, wal)
	if err != nil {
		fails.add(err.Error(), where)
		return 0
	}
	if msg := h.check(fp, m, noSync); msg != "" {
		fails.add("recovered store "+msg, where)
		return 0
	}
	for i, n := range nested {
		nfp, err := recoverState(n, noSync, wal)
		switch {
		case err != nil:
			fails.add("after a second crash during recovery: "+err.Error(), fmt.Sprintf("%s, second crash %d", where, i))
		case nfp != fp:
			fails.add("after a second crash during recovery, the store holds other data", fmt.Sprintf("%s, second crash %d", where, i))
		}
	}
	return len(nested)
}

// recoverState opens the store on fs, reads it whole, closes it, and
// returns its state's fingerprint.
func recoverState(fs vfs.FS, noSync bool, wal walMode) (uint64, error) {
	db, err := Open("db", campaignOptions(fs, noSync, wal))
	if err != nil {
		return 0, err
	}
	s, err := scanState(db)
	if err := errors.Join(err, db.Close()); err != nil {
		return 0, err
	}
	return fingerprint(s), nil
}

// withTimeout runs f and fails the test if it does not return within d: a
// hang is a failure, not a CI timeout twenty minutes later.
func withTimeout(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// withProgress runs f and fails the test if progress returns the same
// count for idle: a hang. A campaign's length grows with its crash points
// and with the machine's load, so a bound on the whole run either trips on
// a loaded machine or waits long for a real hang; progress tells the two
// apart.
func withProgress(t *testing.T, idle time.Duration, what string, progress func() int64, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, since := progress(), time.Now()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			if n := progress(); n != last {
				last, since = n, time.Now()
			} else if time.Since(since) >= idle {
				t.Fatalf("%s made no progress for %v (stuck after %d steps)", what, idle, n)
			}
		}
	}
}

// keyModel is what a store may hold after writes that failed: per key, the
// value of the last acknowledged write (nil: absent), or that of any write
// that failed after it, since a failed write may or may not have reached
// the log.
type keyModel struct {
	acked map[string]*string
	maybe map[string][]*string
}

func newKeyModel() *keyModel {
	return &keyModel{acked: map[string]*string{}, maybe: map[string][]*string{}}
}

func (m *keyModel) begin([][]kv) {}

// end records each write's outcome. The writes of a step touch disjoint
// keys, so their order does not matter.
func (m *keyModel) end(writes [][]kv, errs []error) {
	for i, ops := range writes {
		for k, v := range m.effects(ops) {
			if errs[i] == nil {
				m.acked[k] = v
				delete(m.maybe, k)
			} else {
				m.maybe[k] = append(m.maybe[k], v)
			}
		}
	}
}

// effects returns what ops leave each key they touch: a value, or nil for
// absent. A range deletion touches every key the model knows of in its
// range; a key never written cannot be in the store.
func (m *keyModel) effects(ops []kv) map[string]*string {
	eff := map[string]*string{}
	for _, op := range ops {
		if op.end == "" {
			eff[op.key] = op.val
			continue
		}
		for _, known := range []iter.Seq[string]{maps.Keys(m.acked), maps.Keys(m.maybe), maps.Keys(eff)} {
			for k := range known {
				if op.covers(k) {
					eff[k] = nil
				}
			}
		}
	}
	return eff
}

// check compares a store's content with the model and describes the first
// key that holds a value no write left it, or "".
func (m *keyModel) check(s state) string {
	allowed := func(k string, got *string) bool {
		for _, v := range append([]*string{m.acked[k]}, m.maybe[k]...) {
			if (v == nil) == (got == nil) && (v == nil || *v == *got) {
				return true
			}
		}
		return false
	}
	for k := range m.acked {
		if v, ok := s[k]; !ok && !allowed(k, nil) {
			return fmt.Sprintf("acknowledged write of %s lost", k)
		} else if ok && !allowed(k, &v) {
			return fmt.Sprintf("%s holds a value no later write left", k)
		}
	}
	for k, v := range s {
		if _, ok := m.acked[k]; !ok && !allowed(k, &v) {
			return fmt.Sprintf("%s holds a value never acknowledged", k)
		}
	}
	return ""
}

// faultVariants are the ways an operation fails in TestFaultCampaign.
var faultVariants = []struct {
	name       string
	err        error
	persistent bool
}{
	{"once", vfs.ErrInjected, false},
	{"once-ENOSPC", vfs.ErrNoSpace, false},
	{"persistent", vfs.ErrInjected, true},
	{"persistent-ENOSPC", vfs.ErrNoSpace, true},
}

// TestFaultCampaign fails one file-system operation, chosen by its index in
// the run, of a workload of puts, deletes, batches, flushes, compactions,
// snapshots and reopens, once or from then on, with a plain I/O error or
// ENOSPC, with the WAL mapped and written (walModes): every index of a
// 250-step workload in each mode with -long; otherwise every 14th of an
// 80-step one in each mode, the mapped runs from index 0 and the written
// ones from index 7. Every error a call returns must be the injected one;
// nothing may panic or hang; and once the store is reopened on a healthy
// file system, as the run left it and after a power loss, every
// acknowledged write must be there and every other value must come from a
// write that failed.
func TestFaultCampaign(t *testing.T) {
	seed, steps, every := uint64(7), 80, 14
	if *long {
		steps, every = 250, 1
	}
	for mode, wal := range walModes {
		t.Run("wal="+wal.name, func(t *testing.T) {
			// A run without errors counts the operations; runs with errors
			// may do fewer (a failed store stops) or, with background work,
			// a few more.
			probe := &vfs.IndexInjector{Index: math.MaxInt64} // counts, never fails
			withTimeout(t, time.Minute, "the fault-free run", func() {
				if problem := faultRun(seed, steps, wal, probe); problem != "" {
					t.Errorf("without faults: %s", problem)
				}
			})
			n := int(probe.Count())
			for _, v := range faultVariants {
				t.Run(v.name, func(t *testing.T) {
					fails := newFailures()
					fired := 0
					for i := mode * every / len(walModes); i < n; i += every {
						ii := &vfs.IndexInjector{Index: int64(i), Err: v.err, Persistent: v.persistent}
						withTimeout(t, time.Minute, fmt.Sprintf("the run failing operation %d", i), func() {
							if problem := faultRun(seed, steps, wal, ii); problem != "" {
								fails.add(problem, fmt.Sprintf("WAL %s, operation %d", wal.name, i))
							}
						})
						if ii.Fired() {
							fired++
						}
					}
					fails.report(t, fmt.Sprintf("WAL %s: %d operations in the fault-free run; %d runs with an error injected", wal.name, n, fired))
				})
			}
		})
	}
}

// faultRun runs the workload of seed on a file system that fails what ii
// says, then reopens the store without faults and checks it. It returns
// what went wrong, or "".
func faultRun(seed uint64, steps int, wal walMode, ii *vfs.IndexInjector) string {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	efs.SetInjector(ii.Inject)
	m := newKeyModel()
	r := &runner{open: func() (*DB, error) { return Open("db", campaignOptions(efs, false, wal)) }, rec: m}
	notInjected := func(err error) bool {
		return err != nil && !errors.Is(err, vfs.ErrInjected)
	}
	var err error
	if r.db, err = r.open(); notInjected(err) {
		return "Open: " + err.Error()
	}
	for i, s := range genWorkload(seed, steps) {
		if r.db == nil {
			break // an Open failed: the store is not usable until the disk is
		}
		err := r.run(s)
		if errors.Is(err, errSnapshotChanged) || notInjected(err) {
			r.close()
			return fmt.Sprintf("step %d: %v", i, err)
		}
	}
	if err := r.close(); notInjected(err) {
		return "Close: " + err.Error()
	}
	efs.SetInjector(nil)
	// Reopen after a power loss, then as the run left the disk.
	for _, fs := range []struct {
		name string
		fs   *vfs.MemFS
	}{{"after a power loss", mem.CrashClone()}, {"as left", mem}} {
		db, err := Open("db", campaignOptions(fs.fs, false, wal))
		if err != nil {
			return fmt.Sprintf("reopen %s on a healthy disk: %v", fs.name, err)
		}
		s, err := scanState(db)
		if err := errors.Join(err, db.Close()); err != nil {
			return fmt.Sprintf("reading the store reopened %s: %v", fs.name, err)
		}
		if problem := m.check(s); problem != "" {
			return fmt.Sprintf("reopened %s: %s", fs.name, problem)
		}
	}
	return ""
}
