package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/internal/procstat"
	"github.com/shale-db/shale/vfs"
)

func smallConfig() config {
	return config{
		benchmarks:       allBenchmarks,
		n:                2000,
		keySize:          16,
		valueSize:        100,
		compressionRatio: 1,
		bloomBits:        10,
		filter:           "bloom",
		cacheSize:        -1, // every block a lookup needs is a disk read
		concurrency:      2,
		seed:             1,
		scanLength:       100,
	}
}

// TestSingle runs every workload on one store and checks the table.
func TestSingle(t *testing.T) {
	cfg := smallConfig()
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Log("\n" + text)
	for _, b := range allBenchmarks {
		if !regexp.MustCompile(`(?m)^ +` + b + ` +\d+ +\d+ +\d+ +\d+\.\d{3} `).MatchString(text) {
			t.Errorf("no row for %s", b)
		}
	}
	if !strings.Contains(text, "tree after the run: ") {
		t.Error("no tree shape")
	}
}

// TestBulkLoads runs the bulk loads, each on a fresh store, with two
// goroutines (each writing and ingesting its own tables, the last short
// of ingestTableKeys): every key is then in the store, at the bottom level
// for fillingest, whose tables overlap nothing, and the tables' files are
// gone; the write amplification counts the ingested tables' bytes.
func TestBulkLoads(t *testing.T) {
	for _, name := range otherBenchmarks {
		t.Run(name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.n = 2*ingestTableKeys + 1000
			cfg.cacheSize = 8 << 20
			cfg.settle = true
			dir := t.TempDir()
			b, err := openBench(cfg, filepath.Join(dir, "store"), cfg.bloomBits, true)
			if err != nil {
				t.Fatal(err)
			}
			defer b.close()
			r, err := b.run(name, cfg.n, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			w := &worker{b: b}
			for _, i := range []int{0, ingestTableKeys - 1, ingestTableKeys, cfg.n/2 + 1, cfg.n - 1} {
				if _, err := b.db.Get(w.key(i)); err != nil {
					t.Errorf("key %d: %v", i, err)
				}
			}
			m := b.db.Metrics()
			if name == "fillingest" {
				if m.Ingests != 4 || m.Levels[shale.NumLevels-1].Files != 4 {
					t.Errorf("%d ingests, %d tables at the bottom level; want 4 of each (2 per goroutine)\n%s", m.Ingests, m.Levels[shale.NumLevels-1].Files, m)
				}
				if names, err := os.ReadDir(b.tablesDir); err != nil || len(names) != 0 {
					t.Errorf("%s holds %d files (%v); want none left", b.tablesDir, len(names), err)
				}
			}
			if s := r.Settle; s == nil || !(s.WriteAmpEngine > 0.5 && s.WriteAmpEngine < 10) {
				t.Errorf("settle: %+v; want a write amplification above 0.5 (tables are smaller than their keys and values)", s)
			}
		})
	}
}

// TestOptions checks that the flags reach the store's options.
func TestOptions(t *testing.T) {
	cfg := smallConfig()
	cfg.rowCache, cfg.memTableSize = 1<<20, 64<<10
	for _, off := range []bool{false, true} {
		cfg.noReadCompactions = off
		o := cfg.options(7, true)
		if o.DisableReadCompactions != off || o.BloomBitsPerKey != 7 || o.RowCacheSize != 1<<20 || o.MemTableSize != 64<<10 || o.DisableAutomaticCompactions {
			t.Errorf("-no-read-compactions=%t: options %+v", off, o)
		}
	}
	// -filter chooses the policy the bits are spent by; without filters
	// (the -compare-filters store without them) there is none to choose.
	// The tree the policies are asked about: one 4 MiB L0 file over 1 GiB
	// in L6, where MonkeyBloom(10) gives L0 about 21 bits per key and L6
	// 10.
	var l0, l6 shale.NewTable
	l0.LevelBytes[0], l0.LevelFiles[0], l0.LevelBytes[6] = 4<<20, 1, 1<<30
	l6, l6.Level = l0, 6
	for _, tc := range []struct {
		filter string
		l0, l6 shale.TableFilter // nil: no policy set
	}{
		{"bloom", nil, nil},
		{"monkey", shale.BloomFilter(21), shale.BloomFilter(10)},
		{"ribbon", shale.RibbonFilter(10), shale.RibbonFilter(10)},
	} {
		cfg.filter = tc.filter
		if p := cfg.options(shale.NoFilter, true).FilterPolicy; p != nil {
			t.Errorf("-filter %s without filters: policy %v", tc.filter, p)
		}
		p := cfg.options(10, true).FilterPolicy
		if tc.l0 == nil {
			if p != nil {
				t.Errorf("-filter %s: policy %v, want none (BloomBitsPerKey's)", tc.filter, p)
			}
			continue
		}
		if got0, got6 := p.FilterFor(l0), p.FilterFor(l6); got0 != tc.l0 || got6 != tc.l6 {
			t.Errorf("-filter %s: L0 %v, L6 %v, want %v and %v", tc.filter, got0, got6, tc.l0, tc.l6)
		}
	}
}

