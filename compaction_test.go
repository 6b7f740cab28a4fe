package shale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/vfs"
)

// smallTreeOptions shrink every size so a few MiB of writes make a tree of
// several levels.
func smallTreeOptions(fs vfs.FS) *Options {
	return &Options{
		FS:             fs,
		MemTableSize:   64 << 10,
		BlockSize:      1 << 10,
		LBaseMaxBytes:  256 << 10,
		TargetFileSize: 64 << 10,
		NoSync:         true,
	}
}

// TestCompactionShape: under sustained random writes with a 64 KiB
// memtable, background compaction keeps L0 bounded, spreads data over
// several levels, and every key reads back.
func TestCompactionShape(t *testing.T) {
	db := mustOpen(t, "db", smallTreeOptions(vfs.NewMem()))
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	model := map[string][]byte{}
	maxL0 := 0
	value := make([]byte, 100)
	for i := 0; i < 40_000; i++ {
		k := fmt.Appendf(nil, "key%08d", rng.IntN(1_000_000))
		v := fmt.Appendf(value[:0], "%d-%090d", i, i)
		if err := db.Put(k, v); err != nil {
			t.Fatal(err)
		}
		model[string(k)] = append([]byte(nil), v...)
		if i%500 == 0 {
			maxL0 = max(maxL0, db.Metrics().Levels[0].Files)
		}
	}
	m := db.Metrics()
	// Writes stop rotating memtables at the stop threshold; memtables
	// already waiting for a flush can still land in L0.
	if bound := db.opts.L0StopWritesThreshold + db.opts.MaxImmutableMemTables; maxL0 > bound {
		t.Fatalf("L0 reached %d files, above the stop threshold plus waiting memtables, %d", maxL0, bound)
	}
	levels := 0
	for _, l := range m.Levels[1:] {
		if l.Files > 0 {
			levels++
		}
	}
	if levels < 2 || m.Compactions == 0 {
		t.Fatalf("want data in at least 2 levels below L0 after compactions:\n%s", m)
	}
	for k, v := range model {
		got, err := db.Get([]byte(k))
		if err != nil || string(got) != string(v) {
			t.Fatalf("Get(%s) = %q, %v; want %q", k, got, err, v)
		}
	}
	t.Logf("max L0 files %d\n%s", maxL0, m)
}

