package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/schollz/progressbar/v3"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/internal/permutation"
	"github.com/shale-db/shale/internal/procstat"
	"github.com/shale-db/shale/ribbon"
	"github.com/shale-db/shale/ycsb"
)

// allBenchmarks are the workloads, in the default order.
var allBenchmarks = []string{"fillseq", "fillrandom", "overwrite", "readrandom", "readmissing", "readseq", "seekrandom"}

// otherBenchmarks are the workloads that run only when named: the bulk
// loads, which write the same keys as fillseq.
var otherBenchmarks = []string{"fillbatch", "fillingest"}

// scanBenchmarks are the short-scan workloads (see scanWorkload), which run
// only when named: forward and reverse, from uniform and from zipfian
// starting keys.
var scanBenchmarks = []string{"scan", "scanzipf", "scanrev", "scanrevzipf"}

// config is what the flags say.
type config struct {
	benchmarks []string
	n          int
	reads      int // operations per read workload (0: n)
	settle     bool
	keySize    int
	valueSize  int
	// compressionRatio is the size snappy compresses values to, as a
	// fraction of their size: 1 for random values (see valuePool).
	compressionRatio float64
	// compression is -compression, and compressionPolicy what it says.
	compression       string
	compressionPolicy shale.CompressionPolicy
	bloomBits         int
	// filter is -filter: how the -bloom-bits are spent (see filterPolicy).
	filter    string
	cacheSize int
	// mmapReads is -mmap: not Options.DisableMmapReads.
	mmapReads      bool
	sync           bool
	concurrency    int
	dir            string
	compareFilters bool
	// compareMmap is -compare-mmap (see compareMmap).
	compareMmap bool
	json        bool
	plot        string
	seed        int64
	progress    bool // draw progress bars
	metrics     bool // print the store's metrics after the run
	// YCSB: -workload (empty: the db_bench workloads of benchmarks),
	// -records, -ops and -row-cache.
	workload string
	records  int
	ops      int
	rowCache int
	// memTableSize is Options.MemTableSize (0: the default).
	memTableSize int
	// noReadCompactions sets Options.DisableReadCompactions.
	noReadCompactions bool
	// scale is -scale's key counts, and scaleFrom -scale-from's files.
	scale, scaleFrom string
	// scanLength is the entries each scan workload's scan reads.
	scanLength int
}

// opsOf is the number of operations a workload runs: -reads for the read
// workloads when set, else -n.
func (cfg *config) opsOf(name string) int {
	if !isWrite(name) && cfg.reads > 0 {
		return cfg.reads
	}
	return cfg.n
}

func (cfg *config) validate() error {
	if err := cfg.parseCompression(); err != nil {
		return err
	}
	if cfg.workload != "" {
		return cfg.validateYCSB()
	}
	if err := cfg.validateFilter(); err != nil {
		return err
	}
	for _, b := range cfg.benchmarks {
		if _, ok := workloads[b]; !ok {
			return fmt.Errorf("unknown benchmark %q (known: %s)", b, strings.Join(slices.Concat(allBenchmarks, otherBenchmarks, scanBenchmarks), ","))
		}
	}
	switch {
	case cfg.n < 1:
		return errors.New("-n must be at least 1")
	case cfg.reads < 0:
		return errors.New("-reads must not be negative")
	case cfg.keySize < len(strconv.Itoa(cfg.n-1)):
		return fmt.Errorf("-key-size %d cannot hold %d distinct decimal keys: use at least %d", cfg.keySize, cfg.n, len(strconv.Itoa(cfg.n-1)))
	case cfg.valueSize < 0:
		return errors.New("-value-size must not be negative")
	case !(cfg.compressionRatio > 0 && cfg.compressionRatio <= 1):
		return fmt.Errorf("-compression-ratio %g is not in (0, 1]", cfg.compressionRatio)
	case cfg.rowCache < 0:
		return errors.New("-row-cache must not be negative")
	case cfg.scanLength < 1:
		return errors.New("-scan-length must be at least 1")
	case cfg.concurrency < 1:
		return errors.New("-concurrency must be at least 1")
	case cfg.compareFilters && cfg.bloomBits == shale.NoFilter:
		return errors.New("-compare-filters needs filters: set -bloom-bits to at least 1")
	case cfg.compareMmap && (cfg.compareFilters || !slices.Contains(cfg.benchmarks, "readrandom") || !slices.ContainsFunc(cfg.benchmarks, isWrite)):
		return errors.New("-compare-mmap needs a write workload and readrandom, and not -compare-filters")
	case cfg.compareFilters && !slices.ContainsFunc(cfg.benchmarks, isWrite):
		return errors.New("-compare-filters needs a write workload (fillseq, fillrandom or overwrite) to build the data")
	case len(cfg.benchmarks) == 0 && cfg.plot == "":
		return errors.New("nothing to do: no -benchmarks and no -plot")
	}
	return nil
}