// runJSON runs cfg with -json and returns its report.
func runJSON(t *testing.T, cfg config) report {
	t.Helper()
	cfg.json = true
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestCompareFilters checks that the two stores end in the same shape, that
// reads find what they should, and that filters save disk reads on absent
// keys and not on present ones.
func TestCompareFilters(t *testing.T) {
	cfg := smallConfig()
	cfg.benchmarks = []string{"fillrandom", "overwrite", "readrandom", "readmissing", "seekrandom"}
	cfg.compareFilters = true
	rep := runJSON(t, cfg)
	if rep.SameShape == nil || !*rep.SameShape {
		t.Errorf("trees differ: %q", rep.Tree)
	}
	got := map[string]result{}
	for _, r := range rep.Results {
		got[r.Benchmark+"/"+r.Store] = r
	}
	with, without := got["readmissing/bloom 10"], got["readmissing/no filter"]
	if with.Found != 0 || without.Found != 0 {
		t.Errorf("readmissing found %d and %d keys, want none", with.Found, without.Found)
	}
	if without.DiskReadsPerOp < 0.9 || with.DiskReadsPerOp > 0.1 {
		t.Errorf("disk reads per absent lookup: %.3f with filters, %.3f without; want about 0.01 and at least 1",
			with.DiskReadsPerOp, without.DiskReadsPerOp)
	}
	if with.FilterSkipsPerOp < 0.9 || without.FilterSkipsPerOp != 0 {
		t.Errorf("filter skips per absent lookup: %.3f with filters, %.3f without", with.FilterSkipsPerOp, without.FilterSkipsPerOp)
	}
	for _, store := range []string{"bloom 10", "no filter"} {
		if r := got["readrandom/"+store]; r.Found != r.Ops || r.Ops != cfg.n {
			t.Errorf("readrandom on %s found %d of %d", store, r.Found, r.Ops)
		}
	}
	if a, b := got["readrandom/bloom 10"], got["readrandom/no filter"]; a.DiskReadsPerOp != b.DiskReadsPerOp {
		t.Errorf("present keys: %.3f disk reads per lookup with filters, %.3f without; want the same", a.DiskReadsPerOp, b.DiskReadsPerOp)
	}

	var text bytes.Buffer
	rep.writeText(&text)
	t.Log("\n" + text.String())
	for _, row := range []string{"fillrandom   bloom 10", "fillrandom  no filter", "readrandom", "readmissing", "seekrandom"} {
		if !strings.Contains(text.String(), row) {
			t.Errorf("no row %q", row)
		}
	}
}

// settleGuard bounds the wait of the settle tests: settle's own bound,
// settleLimit, is an hour.
const settleGuard = 2 * time.Minute

// guarded runs f and returns its error, failing t if f has not returned
// after settleGuard.
func guarded(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(settleGuard):
		t.Fatalf("%s has not returned after %v: settle waits for what will never come", what, settleGuard)
		return nil
	}
}

