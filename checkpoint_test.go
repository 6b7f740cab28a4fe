package shale

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// ckptWriter is one writer of TestCheckpointModel. It applies its batches
// in order, one at a time, and counts those it began and those that were
// acknowledged, so that a checkpoint can be matched to a prefix of them.
type ckptWriter struct {
	id      int
	batches [][]kv
	begun   atomic.Int64
	acked   atomic.Int64
}

// newCkptWriter draws n batches for writer id over its own keys: puts of
// values up to a few hundred bytes, deletes and range deletions, and in
// every batch a put of the writer's marker key to the batch's index, so
// that a store's state names the prefix of batches it holds.
func newCkptWriter(id int, seed uint64, n int) *ckptWriter {
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	w := &ckptWriter{id: id}
	key := func(i int) string { return fmt.Sprintf("w%d-%03d", id, i) }
	for i := range n {
		var ops []kv
		for range 1 + rng.IntN(5) {
			switch r := rng.IntN(20); {
			case r == 0:
				lo := rng.IntN(40)
				ops = append(ops, kv{key: key(lo), end: key(lo + 1 + rng.IntN(8))})
			case r < 4:
				ops = append(ops, kv{key: key(rng.IntN(40))})
			default:
				v := fmt.Sprintf("b%d-%s", i, strings.Repeat("x", rng.IntN(300)))
				ops = append(ops, kv{key: key(rng.IntN(40)), val: &v})
			}
		}
		marker := strconv.Itoa(i)
		w.batches = append(w.batches, append(ops, kv{key: w.marker(), val: &marker}))
	}
	return w
}

// marker is the key every batch of w sets to its index; it sorts after
// every other key of w, out of reach of w's range deletions.
func (w *ckptWriter) marker() string { return fmt.Sprintf("w%d-marker", w.id) }

// run applies the batches until they are done or stop is closed.
func (w *ckptWriter) run(db *DB, stop <-chan struct{}) error {
	for i, ops := range w.batches {
		select {
		case <-stop:
			return nil
		default:
		}
		b := &Batch{}
		addOps(b, ops)
		w.begun.Store(int64(i + 1))
		if err := db.Apply(b); err != nil {
			return err
		}
		w.acked.Store(int64(i + 1))
	}
	return nil
}

// check compares w's keys in s with the model: they must hold the state
// after some prefix of w's batches, no shorter than acked and no longer
// than begun. It describes the first difference, or returns "".
func (w *ckptWriter) check(s state, acked, begun int64) string {
	p := int64(0)
	if v, ok := s[w.marker()]; ok {
		i, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Sprintf("%s holds %q", w.marker(), v)
		}
		p = int64(i) + 1
	}
	if p < acked || p > begun {
		return fmt.Sprintf("writer %d: holds its first %d batches; %d were acknowledged before the checkpoint began and %d begun before it returned", w.id, p, acked, begun)
	}
	want := state{}
	for _, ops := range w.batches[:p] {
		want.apply(ops)
	}
	prefix := fmt.Sprintf("w%d-", w.id)
	got := state{}
	for k, v := range s {
		if strings.HasPrefix(k, prefix) {
			got[k] = v
		}
	}
	if !maps.Equal(got, want) {
		return fmt.Sprintf("writer %d: holds the marker of batch %d but not the state after it (a partial batch or a lost write): %s", w.id, p-1, diffStates(got, want))
	}
	return ""
}

// fileHashes hashes every file in dir by name.
func fileHashes(t *testing.T, fsys vfs.FS, dir string) map[string]uint64 {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]uint64{}
	for _, name := range names {
		h := fnv.New64a()
		h.Write(readFile(t, fsys, fsys.PathJoin(dir, name)))
		hashes[name] = h.Sum64()
	}
	return hashes
}

// ckptOptions make a small store in which memtables flush and tables
// compact every few dozen batches.
func ckptOptions(fsys vfs.FS, wal walMode) *Options {
	o := campaignOptions(fsys, false, wal)
	o.NoSync = true // the checkpoint's promise does not depend on it; it saves time
	return o
}