// compressions are the names -compression takes.
var compressions = map[string]shale.Compression{"snappy": shale.SnappyCompression, "none": shale.NoCompression, "zstd": shale.ZstdCompression}

// parseCompression sets cfg.compressionPolicy from -compression: one
// compression for every level, or ABOVE/BOTTOM; empty leaves the store's
// default.
func (cfg *config) parseCompression() error {
	if cfg.compression == "" {
		return nil
	}
	above, bottom, perLevel := strings.Cut(cfg.compression, "/")
	a, ok := compressions[above]
	b, ok2 := compressions[bottom]
	switch {
	case !ok || (perLevel && !ok2):
		return fmt.Errorf("-compression %q: want snappy, none or zstd, or ABOVE/BOTTOM of those", cfg.compression)
	case !perLevel:
		cfg.compressionPolicy = a
	default:
		var p shale.PerLevelCompression
		for l := range p {
			p[l] = a
		}
		p[shale.NumLevels-1] = b
		cfg.compressionPolicy = p
	}
	return nil
}

// filterNames are -filter's values: bloom (BloomFilter(bits) in every
// table, the store's default), monkey (MonkeyBloom(bits): Bloom filters
// sized per sorted run, bits per key on average) and ribbon
// (RibbonFilter(bits) in every table).
var filterNames = []string{"bloom", "monkey", "ribbon"}

// validateFilter checks -bloom-bits and -filter, for the db_bench
// workloads and YCSB alike.
func (cfg *config) validateFilter() error {
	switch {
	case cfg.bloomBits < 1 && cfg.bloomBits != shale.NoFilter:
		return fmt.Errorf("-bloom-bits must be at least 1, or %d for no filters", shale.NoFilter)
	case !slices.Contains(filterNames, cfg.filter):
		return fmt.Errorf("unknown -filter %q (known: %s)", cfg.filter, strings.Join(filterNames, ","))
	case cfg.filter == "ribbon" && cfg.bloomBits > ribbon.MaxBitsPerKey:
		return fmt.Errorf("-filter ribbon takes at most %d bits per key, not %d", ribbon.MaxBitsPerKey, cfg.bloomBits)
	}
	return nil
}

// filterPolicy is the FilterPolicy of a store with bloomBits bits per key
// spent as -filter says; nil leaves Options.BloomBitsPerKey to choose.
func (cfg *config) filterPolicy(bloomBits int) shale.FilterPolicy {
	if bloomBits < 1 {
		return nil
	}
	switch cfg.filter {
	case "monkey":
		return shale.MonkeyBloom(bloomBits)
	case "ribbon":
		return shale.UniformFilter(shale.RibbonFilter(float64(bloomBits)))
	}
	return nil
}

// options returns the store options for a store with bloomBits filters.
func (cfg *config) options(bloomBits int, autoCompactions bool) *shale.Options {
	return &shale.Options{
		BloomBitsPerKey:             bloomBits,
		FilterPolicy:                cfg.filterPolicy(bloomBits),
		BlockCacheSize:              cfg.cacheSize,
		DisableMmapReads:            !cfg.mmapReads,
		Compression:                 cfg.compressionPolicy,
		RowCacheSize:                cfg.rowCache,
		MemTableSize:                cfg.memTableSize,
		NoSync:                      !cfg.sync,
		DisableAutomaticCompactions: !autoCompactions,
		DisableReadCompactions:      cfg.noReadCompactions,
	}
}