// TestSettleWithoutCompactions: -settle with -compare-filters, whose
// stores never compact by themselves, returns once their flushes are done,
// rather than waiting for compactions that never come (for up to
// settleLimit).
func TestSettleWithoutCompactions(t *testing.T) {
	cfg := smallConfig()
	cfg.benchmarks = []string{"fillrandom", "readrandom"}
	cfg.compareFilters, cfg.settle, cfg.json = true, true, true
	cfg.memTableSize = 32 << 10 // L0 tables enough for a compaction to be due
	var out bytes.Buffer
	if err := guarded(t, "kvbench -compare-filters -settle", func() error { return run(cfg, &out, io.Discard) }); err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var settled int
	for _, r := range rep.Results {
		if r.Benchmark != "fillrandom" {
			continue
		}
		if r.Settle == nil || !r.Settle.Settled {
			t.Fatalf("fillrandom on %s: settle result %+v, want settled", r.Store, r.Settle)
		}
		// A compaction was due: L0 held at least Options.L0CompactionThreshold
		// tables (6 by default).
		l0 := regexp.MustCompile(`L0: (\d+) tables`).FindStringSubmatch(r.Settle.Tree)
		if l0 == nil || atoi(l0[1]) < 6 {
			t.Fatalf("fillrandom on %s settled as %q: too few L0 tables for a compaction to be due", r.Store, r.Settle.Tree)
		}
		t.Logf("fillrandom on %s settled in %.1f s as %s", r.Store, r.Settle.Seconds, r.Settle.Tree)
		settled++
	}
	if settled != 2 {
		t.Fatalf("%d fillrandom results settled, want one per store", settled)
	}
}

// TestSettleStoreFailed: a store that fails while settle waits (here its
// flush cannot write the table) ends the wait with the store's error.
func TestSettleStoreFailed(t *testing.T) {
	efs := vfs.NewErrorFS(vfs.NewMem())
	cfg := smallConfig()
	opts := cfg.options(cfg.bloomBits, true)
	opts.FS = efs
	db, err := shale.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := &bench{cfg: cfg, db: db, autoCompactions: true}
	before := db.Metrics()
	ioBefore, err := procstat.ReadIO()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	efs.SetInjector(func(op vfs.Op, name string) error {
		if strings.HasSuffix(name, ".sst") {
			return vfs.ErrInjected
		}
		return nil
	})
	if err := db.Flush(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Flush: %v, want the injected error", err)
	}
	err = guarded(t, "settle of a failed store", func() error {
		_, err := b.settle(before, ioBefore, 0, 1)
		return err
	})
	if !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("settle of a failed store: %v; want the store's error", err)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func TestPlot(t *testing.T) {
	cfg := smallConfig()
	cfg.n = 300
	cfg.benchmarks = nil
	cfg.plot = filepath.Join(t.TempDir(), "plot.png")
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, cfg.plot, 1000, 400)
	for _, row := range []string{"\n         2   0.", "\n        20   0.", "\n      16  "} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("no row %q in\n%s", row, out.String())
		}
	}
}