// TestCheckpointModel takes checkpoints while writers apply batches and
// another goroutine flushes and compacts (automatic compactions run too),
// with the WAL mapped and written. Each checkpoint must hold, per writer,
// the state after a prefix of its batches that includes every batch
// acknowledged before Checkpoint began (and possibly later ones): no
// partial batch, no lost write. Each must pass Check and open; and its
// files must be unchanged after the source went on writing, flushing and
// compacting.
func TestCheckpointModel(t *testing.T) {
	writers, batches, checkpoints := 3, 400, 10
	if *long {
		batches, checkpoints = 2000, 60
	}
	for _, wal := range walModes {
		t.Run("wal="+wal.name, func(t *testing.T) {
			mem := vfs.NewMem()
			db, err := Open("db", ckptOptions(mem, wal))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if db != nil {
					db.Close()
				}
			}()
			var ws []*ckptWriter
			for i := range writers {
				ws = append(ws, newCkptWriter(i, 1, batches))
			}
			stop := make(chan struct{})
			errs := make(chan error, writers+1)
			var wg sync.WaitGroup
			var writing sync.WaitGroup
			for _, w := range ws {
				wg.Add(1)
				writing.Add(1)
				go func() {
					defer wg.Done()
					defer writing.Done()
					errs <- w.run(db, stop)
				}()
			}
			writersDone := make(chan struct{})
			go func() { writing.Wait(); close(writersDone) }()
			var maintenance atomic.Int64
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-writersDone:
						errs <- nil
						return
					default:
					}
					op := db.Flush
					if i%3 == 2 {
						op = db.Compact
					}
					if err := op(); err != nil {
						errs <- err
						return
					}
					maintenance.Add(1)
				}
			}()

			type ckpt struct {
				dir           string
				acked, begun  []int64
				hashes        map[string]uint64
				maintenanceAt int64
			}
			total := func() (n int64) {
				for _, w := range ws {
					n += w.acked.Load()
				}
				return n
			}
			var cks []ckpt
			for i := range checkpoints {
				// Let the writers get ahead before each checkpoint, unless
				// they are done.
				for target := total() + int64(writers*batches/(checkpoints+2)); total() < target; {
					select {
					case <-writersDone:
						target = 0
					default:
						time.Sleep(time.Millisecond)
					}
				}
				c := ckpt{dir: fmt.Sprintf("ckpt/%02d", i), maintenanceAt: maintenance.Load()}
				for _, w := range ws {
					c.acked = append(c.acked, w.acked.Load())
				}
				if err := db.Checkpoint(c.dir); err != nil {
					t.Fatalf("checkpoint %d: %v", i, err)
				}
				for _, w := range ws {
					c.begun = append(c.begun, w.begun.Load())
				}
				c.hashes = fileHashes(t, mem, c.dir)
				cks = append(cks, c)
			}
			close(stop)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			m := db.Metrics()
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = nil

			var acked int64
			for _, w := range ws {
				acked += w.acked.Load()
			}
			during := 0
			for i, c := range cks {
				if got := fileHashes(t, mem, c.dir); !maps.Equal(got, c.hashes) {
					t.Errorf("checkpoint %d: its files changed after it was taken:\n was %v\n now %v", i, c.hashes, got)
				}
				if err := Check(c.dir, ckptOptions(mem, wal)); err != nil {
					t.Errorf("checkpoint %d: %v", i, err)
					continue
				}
				cdb, err := Open(c.dir, ckptOptions(mem, wal))
				if err != nil {
					t.Errorf("checkpoint %d: %v", i, err)
					continue
				}
				s, err := scanState(cdb)
				if err := errors.Join(err, cdb.Close()); err != nil {
					t.Fatalf("checkpoint %d: %v", i, err)
				}
				for j, w := range ws {
					if problem := w.check(s, c.acked[j], c.begun[j]); problem != "" {
						t.Errorf("checkpoint %d: %s", i, problem)
					}
				}
				if i > 0 && c.maintenanceAt > cks[i-1].maintenanceAt {
					during++
				}
			}
			t.Logf("%d checkpoints (%d with a flush or compaction of the source between it and the one before); %d batches acknowledged by %d writers; the source: %d flushes, %d compactions, %d trivial moves",
				len(cks), during, acked, writers, m.Flushes, m.Compactions, m.TrivialMoves)
		})
	}
}