// run runs what cfg asks for and prints the report to out. Progress bars,
// if cfg.progress, go to progress.
func run(cfg config, out, progress io.Writer) error {
	if cfg.scale != "" || cfg.scaleFrom != "" {
		return runScale(cfg, out, progress)
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	dir := cfg.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "kvbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("-dir %s is not empty: kvbench needs a fresh store", dir)
	}
	rep := report{Config: reportConfig(cfg)}
	var err error
	switch {
	case cfg.workload != "":
		err = runYCSB(cfg, dir, progress, &rep)
	case cfg.compareFilters:
		err = compareFilters(cfg, dir, progress, &rep)
	case cfg.compareMmap:
		err = compareMmap(cfg, dir, progress, &rep)
	case len(cfg.benchmarks) > 0:
		err = single(cfg, dir, progress, &rep)
	}
	if err != nil {
		return err
	}
	if cfg.plot != "" && rep.YCSB != nil {
		if err := drawYCSBPlot(cfg.plot, rep.YCSB); err != nil {
			return err
		}
	} else if cfg.plot != "" {
		if rep.Plot, err = measurePlot(cfg, filepath.Join(dir, "plot"), progress); err != nil {
			return err
		}
		if err := drawPlot(cfg.plot, rep.Plot); err != nil {
			return err
		}
	}
	if cfg.json {
		return rep.writeJSON(out)
	}
	rep.writeText(out)
	return nil
}