// TestCompactReclaimsSpace: after every key is overwritten several times
// and half are deleted, Compact leaves tables about the size of the live
// data, all in the bottom level.
func TestCompactReclaimsSpace(t *testing.T) {
	db := mustOpen(t, "db", smallTreeOptions(vfs.NewMem()))
	defer db.Close()
	rng := rand.New(rand.NewPCG(2, 2))
	const keys, valueSize = 5000, 200
	value := make([]byte, valueSize)
	for round := 0; round < 4; round++ {
		for i := 0; i < keys; i++ {
			for j := range value {
				value[j] = byte(rng.Uint32()) // incompressible
			}
			if err := db.Put(fmt.Appendf(nil, "key%06d", i), value); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < keys; i += 2 {
		if err := db.Delete(fmt.Appendf(nil, "key%06d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	live := int64(keys / 2 * (len("key000000") + valueSize))
	var total int64
	for level, l := range m.Levels {
		total += l.Bytes
		if level < len(m.Levels)-1 && l.Files > 0 {
			t.Fatalf("L%d still has %d files after Compact:\n%s", level, l.Files, m)
		}
	}
	if float64(total) > 1.15*float64(live) {
		t.Fatalf("after Compact tables hold %d bytes for %d bytes of live data (%.2fx)\n%s", total, live, float64(total)/float64(live), m)
	}
	t.Logf("live data %d bytes, tables %d bytes (%.3fx)", live, total, float64(total)/float64(live))
	for i := 0; i < keys; i++ {
		_, err := db.Get(fmt.Appendf(nil, "key%06d", i))
		if deleted := i%2 == 0; deleted != errors.Is(err, ErrNotFound) {
			t.Fatalf("key%06d: deleted=%v, Get: %v", i, deleted, err)
		}
	}
}

// TestCompactionConcurrentReads: reads, iterators and snapshots stay
// correct while background compactions replace the files under them.
func TestCompactionConcurrentReads(t *testing.T) {
	db := mustOpen(t, "db", smallTreeOptions(vfs.NewMem()))
	defer db.Close()
	const keys = 2000
	// Every key always holds "<key>:<generation>"; writers raise the
	// generation, so a reader can check each value it sees belongs to its
	// key, and a snapshot's values never change.
	for i := 0; i < keys; i++ {
		db.Put(fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "k%05d:0", i))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var errs goErrors
	wg.Add(1)
	go func() {
		defer wg.Done()
		value := make([]byte, 300)
		for gen := 1; !stop.Load(); gen++ {
			for i := 0; i < keys && !stop.Load(); i += 7 {
				v := append(fmt.Appendf(nil, "k%05d:%d:", i, gen), value...)
				if err := db.Put(fmt.Appendf(nil, "k%05d", i), v); err != nil {
					errs.report(err)
					return
				}
			}
		}
	}()
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && !errs.failed() {
				snap := db.NewSnapshot()
				first := map[string]string{}
				it := snap.NewIter(nil)
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					if string(it.Value()[:6]) != string(it.Key()) {
						errs.report(fmt.Errorf("key %s has value %.20s", it.Key(), it.Value()))
					}
					if n%97 == 0 {
						first[string(it.Key())] = string(it.Value())
					}
					n++
				}
				if err := it.Close(); err != nil {
					errs.report(err)
				}
				if n != keys {
					errs.report(fmt.Errorf("snapshot iterator saw %d keys, want %d", n, keys))
				}
				for k, v := range first {
					got, err := snap.Get([]byte(k))
					if err != nil || string(got) != v {
						errs.report(fmt.Errorf("snapshot Get(%s) changed: %.20q, %v", k, got, err))
					}
				}
				snap.Close()
			}
		}()
	}
	// Run until 10 compactions have run beside the readers. The writer
	// makes one every few hundred milliseconds on an idle machine; the
	// bound only keeps a stuck store from hanging the test.
	bound := time.Now().Add(2 * time.Minute)
	for db.Metrics().Compactions < 10 && !errs.failed() && time.Now().Before(bound) {
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	errs.check(t)
	if m := db.Metrics(); m.Compactions == 0 {
		t.Fatalf("no compaction ran during the test:\n%s", m)
	}
}

// BenchmarkLoad loads 1M random keys with 100-byte random (incompressible)
// values, compactions running, and reports throughput, write amplification
// and the most L0 files seen. -benchtime=1x runs it once.
func BenchmarkLoad(b *testing.B) {
	const n = 1_000_000
	for b.Loop() {
		db := openBench(b, &Options{NoSync: true})
		rng := rand.New(rand.NewPCG(3, 3))
		value := make([]byte, 100)
		maxL0 := 0
		start := time.Now()
		batch := db.NewBatch()
		for i := 0; i < n; i++ {
			for j := range value {
				value[j] = byte(rng.Uint32())
			}
			batch.Put(fmt.Appendf(nil, "%016x", rng.Uint64()), value)
			if batch.Count() == 100 {
				if err := db.Apply(batch); err != nil {
					b.Fatal(err)
				}
				batch.Reset()
			}
			if i%10000 == 0 {
				maxL0 = max(maxL0, db.Metrics().Levels[0].Files)
			}
		}
		elapsed := time.Since(start)
		m := db.Metrics()
		b.ReportMetric(float64(n)/elapsed.Seconds(), "keys/s")
		b.ReportMetric(m.WriteAmp, "write-amp")
		b.ReportMetric(float64(maxL0), "max-L0-files")
		b.Logf("\n%s", m)
	}
}

// TestDynamicLevels: as a store grows, its base level moves up from L6, the
// levels above the base level stay empty, and once compactions settle every
// level is under its target and L0 under its threshold.
func TestDynamicLevels(t *testing.T) {
	opts := smallTreeOptions(vfs.NewMem())
	opts.LBaseMaxBytes = 16 << 10
	opts.TargetFileSize = 16 << 10
	// Rounds of batches of 4 L0 files move the base level one level a
	// round; the default 6 moves it two levels in one round here.
	opts.L0CompactionThreshold = 4
	// Compactions run only in settleCompactions, so that the tree's shape
	// after each round does not depend on how background work interleaved
	// with the writes.
	opts.DisableAutomaticCompactions = true
	db := mustOpen(t, "db", opts)
	defer db.Close()
	rng := rand.New(rand.NewPCG(3, 3))
	model := map[string][]byte{}
	var bases []int
	// Each round writes twice as much as the one before, in random
	// (incompressible) values: 150 keys of about 110 bytes, then 300, up
	// to 9,600, about 2.1 MiB in all.
	for round := range 7 {
		for range 150 << round {
			k := fmt.Appendf(nil, "key%08d", rng.IntN(1_000_000))
			v := make([]byte, 100)
			for i := range v {
				v[i] = byte(rng.Uint32())
			}
			if err := db.Put(k, v); err != nil {
				t.Fatal(err)
			}
			model[string(k)] = v
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		settleCompactions(t, db)
		m := db.Metrics()
		if len(bases) == 0 || bases[len(bases)-1] != m.BaseLevel {
			bases = append(bases, m.BaseLevel)
		}
		for level := 1; level < m.BaseLevel; level++ {
			if m.Levels[level].Files > 0 {
				t.Fatalf("round %d: L%d, above the base level L%d, holds files:\n%s", round, level, m.BaseLevel, m)
			}
		}
		if m.Levels[0].Files >= db.opts.L0CompactionThreshold {
			t.Fatalf("round %d: L0 has %d files after compactions settled:\n%s", round, m.Levels[0].Files, m)
		}
		for level := m.BaseLevel; level < len(m.Levels)-1; level++ {
			if l := m.Levels[level]; l.Bytes > l.Target || l.Score >= 1 {
				t.Fatalf("round %d: L%d holds %d bytes, target %d, score %.2f after compactions settled:\n%s",
					round, level, l.Bytes, l.Target, l.Score, m)
			}
		}
	}
	// The first two rounds stay in L0. Then the base level leaves L6 once L6
	// holds more than 16 KiB, L5 at 160 KiB and L4 at 1.6 MiB, so it moves
	// up one level at a time and is L3 by the end.
	if want := []int{6, 5, 4, 3}; fmt.Sprint(bases) != fmt.Sprint(want) {
		t.Fatalf("base levels after each round: %v, want %v\n%s", bases, want, db.Metrics())
	}
	for k, v := range model {
		got, err := db.Get([]byte(k))
		if err != nil || string(got) != string(v) {
			t.Fatalf("Get(%s) = %q, %v; want %q", k, got, err, v)
		}
	}
	t.Logf("base levels %v\n%s", bases, db.Metrics())
}

// settleCompactions runs the compactions the picker wants until it wants
// none, alongside the background ones.
func settleCompactions(t testing.TB, db *DB) {
	t.Helper()
	for range 10_000 {
		ran, err := db.compactOnce()
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			return
		}
	}
	t.Fatalf("still compacting after 10,000 compactions:\n%s", db.Metrics())
}

// TestDeletionsReclaimSpace checks that deleting most of a store frees its
// space without a manual Compact: the tombstones are small, so by bytes
// alone the level holding them stays under its target and the data they
// delete would stay on disk below. compaction.Pick counts them as the data
// they will free, which carries most of them down, and then carries down
// the files that are mostly deletions, which takes the rest. Without the
// first the settled tree holds 10x the live bytes here, without the second
// 1.6x.
func TestDeletionsReclaimSpace(t *testing.T) {
	opts := smallTreeOptions(vfs.NewMem())
	opts.LBaseMaxBytes = 1 << 20
	opts.DisableAutomaticCompactions = true
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 5000
	value := make([]byte, 1000)
	rng := rand.New(rand.NewPCG(1, 2))
	order := rng.Perm(n)
	key := func(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }
	for _, i := range order {
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		if err := db.Put(key(i), value); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	settleCompactions(t, db)
	for _, i := range order[:n*9/10] {
		if err := db.Delete(key(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if !db.Metrics().CompactionDue {
		t.Fatalf("no compaction due after the deletions:\n%s", db.Metrics())
	}
	settleCompactions(t, db)
	settled := db.Metrics()
	if settled.CompactionDue {
		t.Fatalf("a compaction still due once the picker wants none:\n%s", settled)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	compacted := db.Metrics()
	size := func(m Metrics) (total int64) {
		for _, l := range m.Levels {
			total += l.Bytes
		}
		return total
	}
	// What Compact leaves is the live data; the settled tree may hold a
	// little more (a few tombstones on their way down), not the 5 MB of
	// deleted values.
	if got, live := size(settled), size(compacted); got > live+live/4 {
		t.Errorf("after deleting 90%% of the keys the settled tree holds %d bytes, %.1fx the %d live bytes:\n%s", got, float64(got)/float64(live), live, settled)
	}
	for i, k := range order {
		_, err := db.Get(key(k))
		if deleted := i < n*9/10; deleted != errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%s) after deleting it: %t: err %v", key(k), deleted, err)
		}
	}
}

// TestCompactDeletesItsInputs: when Compact returns, the table files it
// replaced are gone from the directory, as its doc says, even when the
// deleter goroutine, woken by the same retirement, took them first (Compact
// then waits for it rather than returning while they are still on disk).
func TestCompactDeletesItsInputs(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "db", &Options{FS: fs, DisableAutomaticCompactions: true})
	defer db.Close()
	for round := range 300 {
		for i := range 3 {
			putKeys(t, db, i*10, i*10+10, fmt.Sprint(round))
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Compact(); err != nil {
			t.Fatal(err)
		}
		m := db.Metrics()
		tables := 0
		for _, l := range m.Levels {
			tables += l.Files
		}
		names, err := fs.List("db")
		if err != nil {
			t.Fatal(err)
		}
		onDisk := 0
		for _, n := range names {
			if typ, _, ok := parseFileName(n); ok && typ == fileTypeTable {
				onDisk++
			}
		}
		if onDisk != tables {
			t.Fatalf("round %d: after Compact returned, %d table files on disk for %d live tables: %s", round, onDisk, tables, listDir(t, fs, "db"))
		}
	}
}