// TestPlotMeasuresBloom: panel (a) sets Bloom filters against their
// formula, so it measures Bloom filters whatever -filter says: the same
// rates, point for point, under -filter ribbon as under the default.
func TestPlotMeasuresBloom(t *testing.T) {
	cfg := smallConfig()
	cfg.n = 300
	var fp [2][]fpPoint
	for i, filter := range []string{"bloom", "ribbon"} {
		cfg.filter = filter
		d, err := measurePlot(cfg, t.TempDir(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		fp[i] = d.FP
	}
	if !slices.Equal(fp[0], fp[1]) {
		t.Errorf("false-positive rates under -filter ribbon %v, want the Bloom filters' %v", fp[1], fp[0])
	}
}

func TestFormula(t *testing.T) {
	// The rates the design names: 5 bits ~ 9%, 10 ~ 0.8%, 15 ~ 0.07%.
	for bits, want := range map[int]float64{5: 0.092, 10: 0.0082, 15: 0.00074} {
		if got := formulaFPR(bits); got < want*0.95 || got > want*1.05 {
			t.Errorf("formulaFPR(%d) = %.5f, want about %.5f", bits, got, want)
		}
	}
}

func TestBadConfig(t *testing.T) {
	nonEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(nonEmpty, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		change func(*config)
		want   string
	}{
		{func(c *config) { c.benchmarks = []string{"readfast"} }, `unknown benchmark "readfast"`},
		{func(c *config) { c.n = 0 }, "-n must be at least 1"},
		{func(c *config) { c.compression = "lz4" }, `-compression "lz4": want snappy, none or zstd`},
		{func(c *config) { c.compression = "snappy/" }, `-compression "snappy/": want snappy, none or zstd`},
		{func(c *config) { c.keySize = 3 }, "-key-size 3 cannot hold 2000 distinct decimal keys: use at least 4"},
		{func(c *config) { c.concurrency = 0 }, "-concurrency must be at least 1"},
		{func(c *config) { c.bloomBits = 0 }, "-bloom-bits must be at least 1, or -1 for no filters"},
		{func(c *config) { c.compareFilters, c.bloomBits = true, -1 }, "-compare-filters needs filters"},
		{func(c *config) { c.filter = "cuckoo" }, `unknown -filter "cuckoo" (known: bloom,monkey,ribbon)`},
		{func(c *config) { c.filter, c.bloomBits = "ribbon", 33 }, "-filter ribbon takes at most 32 bits per key"},
		{func(c *config) { c.workload, c.filter = "ycsb-a", "" }, `unknown -filter ""`},
		{func(c *config) { c.compareFilters, c.benchmarks = true, []string{"readrandom"} }, "-compare-filters needs a write workload"},
		{func(c *config) { c.benchmarks = nil }, "nothing to do"},
		{func(c *config) { c.dir = nonEmpty }, "is not empty"},
	} {
		cfg := smallConfig()
		tc.change(&cfg)
		err := run(cfg, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %s", err, tc.want)
		}
	}
}

func TestKeys(t *testing.T) {
	cfg := smallConfig()
	cfg.keySize = 6
	w := &worker{b: &bench{cfg: cfg}}
	for i, want := range map[int]string{0: "000000", 42: "000042", 123456: "123456"} {
		if got := string(w.key(i)); got != want {
			t.Errorf("key(%d) = %s, want %s", i, got, want)
		}
	}
	if got := string(w.missingKey(42)); got != "000042." {
		t.Errorf("missingKey(42) = %s", got)
	}
}

// TestYCSB runs ycsb-all on a small store with the row cache on and checks
// the phases, their operation mix, that every read found its record, that
// the row cache served reads, and the table and plot.
func TestYCSB(t *testing.T) {
	cfg := smallConfig()
	cfg.workload = "ycsb-all"
	cfg.records, cfg.ops, cfg.rowCache = 6000, 2000, 1<<20
	// 6 MB in memtables of 256 KiB: the reads find most records in tables,
	// whose row caches they consult, even when the workloads run faster
	// than a flush.
	cfg.memTableSize = 256 << 10
	cfg.plot = filepath.Join(t.TempDir(), "ycsb.png")
	rep := runJSON(t, cfg)
	var phases []string
	for _, p := range rep.YCSB.Phases {
		phases = append(phases, p.Workload)
		var ops int64
		for _, o := range p.ByOp {
			ops += o.Count
			if o.NotFound != 0 {
				t.Errorf("%s: %d %s found no record", p.Workload, o.NotFound, o.Op)
			}
		}
		if ops != p.Ops {
			t.Errorf("%s: %d operations by type, %d in all", p.Workload, ops, p.Ops)
		}
	}
	if got := strings.Join(phases, ","); got != "load,A,B,C,F,D,E" {
		t.Fatalf("phases %s", got)
	}
	if c := rep.YCSB.Phases[3]; c.RowCacheHits == 0 {
		t.Errorf("workload C read with no row cache hit: %+v", c)
	}
	if last := rep.YCSB.Phases[6]; last.Records <= 6000 {
		t.Errorf("D and E inserted nothing: %d records", last.Records)
	}

	var text bytes.Buffer
	rep.writeText(&text)
	t.Log("\n" + text.String())
	for _, row := range []string{" load ", " insert ", " read ", " update ", " scan ", " read-modify-write ", "p99.9", "read compactions"} {
		if !strings.Contains(text.String(), row) {
			t.Errorf("no %q in the table", row)
		}
	}
	checkPNG(t, cfg.plot, 0, 0)
}

// TestYCSBReadCompactions checks each phase's count of read compactions:
// without filters every lookup reads a block of each table above the one
// that holds its record, so workload C's reads use up tables' allowances
// and the phase counts the read compactions that follow; with them off
// (-no-read-compactions) it counts none.
func TestYCSBReadCompactions(t *testing.T) {
	for _, off := range []bool{false, true} {
		cfg := smallConfig()
		cfg.workload, cfg.records, cfg.ops = "ycsb-c", 3000, 3000
		cfg.bloomBits, cfg.memTableSize, cfg.noReadCompactions = shale.NoFilter, 64<<10, off
		rep := runJSON(t, cfg)
		c := rep.YCSB.Phases[len(rep.YCSB.Phases)-1]
		if c.Workload != "C" || (c.ReadCompactions > 0) == off {
			t.Errorf("-no-read-compactions=%t: phase %s ran %d read compactions (tree after: %s)", off, c.Workload, c.ReadCompactions, rep.Tree)
		}
	}
}

func TestYCSBBadConfig(t *testing.T) {
	for _, tc := range []struct {
		change func(*config)
		want   string
	}{
		{func(c *config) { c.workload = "ycsb-g" }, `unknown workload "ycsb-g"`},
		{func(c *config) { c.records = 0 }, "-records must be at least 1"},
		{func(c *config) { c.ops = 0 }, "-ops must be at least 1"},
		{func(c *config) { c.rowCache = -1 }, "-row-cache must not be negative"},
		{func(c *config) { c.compareFilters = true }, "-compare-filters runs the db_bench workloads"},
	} {
		cfg := smallConfig()
		cfg.workload, cfg.records, cfg.ops = "ycsb-a", 10, 10
		tc.change(&cfg)
		err := run(cfg, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %s", err, tc.want)
		}
	}
}

// checkPNG checks that file is a PNG picture at least width by height.
func checkPNG(t *testing.T, file string, width, height int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if b := img.Bounds(); b.Dx() < width || b.Dy() < height {
		t.Errorf("%s: picture is %v, want at least %dx%d", file, b, width, height)
	}
}

// TestValuePool checks that -compression-ratio 1 keeps the random values
// kvbench always had, and that lower ratios compress to about that ratio.
func TestValuePool(t *testing.T) {
	const n = 1 << 16
	rng := newRand(1, 0)
	random := make([]byte, n)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	if !bytes.Equal(valuePool(newRand(1, 0), n, 1), random) {
		t.Error("ratio 1 changed the values")
	}
	for _, ratio := range []float64{0.25, 0.5, 1} {
		cfg := smallConfig()
		cfg.compressionRatio = ratio
		w := &worker{b: &bench{cfg: cfg, pool: valuePool(newRand(1, 0), n, ratio)}, rng: newRand(1, 1)}
		var raw, compressed int
		for range 1000 {
			v := w.value()
			raw, compressed = raw+len(v), compressed+len(snappy.Encode(nil, v))
		}
		got := float64(compressed) / float64(raw)
		if got < ratio-0.1 || got > ratio+0.1 {
			t.Errorf("ratio %g: snappy compresses values to %.2f", ratio, got)
		}
	}
}

// TestCompressionFlag fills stores of compressible values with each
// -compression and checks that the stores' tables follow it: none is the
// largest, zstd at the bottom level alone shrinks the store as zstd
// everywhere does once the fill has settled into L6, and every run
// reports its CPU time.
func TestCompressionFlag(t *testing.T) {
	sizes := map[string]int64{}
	for _, c := range []string{"none", "snappy", "zstd", "snappy/zstd"} {
		cfg := smallConfig()
		cfg.benchmarks = []string{"fillrandom"}
		cfg.compressionRatio = 0.3
		// 460 KB of entries in memtables of 16 KiB: about 30 flushes,
		// most of them compacted into L6 by the end.
		cfg.n, cfg.memTableSize = 4000, 16<<10
		cfg.settle = true
		cfg.compression = c
		rep := runJSON(t, cfg)
		r := rep.Results[0]
		if r.CPUNanosPerOp <= 0 || r.Settle == nil || r.Settle.CPUNanosPerOp < r.CPUNanosPerOp || rep.Config.Compression != c {
			t.Fatalf("-compression %s: %+v, settle %+v, config %+v", c, r, r.Settle, rep.Config)
		}
		sizes[c] = r.Settle.TableBytes
	}
	if !(sizes["none"] > sizes["snappy"] && sizes["none"] > sizes["zstd"] && sizes["snappy"] > sizes["snappy/zstd"]) {
		t.Fatalf("table bytes %v", sizes)
	}
	t.Logf("table bytes %v", sizes)
}

// TestCompareMmap: -compare-mmap reads the filled store through both
// handles, every key found on each, and the mapped one makes (next to) no
// read syscalls where the pread one makes one per block read.
func TestCompareMmap(t *testing.T) {
	cfg := smallConfig()
	cfg.benchmarks, cfg.compareMmap, cfg.memTableSize, cfg.json = []string{"fillrandom", "readrandom"}, true, 32<<10, true
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]result{}
	for _, r := range rep.Results {
		got[r.Benchmark+"/"+r.Store] = r
	}
	mmap, pread := got["readrandom/mmap"], got["readrandom/pread"]
	for _, r := range []result{mmap, pread} {
		if r.Ops != cfg.n || r.Found != r.Ops {
			t.Fatalf("readrandom on %q found %d of %d", r.Store, r.Found, r.Ops)
		}
	}
	t.Logf("read syscalls per Get: mmap %.4f, pread %.4f; disk reads per Get %.3f", mmap.ReadSyscallsPerOp, pread.ReadSyscallsPerOp, pread.DiskReadsPerOp)
	if pread.DiskReadsPerOp < 0.5 || pread.ReadSyscallsPerOp < 0.5 || mmap.ReadSyscallsPerOp > pread.ReadSyscallsPerOp/4 {
		t.Errorf("read syscalls per Get: mmap %.4f, pread %.4f, for %.3f block reads per Get", mmap.ReadSyscallsPerOp, pread.ReadSyscallsPerOp, pread.DiskReadsPerOp)
	}
}

// TestScans runs the scan workloads on a filled store and checks what they
// report: each scan reads at most -scan-length entries, and as many while
// that many keys lie ahead of its start (most scans: 2000 keys, 100 per
// scan), forward and reverse.
func TestScans(t *testing.T) {
	cfg := smallConfig()
	cfg.benchmarks = append([]string{"fillseq"}, scanBenchmarks...)
	cfg.reads = 200
	rep := runJSON(t, cfg)
	if len(rep.Results) != 1+len(scanBenchmarks) {
		t.Fatalf("%d results, want %d", len(rep.Results), 1+len(scanBenchmarks))
	}
	for _, x := range rep.Results[1:] {
		s := x.Scan
		switch {
		case s == nil:
			t.Errorf("%s: no scan figures", x.Benchmark)
		case s.EntriesPerScan < 80 || s.EntriesPerScan > 100:
			t.Errorf("%s: %.1f entries per scan, want 80 to 100", x.Benchmark, s.EntriesPerScan)
		case s.EntriesPerSec <= 0 || s.P50 <= 0 || s.P99 < s.P50 || s.P999 < s.P99:
			t.Errorf("%s: figures %+v", x.Benchmark, s)
		case x.Found != x.Ops:
			t.Errorf("%s: %d of %d scans found an entry", x.Benchmark, x.Found, x.Ops)
		}
	}
	if rep.Results[0].Scan != nil {
		t.Error("fillseq has scan figures")
	}
	cfg.json = false
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, b := range scanBenchmarks {
		if !regexp.MustCompile(`(?m)^ +` + b + ` +\d+ +\d+\.\d +\d+\.\d +\d+\.\d +\d+\.\d *$`).MatchString(out.String()) {
			t.Errorf("no scan row for %s", b)
		}
	}
	cfg.scanLength = 0
	if err := run(cfg, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "-scan-length") {
		t.Errorf("-scan-length 0: error %v", err)
	}
}