// single runs the benchmarks in order on one store, as a user would run
// them: automatic compactions on.
func single(cfg config, dir string, progress io.Writer, rep *report) error {
	b, err := openBench(cfg, filepath.Join(dir, "store"), cfg.bloomBits, true)
	if err != nil {
		return err
	}
	defer b.close()
	for _, name := range cfg.benchmarks {
		r, err := b.run(name, cfg.opsOf(name), progress)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	m := b.db.Metrics()
	rep.Tree = []string{m.Shape()}
	if cfg.metrics {
		rep.Metrics = m.String()
	}
	return nil
}

// compareFilters measures what filters buy: the read workloads run on the
// same data in the same tree layout, once with filters and once without.
//
// Two stores, one with filters and one without, get the same writes (the
// write workloads of -benchmarks, with the same seed). Background
// compactions race with the writes, and level targets count bytes, filters
// included, so the two stores would rarely end in the same shape. So the
// writes run with automatic compactions off, and then each store is
// compacted into the bottom level: a layout that depends only on the data.
// The shapes are checked, and a difference is reported.
func compareFilters(cfg config, dir string, progress io.Writer, rep *report) error {
	var writes, reads []string
	for _, name := range cfg.benchmarks {
		if isWrite(name) {
			writes = append(writes, name)
		} else {
			reads = append(reads, name)
		}
	}
	stores := []struct {
		name, dir string
		bits      int
	}{
		{fmt.Sprintf("%s %d", cfg.filter, cfg.bloomBits), "filters", cfg.bloomBits},
		{"no filter", "nofilter", shale.NoFilter},
	}
	var benches []*bench
	defer func() {
		for _, b := range benches {
			b.close()
		}
	}()
	for _, s := range stores {
		b, err := openBench(cfg, filepath.Join(dir, s.dir), s.bits, false)
		if err != nil {
			return err
		}
		benches = append(benches, b)
		for _, name := range writes {
			r, err := b.run(name, cfg.opsOf(name), progress)
			if err != nil {
				return err
			}
			r.Store = s.name
			rep.Results = append(rep.Results, r)
		}
		if err := b.db.Compact(); err != nil {
			return err
		}
		rep.Tree = append(rep.Tree, b.db.Metrics().Shape())
	}
	same := rep.Tree[0] == rep.Tree[1]
	rep.SameShape = &same
	for _, name := range reads {
		for i, b := range benches {
			r, err := b.run(name, cfg.opsOf(name), progress)
			if err != nil {
				return err
			}
			r.Store = stores[i].name
			rep.Results = append(rep.Results, r)
		}
	}
	return nil
}

// bench is one store under test.
type bench struct {
	cfg  config
	db   *shale.DB
	opts *shale.Options // the store's
	// tablesDir is where fillingest writes its tables before it ingests
	// them: the store's directory with ".tables" appended. tableUserBytes
	// counts the key and value bytes put in them since the workload began.
	tablesDir      string
	tableUserBytes atomic.Int64
	pool           []byte                  // random bytes that values are cut from
	perm           permutation.Permutation // fillrandom's order
	// autoCompactions is whether the store compacts by itself; settle
	// waits for compactions only then.
	autoCompactions bool
}

func openBench(cfg config, dir string, bloomBits int, autoCompactions bool) (*bench, error) {
	opts := cfg.options(bloomBits, autoCompactions)
	db, err := shale.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	pool := valuePool(newRand(cfg.seed, 0), max(1<<20, 2*cfg.valueSize), cfg.compressionRatio)
	return &bench{cfg: cfg, db: db, opts: opts, tablesDir: dir + ".tables", pool: pool,
		perm: permutation.New(cfg.n, uint64(cfg.seed)), autoCompactions: autoCompactions}, nil
}

// valuePiece is the length of the pieces valuePool makes.
const valuePiece = 100

// valuePool returns the n bytes that values are cut from, made as
// db_bench's -compression_ratio makes them: pieces of valuePiece bytes,
// each the first ratio*valuePiece bytes of it random and the rest
// repeating them, so that snappy shrinks a piece to about ratio of its
// size. Ratio 1 makes every byte random (incompressible).
func valuePool(rng *rand.Rand, n int, ratio float64) []byte {
	random := max(1, int(ratio*valuePiece))
	pool := make([]byte, n)
	for start := 0; start < n; start += valuePiece {
		piece := pool[start:min(start+valuePiece, n)]
		for i := range min(random, len(piece)) {
			piece[i] = byte(rng.Uint32())
		}
		for i := random; i < len(piece); i++ {
			piece[i] = piece[i-random]
		}
	}
	return pool
}

func (b *bench) close() { b.db.Close() }

// workload is one benchmark's operation: op does operation i (0 <= i < n)
// and reports whether it found a key (reads only).
type workload struct {
	write bool
	scan  bool // a scan workload: op records each scan in the worker (see scanWorkload)
	op    func(w *worker, i int) (bool, error)
}

var workloads = map[string]workload{
	"fillseq":    {write: true, op: func(w *worker, i int) (bool, error) { return false, w.put(i) }},
	"fillrandom": {write: true, op: func(w *worker, i int) (bool, error) { return false, w.put(int(w.b.perm.At(i))) }},
	"overwrite":  {write: true, op: func(w *worker, i int) (bool, error) { return false, w.put(w.rng.IntN(w.b.cfg.n)) }},
	"fillbatch":  {write: true, op: func(w *worker, i int) (bool, error) { return false, w.putBatched(i) }},
	"fillingest": {write: true, op: func(w *worker, i int) (bool, error) { return false, w.putTable(i) }},
	"readrandom": {op: func(w *worker, i int) (bool, error) {
		return hit(w.b.db.Get(w.key(w.rng.IntN(w.b.cfg.n))))
	}},
	"readmissing": {op: func(w *worker, i int) (bool, error) {
		return hit(w.b.db.Get(w.missingKey(w.rng.IntN(w.b.cfg.n))))
	}},
	"readseq": {op: func(w *worker, i int) (bool, error) {
		it := w.iter()
		ok := it.Valid() && it.Next()
		if !ok { // the first read, or the end: start (again) at key i
			ok = it.SeekGE(w.key(i))
		}
		return ok, it.Error()
	}},
	"seekrandom": {op: func(w *worker, i int) (bool, error) {
		it := w.iter()
		ok := it.SeekGE(w.key(w.rng.IntN(w.b.cfg.n)))
		return ok, it.Error()
	}},
	"scan":        scanWorkload(false, false),
	"scanzipf":    scanWorkload(false, true),
	"scanrev":     scanWorkload(true, false),
	"scanrevzipf": scanWorkload(true, true),
}

// scanWorkload is a short scan, as YCSB's workload E does them: a new
// iterator, a seek to a random key of the n keys, then -scan-length
// entries read (key and value) one step at a time. Forward, it seeks with
// SeekGE and steps with Next; reverse, with SeekLT and Prev. The starting
// key is uniform over the keys, or zipfian: YCSB's scrambled zipfian, whose
// popular keys are spread over the key space. Each scan's latency goes to
// the worker's histogram and the entries it read to its count, for the
// scan's entries/s and percentiles (result.Scan).
func scanWorkload(reverse, zipf bool) workload {
	return workload{scan: true, op: func(w *worker, _ int) (bool, error) {
		var k int
		if zipf {
			if w.zipf == nil {
				w.zipf = ycsb.NewScrambledZipfian(0, int64(w.b.cfg.n-1))
			}
			k = int(w.zipf.Next(w.rng))
		} else {
			k = w.rng.IntN(w.b.cfg.n)
		}
		start := time.Now()
		it := w.b.db.NewIter(nil)
		seek, step := it.SeekGE, it.Next
		if reverse {
			seek, step = it.SeekLT, it.Prev
		}
		read := 0
		for ok := seek(w.key(k)); ok && read < w.b.cfg.scanLength; ok = step() {
			w.sink += len(it.Key()) + len(it.Value())
			read++
		}
		err := it.Close()
		w.scans.RecordValue(int64(time.Since(start)))
		w.entries += int64(read)
		return read > 0, err
	}}
}

func isWrite(name string) bool { return workloads[name].write }

func hit(_ []byte, err error) (bool, error) {
	if errors.Is(err, shale.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// run runs n operations of one workload, split among the goroutines.
func (b *bench) run(name string, n int, progress io.Writer) (result, error) {
	wl := workloads[name]
	c := b.cfg.concurrency
	bar := progressbar.NewOptions(n, progressbar.OptionSetWriter(progress),
		progressbar.OptionSetVisibility(b.cfg.progress), progressbar.OptionSetDescription(name),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionClearOnFinish())
	before := b.db.Metrics()
	b.tableUserBytes.Store(0)
	ioBefore, err := procstat.ReadIO()
	if err != nil {
		return result{}, err
	}
	cpuBefore, err := procstat.CPUTime()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	var (
		wg       sync.WaitGroup
		hits     atomic.Int64
		errOnce  sync.Once
		firstErr error
		scansMu  sync.Mutex
		scans    = newScanHistogram()
		entries  int64
	)
	for g := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := g*n/c, (g+1)*n/c
			w := &worker{b: b, rng: newRand(b.cfg.seed, g+2), last: hi - 1, id: g, scans: newScanHistogram()}
			defer func() {
				w.close()
				scansMu.Lock()
				scans.Merge(w.scans)
				entries += w.entries
				scansMu.Unlock()
			}()
			var found int64
			for i := lo; i < hi; i++ {
				ok, err := wl.op(w, i)
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("%s: %w", name, err) })
					return
				}
				if ok {
					found++
				}
				if (i-lo)%1024 == 1023 {
					bar.Add(1024)
				}
			}
			hits.Add(found)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	bar.Finish()
	if firstErr != nil {
		return result{}, firstErr
	}
	ioAfter, err := procstat.ReadIO()
	if err != nil {
		return result{}, err
	}
	cpuAfter, err := procstat.CPUTime()
	if err != nil {
		return result{}, err
	}
	rss, err := procstat.Status("VmHWM", "RssFile")
	if err != nil {
		return result{}, err
	}
	r := newResult(name, n, int(hits.Load()), wl.write, elapsed, before, b.db.Metrics(), ioAfter.Sub(ioBefore))
	r.CPUNanosPerOp = float64(cpuAfter-cpuBefore) / float64(n)
	r.PeakRSS, r.FileRSS = rss[0], rss[1]
	if wl.scan {
		r.Scan = newScanResult(entries, elapsed, scans)
	}
	if b.cfg.settle && wl.write {
		r.Settle, err = b.settle(before, ioBefore, cpuBefore, n)
	}
	return r, err
}