// TestCheckpointNotEmpty: a checkpoint into a directory that holds
// anything, a stray file or a store, fails with an error matching
// fs.ErrExist and changes nothing there; one into a file fails too.
func TestCheckpointNotEmpty(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	db, err := Open("db", &Options{FS: efs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint("store"); err != nil {
		t.Fatal(err)
	}
	if err := mem.MkdirAll("stray", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, mem, "stray/notes.txt", []byte("mine"))
	writeFile(t, mem, "file", []byte("a file"))
	for _, dir := range []string{"stray", "store", "db", "file"} {
		contents := func() map[string]uint64 {
			if dir == "file" {
				h := fnv.New64a()
				h.Write(readFile(t, mem, dir))
				return map[string]uint64{dir: h.Sum64()}
			}
			return fileHashes(t, mem, dir)
		}
		before := contents()
		var touched []string
		efs.SetInjector(func(op vfs.Op, path string) error {
			if op != vfs.OpStat && op != vfs.OpList && op != vfs.OpOpen && op != vfs.OpRead && op != vfs.OpClose &&
				(path == dir || strings.HasPrefix(path, dir+"/")) {
				touched = append(touched, fmt.Sprintf("%v %s", op, path))
			}
			return nil
		})
		err := db.Checkpoint(dir)
		efs.SetInjector(nil)
		if !errors.Is(err, fs.ErrExist) {
			t.Errorf("checkpoint into %s: %v, want an error matching fs.ErrExist", dir, err)
		}
		if len(touched) > 0 {
			t.Errorf("checkpoint into %s: touched it: %v", dir, touched)
		}
		if after := contents(); !maps.Equal(before, after) {
			t.Errorf("checkpoint into %s: its files changed:\n was %v\n now %v", dir, before, after)
		}
	}
	// An empty directory takes a checkpoint.
	if err := mem.MkdirAll("empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint("empty"); err != nil {
		t.Fatal(err)
	}
	if err := Check("empty", &Options{FS: mem}); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointCopies: where the file system cannot hard-link the tables
// (ErrLinkUnsupported), Checkpoint copies them; where it can, it links
// them and copies none. Either way the checkpoint opens with every key,
// and a table removed from the source stays whole in the checkpoint.
func TestCheckpointCopies(t *testing.T) {
	for _, link := range []bool{true, false} {
		t.Run(fmt.Sprintf("link=%v", link), func(t *testing.T) {
			mem := vfs.NewMem()
			efs := vfs.NewErrorFS(mem)
			var logs []string
			o := &Options{FS: efs, Logger: func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }}
			db, err := Open("db", o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			want := state{}
			for i := range 300 {
				k, v := fmt.Sprintf("k%04d", i), fmt.Sprintf("v%d", i)
				if err := db.Put([]byte(k), []byte(v)); err != nil {
					t.Fatal(err)
				}
				want[k] = v
				if i%100 == 99 {
					if err := db.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			var links, creates int
			efs.SetInjector(func(op vfs.Op, path string) error {
				switch {
				case op == vfs.OpLink && !link:
					return fmt.Errorf("injected: %w", vfs.ErrLinkUnsupported)
				case op == vfs.OpLink:
					links++
				case op == vfs.OpCreate && strings.HasSuffix(path, ".sst"):
					creates++
				}
				return nil
			})
			err = db.Checkpoint("ckpt")
			efs.SetInjector(nil)
			if err != nil {
				t.Fatal(err)
			}
			tables := 0
			for _, l := range db.Metrics().Levels {
				tables += l.Files
			}
			if link && (links != tables || creates != 0) || !link && (links != 0 || creates != tables) {
				t.Fatalf("link=%v: %d tables, %d linked, %d copied", link, tables, links, creates)
			}
			t.Log(logs[len(logs)-1])
			// The source compacts, removing every table the checkpoint has.
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			cdb, err := Open("ckpt", &Options{FS: mem})
			if err != nil {
				t.Fatal(err)
			}
			s, err := scanState(cdb)
			if err := errors.Join(err, cdb.Close()); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(s, want) {
				t.Fatalf("the checkpoint holds other data: %s", diffStates(s, want))
			}
		})
	}
}

// ckptCrashStore builds, on efs, a store with tables in several levels, a
// full memtable whose flush is held (so two WALs hold writes no table
// holds), and writes in the mutable memtable's WAL, all synced, for the
// crash campaign, and returns it open, with its model. Its injector holds
// the flush until release is called; the campaign's injector goes through
// it (see hold).
func ckptCrashStore(t *testing.T, efs *vfs.ErrorFS, wal walMode, seed uint64) (db *DB, want state, hold vfs.Injector, release func()) {
	t.Helper()
	o := campaignOptions(efs, false, wal)
	o.DisableAutomaticCompactions = true // the campaign's operations are the checkpoint's alone
	db, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	want = state{}
	rng := rand.New(rand.NewPCG(seed, 0))
	write := func() {
		k, v := fmt.Sprintf("k%03d", rng.IntN(200)), strings.Repeat("v", rng.IntN(200))
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	for range 150 {
		write()
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	for range 60 {
		write()
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	unblock := make(chan struct{})
	var held atomic.Bool
	held.Store(true)
	hold = func(op vfs.Op, path string) error {
		if op == vfs.OpCreate && strings.HasPrefix(path, "db/") && strings.HasSuffix(path, ".sst") && held.Load() {
			<-unblock
		}
		return nil
	}
	efs.SetInjector(hold)
	for db.Metrics().ImmutableTables == 0 {
		write()
	}
	for range 20 {
		write() // into the new memtable and its WAL
	}
	release = func() {
		if held.Swap(false) {
			close(unblock)
		}
	}
	return db, want, hold, release
}

// TestCheckpointCrash simulates a power loss before every file-system
// operation of a checkpoint that can change what a crash leaves (every
// second one in the default run), under each crash model, with the WAL
// mapped and written and the tables linked or copied; with -long, of
// three stores. The source must reopen with all its data. The
// checkpoint's directory must be one of: nothing of a store (Check refuses
// it); a complete checkpoint that Check passes and that opens with all the
// data; or a partial one that Check and Open both refuse, never one that
// opens with less.
func TestCheckpointCrash(t *testing.T) {
	every, seeds := 2, []uint64{3}
	if *long {
		every, seeds = 1, []uint64{3, 4, 5}
	}
	for _, seed := range seeds {
		for _, wal := range walModes {
			for _, link := range []bool{true, false} {
				t.Run(fmt.Sprintf("seed=%d/wal=%s/link=%v", seed, wal.name, link), func(t *testing.T) {
					ckptCrashCampaign(t, seed, wal, link, every)
				})
			}
		}
	}
}

func ckptCrashCampaign(t *testing.T, seed uint64, wal walMode, link bool, every int) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	db, want, hold, release := ckptCrashStore(t, efs, wal, seed)
	defer db.Close()
	defer release()
	const dir = "backups/ckpt"
	fails := newFailures()
	var points, tried, complete, refused, nothing int
	check := func(c *vfs.MemFS, where string) {
		tried++
		if err := ckptCheckSource(c, wal, want); err != nil {
			fails.add("the source: "+err.Error(), where)
		}
		switch outcome, err := ckptCheckCrashed(c, dir, wal, want); {
		case err != nil:
			fails.add(err.Error(), where)
		case outcome == "complete":
			complete++
		case outcome == "refused":
			refused++
		default:
			nothing++
		}
	}
	efs.SetInjector(func(op vfs.Op, path string) error {
		switch {
		case !strings.HasPrefix(path, "backups") && !(op == vfs.OpSyncDir && path == "."):
			return hold(op, path)
		case op == vfs.OpLink && !link:
			return fmt.Errorf("injected: %w", vfs.ErrLinkUnsupported)
		case !mutates(op):
			return nil
		}
		p := points
		points++
		if p%every != 0 {
			return nil
		}
		for _, model := range crashModels {
			c := mem.CrashCloneWith(vfs.CrashOptions{Mode: model.mode, Seed: seed<<32 | uint64(p)})
			check(c, fmt.Sprintf("crash point %d (before %v %s), model %s", p, op, path, model.name))
		}
		return nil
	})
	err := db.Checkpoint(dir)
	efs.SetInjector(hold)
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range crashModels {
		check(mem.CrashCloneWith(vfs.CrashOptions{Mode: model.mode, Seed: seed}), "after Checkpoint returned, model "+model.name)
	}
	if complete < len(crashModels) {
		t.Errorf("only %d crashed checkpoints were complete; those after Checkpoint returned must be", complete)
	}
	logs := 0
	for _, name := range mustList(t, mem, dir) {
		if ft, _, _ := parseFileName(name); ft == fileTypeLog {
			logs++
		}
	}
	if logs != 2 {
		t.Errorf("the checkpoint holds %d WALs; the store was built with two that hold writes no table holds", logs)
	}
	fails.report(t, fmt.Sprintf("%d crash points, %d crashed file systems checked: checkpoint complete %d, refused %d, nothing of it %d",
		points, tried, complete, refused, nothing))
}

// mustList lists dir.
func mustList(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// ckptCheckSource reopens the crashed source and compares it with want.
func ckptCheckSource(c *vfs.MemFS, wal walMode, want state) error {
	db, err := Open("db", campaignOptions(c, false, wal))
	if err != nil {
		return err
	}
	s, err := scanState(db)
	if err := errors.Join(err, db.Close()); err != nil {
		return err
	}
	if !maps.Equal(s, want) {
		return fmt.Errorf("holds other data: %s", diffStates(s, want))
	}
	return nil
}

// ckptCheckCrashed sorts what a crash left of a checkpoint in dir:
// "nothing" (no file of a store; Check must refuse it), "complete" (Check
// passes; it must open with want) or "refused" (Check fails; Open must
// fail too), or returns what is wrong.
func ckptCheckCrashed(c *vfs.MemFS, dir string, wal walMode, want state) (string, error) {
	names, _ := c.List(dir)
	storeFiles := slices.ContainsFunc(names, func(name string) bool { _, _, ok := parseFileName(name); return ok })
	checkErr := Check(dir, campaignOptions(c, false, wal))
	switch {
	case !storeFiles && checkErr == nil:
		return "", errors.New("Check passes a checkpoint directory without a store file")
	case !storeFiles:
		return "nothing", nil
	case checkErr != nil:
		if db, err := Open(dir, campaignOptions(c, false, wal)); err == nil {
			s, _ := scanState(db)
			db.Close()
			return "", fmt.Errorf("Check refuses the checkpoint (%v), but Open opens it, with %d of %d keys", checkErr, len(s), len(want))
		}
		return "refused", nil
	}
	db, err := Open(dir, campaignOptions(c, false, wal))
	if err != nil {
		return "", fmt.Errorf("Check passes the checkpoint, but Open fails: %v", err)
	}
	s, err := scanState(db)
	if err := errors.Join(err, db.Close()); err != nil {
		return "", err
	}
	if !maps.Equal(s, want) {
		return "", fmt.Errorf("the checkpoint opens with other data: %s", diffStates(s, want))
	}
	return "complete", nil
}

// BenchmarkCheckpoint checkpoints a store of 1M keys (16-byte keys, 100
// random bytes of value) on the operating system's file system, once with
// the tables hard-linked and once copied (the file system refusing links,
// as across devices), a memtable's worth of writes in the WAL each time.
// It reports the bytes a checkpoint writes (copies, WAL, MANIFEST), and
// logs the checkpoint's own account of them.
func BenchmarkCheckpoint(b *testing.B) {
	efs := vfs.NewErrorFS(vfs.Default)
	var last string
	dir := b.TempDir()
	db, err := Open(dir+"/db", &Options{FS: efs, NoSync: true, Logger: func(format string, args ...any) {
		last = fmt.Sprintf(format, args...)
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(5, 5))
	value := make([]byte, 100)
	const keys = 1_000_000
	for i := 0; i < keys; {
		batch := db.NewBatch()
		for j := 0; j < 1000; j, i = j+1, i+1 {
			for k := range value {
				value[k] = byte(rng.Uint32())
			}
			batch.Put(benchKey(int(rng.Uint64N(keys*10))), value)
		}
		if err := db.Apply(batch); err != nil {
			b.Fatal(err)
		}
	}
	for _, link := range []bool{true, false} {
		b.Run(fmt.Sprintf("link=%v", link), func(b *testing.B) {
			if !link {
				efs.SetInjector(func(op vfs.Op, _ string) error {
					if op == vfs.OpLink {
						return fmt.Errorf("injected: %w", vfs.ErrLinkUnsupported)
					}
					return nil
				})
				defer efs.SetInjector(nil)
			}
			var written int64
			for i := 0; b.Loop(); i++ {
				ckpt := fmt.Sprintf("%s/ckpt-%d", dir, i)
				if err := db.Checkpoint(ckpt); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				names, err := vfs.Default.List(ckpt)
				if err != nil {
					b.Fatal(err)
				}
				for _, name := range names {
					if t, _, _ := parseFileName(name); t == fileTypeTable && link {
						continue
					}
					info, err := vfs.Default.Stat(ckpt + "/" + name)
					if err != nil {
						b.Fatal(err)
					}
					written += info.Size()
				}
				if err := os.RemoveAll(ckpt); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(written)/float64(b.N), "written-B/op")
			b.Log(last)
		})
	}
}

// TestCheckpointOSFS checkpoints a store on the operating system's file
// system, its WAL mapped where the system allows, while a writer goes on:
// the tables are hard links to the store's (the same files), the WAL copy
// ends in its end marker with none of the zeros a mapped WAL is allocated
// ahead with, and the checkpoint passes Check and holds every write
// acknowledged before it.
func TestCheckpointOSFS(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir+"/db", &Options{MemTableSize: 64 << 10, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := newCkptWriter(0, 9, 3000)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- w.run(db, stop) }()
	for w.acked.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
	acked := w.acked.Load()
	ckpt := dir + "/backups/ckpt"
	if err := db.Checkpoint(ckpt); err != nil {
		t.Fatal(err)
	}
	begun := w.begun.Load()
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tables := 0
	for _, name := range mustList(t, vfs.Default, ckpt) {
		ft, _, _ := parseFileName(name)
		info, err := os.Stat(ckpt + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		switch ft {
		case fileTypeTable:
			tables++
			src, err := os.Stat(dir + "/db/" + name)
			if err == nil && !os.SameFile(src, info) {
				t.Errorf("%s is not a hard link to the store's table", name)
			}
		case fileTypeLog:
			b := readFile(t, vfs.Default, ckpt+"/"+name)
			if n := len(b) - len(strings.TrimRight(string(b), "\x00")); n > 0 {
				t.Errorf("%s ends in %d zero bytes", name, n)
			}
		}
	}
	if tables == 0 {
		t.Fatal("the checkpoint holds no table; the store was to flush several")
	}
	// The checkpoint has its LOCK file: a read-only open of it locks it.
	ro, err := Open(ckpt, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if rw, err := Open(ckpt, nil); !errors.Is(err, vfs.ErrLocked) {
		if err == nil {
			rw.Close()
		}
		t.Errorf("a read-write open beside a read-only open of the checkpoint: %v, want vfs.ErrLocked", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Check(ckpt, nil); err != nil {
		t.Fatal(err)
	}
	cdb, err := Open(ckpt, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scanState(cdb)
	if err := errors.Join(err, cdb.Close()); err != nil {
		t.Fatal(err)
	}
	if problem := w.check(s, acked, begun); problem != "" {
		t.Fatal(problem)
	}
}