// newRand returns the random stream number stream of seed: 0 for values, 2
// and up for the workers.
func newRand(seed int64, stream int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(stream)))
}

// Settling after a write workload (-settle): the store has settled when no
// memtable waits for a flush, no level wants a compaction (when the store
// compacts by itself), and the process has written less than quietBytes in
// quietFor. settleLimit bounds the wait; a failed store ends it with its
// error.
const (
	quietFor    = time.Second
	quietBytes  = 64 << 10
	settlePoll  = 200 * time.Millisecond
	settleLimit = time.Hour
)

// settle waits for the flushes and compactions the last write workload
// left (the flushes alone with automatic compactions off, as with
// -compare-filters, where no compaction would come), and measures its
// write amplification from before, the metrics and I/O counters at the
// workload's start, to the end of the wait; and its CPU time per operation,
// over its n operations, from cpuBefore, the process's CPU time at its
// start.
func (b *bench) settle(before shale.Metrics, ioBefore procstat.IO, cpuBefore time.Duration, n int) (*settleResult, error) {
	start := time.Now()
	last, err := procstat.ReadIO()
	if err != nil {
		return nil, err
	}
	quietSince, settled := start, false
	for !settled && time.Since(start) < settleLimit {
		time.Sleep(settlePoll)
		cur, err := procstat.ReadIO()
		if err != nil {
			return nil, err
		}
		if cur.WChar-last.WChar >= quietBytes {
			last, quietSince = cur, time.Now()
			continue
		}
		m := b.db.Metrics()
		if !m.BackgroundOK {
			return nil, b.failure()
		}
		settled = time.Since(quietSince) >= quietFor && b.done(m)
	}
	m := b.db.Metrics()
	io, err := procstat.ReadIO()
	if err != nil {
		return nil, err
	}
	files, err := procstat.OpenFiles()
	if err != nil {
		return nil, err
	}
	cpu, err := procstat.CPUTime()
	if err != nil {
		return nil, err
	}
	// The key and value bytes written: through the store's writes, and in
	// fillingest's tables.
	user := float64(m.UserBytes - before.UserBytes + b.tableUserBytes.Load())
	written := m.WALBytes + m.FlushBytes + m.CompactionBytesOut + m.IngestedBytes -
		before.WALBytes - before.FlushBytes - before.CompactionBytesOut - before.IngestedBytes
	return &settleResult{
		Seconds:        time.Since(start).Seconds(),
		Settled:        settled,
		WriteAmpIO:     float64(io.WChar-ioBefore.WChar+m.WALMappedBytes-before.WALMappedBytes) / user,
		WriteAmpEngine: float64(written) / user,
		FilterBytes:    m.FilterMemory,
		IndexBytes:     m.IndexMemory,
		OpenFiles:      files,
		CPUNanosPerOp:  float64(cpu-cpuBefore) / float64(n),
		TableBytes:     tableBytes(m),
		Tree:           m.Shape(),
	}, nil
}

// tableBytes is the size of the tables m counts, at every level.
func tableBytes(m shale.Metrics) int64 {
	var n int64
	for _, l := range m.Levels {
		n += l.Bytes
	}
	return n
}

// done reports whether m shows no flush wanted, nor a compaction when the
// store compacts by itself.
func (b *bench) done(m shale.Metrics) bool {
	return m.ImmutableTables == 0 && (!b.autoCompactions || !m.CompactionDue)
}

// failure returns the error of a store whose metrics say a flush,
// compaction or WAL write failed: Flush returns it, writing nothing, as
// every write to a failed store does.
func (b *bench) failure() error {
	err := b.db.Flush()
	if err == nil {
		err = errors.New("a background flush, compaction or WAL write failed")
	}
	return fmt.Errorf("settling: the store failed: %w", err)
}

// worker is one goroutine's state.
type worker struct {
	b      *bench
	rng    *rand.Rand
	keyBuf []byte
	it     *shale.Iterator
	// last is the last operation of the worker's share, where fillbatch
	// and fillingest write what they hold; id numbers the worker.
	last, id int
	// batch holds fillbatch's writes until it has batchKeys of them.
	batch *shale.Batch
	// table is the table fillingest is writing, path its file, and
	// tableKeys the keys in it.
	table     *shale.TableWriter
	path      string
	tableKeys int
	tables    int
	// The scan workloads': the starting keys' zipfian generator, each
	// scan's latency, the entries read, and the bytes they held (read so
	// that a scan cannot skip its entries).
	zipf    *ycsb.ScrambledZipfian
	scans   *hdrhistogram.Histogram
	entries int64
	sink    int
}

// key returns key i: i in decimal, zero-padded to the key size. The slice
// is reused by the next call.
func (w *worker) key(i int) []byte {
	size := w.b.cfg.keySize
	if cap(w.keyBuf) < size+1 {
		w.keyBuf = make([]byte, size, size+1) // room for missingKey's "."
	}
	k := w.keyBuf[:size]
	for j := size - 1; j >= 0; j-- {
		k[j] = byte('0' + i%10)
		i /= 10
	}
	return k
}

// missingKey returns a key that is never written: key i followed by ".",
// which sorts between key i and key i+1.
func (w *worker) missingKey(i int) []byte { return append(w.key(i), '.') }

func (w *worker) put(i int) error {
	return w.b.db.Put(w.key(i), w.value())
}

// batchKeys is how many keys fillbatch writes per batch, as db_bench's
// fillbatch.
const batchKeys = 1000

// putBatched adds key i to the worker's batch and applies the batch once it
// holds batchKeys keys, or at the worker's last key.
func (w *worker) putBatched(i int) error {
	if w.batch == nil {
		w.batch = w.b.db.NewBatch()
	}
	w.batch.Put(w.key(i), w.value())
	if w.batch.Count() < batchKeys && i != w.last {
		return nil
	}
	err := w.b.db.Apply(w.batch)
	w.batch.Reset()
	return err
}

// ingestTableKeys is how many keys fillingest puts in each table: about
// 12 MB of them with the default key and value sizes.
const ingestTableKeys = 100_000

// putTable adds key i to the worker's table (shale.TableWriter) and, once
// the table holds ingestTableKeys keys or at the worker's last key, closes
// it, ingests it and removes the file (Ingest copies it). Key i must
// ascend, as fillseq's do.
func (w *worker) putTable(i int) error {
	if w.table == nil {
		if err := os.MkdirAll(w.b.tablesDir, 0o755); err != nil {
			return err
		}
		w.path = filepath.Join(w.b.tablesDir, fmt.Sprintf("w%d-%d.sst", w.id, w.tables))
		w.tables++
		t, err := shale.NewTableWriter(w.path, w.b.opts)
		if err != nil {
			return err
		}
		w.table, w.tableKeys = t, 0
	}
	k, v := w.key(i), w.value()
	if err := w.table.Put(k, v); err != nil {
		return err
	}
	w.b.tableUserBytes.Add(int64(len(k) + len(v)))
	w.tableKeys++
	if w.tableKeys < ingestTableKeys && i != w.last {
		return nil
	}
	t := w.table
	w.table = nil
	if err := t.Close(); err != nil {
		return err
	}
	if err := w.b.db.Ingest([]string{w.path}); err != nil {
		return err
	}
	return os.Remove(w.path)
}

// value returns a value to write: -value-size bytes of the pool from a
// random offset, which with -compression-ratio below 1 is the start of a
// piece of the pool (see valuePool), as db_bench's values start at one: a
// value cut across pieces would compress less than the ratio says.
func (w *worker) value() []byte {
	off := w.rng.IntN(len(w.b.pool) - w.b.cfg.valueSize + 1)
	if w.b.cfg.compressionRatio < 1 {
		off -= off % valuePiece
	}
	return w.b.pool[off : off+w.b.cfg.valueSize]
}

// iter returns the worker's iterator, opening it on first use.
func (w *worker) iter() *shale.Iterator {
	if w.it == nil {
		w.it = w.b.db.NewIter(nil)
	}
	return w.it
}

func (w *worker) close() {
	if w.it != nil {
		w.it.Close()
	}
}
