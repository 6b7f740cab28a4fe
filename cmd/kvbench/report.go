package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/internal/procstat"
)

// result is one workload's measurements. Per-op figures are the store's
// metrics counters, or the process's I/O counters (/proc/self/io), over the
// workload divided by its operations.
type result struct {
	Benchmark string `json:"benchmark"`
	// Store is "bloom N" or "no filter" with -compare-filters, "mmap" or
	// "pread" for -compare-mmap's reads, else empty.
	Store      string  `json:"store,omitempty"`
	Write      bool    `json:"write"`
	Ops        int     `json:"ops"`
	Found      int     `json:"found"` // reads that found an entry
	Seconds    float64 `json:"seconds"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	NanosPerOp float64 `json:"ns_per_op"`
	// CPUNanosPerOp is the process's CPU time (user and system, every
	// goroutine) over the workload, per operation.
	CPUNanosPerOp       float64 `json:"cpu_ns_per_op"`
	DiskReadsPerOp      float64 `json:"disk_reads_per_op"`
	FilterSkipsPerOp    float64 `json:"filter_skips_per_op"`
	FalsePositivesPerOp float64 `json:"false_positives_per_op"`
	// The process's read and write syscalls and the bytes they moved,
	// per operation: syscr, rchar, syscw and wchar of /proc/self/io. The
	// write bytes add the WAL bytes stored through a mapping
	// (Metrics.WALMappedBytes), which wchar does not see; those cost no
	// syscall.
	ReadSyscallsPerOp  float64 `json:"read_syscalls_per_op"`
	ReadBytesPerOp     float64 `json:"read_bytes_per_op"`
	WriteSyscallsPerOp float64 `json:"write_syscalls_per_op"`
	WriteBytesPerOp    float64 `json:"write_bytes_per_op"`
	// PeakRSS is the process's peak resident set (VmHWM) at the end of the
	// workload, in bytes.
	PeakRSS int64 `json:"peak_rss"`
	// FileRSS is the part of the process's resident set that is files'
	// pages (RssFile) at the end of the workload, in bytes: the page cache
	// pages mapped into the process, tables read through mappings
	// (unless Options.DisableMmapReads) and the WAL's window among them.
	FileRSS int64 `json:"file_rss"`
	// Settle is a write workload's aftermath, with -settle.
	Settle *settleResult `json:"settle,omitempty"`
	// Scan is a scan workload's scans.
	Scan *scanResult `json:"scan,omitempty"`
}

// scanResult is what a scan workload's scans did: the entries they read
// per second (all goroutines) and per scan, and the percentiles of one
// scan's latency, from its new iterator to its Close.
type scanResult struct {
	EntriesPerSec  float64       `json:"entries_per_sec"`
	EntriesPerScan float64       `json:"entries_per_scan"`
	P50            time.Duration `json:"p50_ns"`
	P99            time.Duration `json:"p99_ns"`
	P999           time.Duration `json:"p999_ns"`
}

// maxScanLatency is the longest scan the histograms hold; longer ones
// count as this long.
const maxScanLatency = int64(10 * time.Second)

// newScanHistogram returns a histogram of scan latencies in nanoseconds,
// three significant digits.
func newScanHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, maxScanLatency, 3)
}

func newScanResult(entries int64, elapsed time.Duration, h *hdrhistogram.Histogram) *scanResult {
	return &scanResult{
		EntriesPerSec:  float64(entries) / elapsed.Seconds(),
		EntriesPerScan: float64(entries) / float64(max(h.TotalCount(), 1)),
		P50:            time.Duration(h.ValueAtQuantile(50)),
		P99:            time.Duration(h.ValueAtQuantile(99)),
		P999:           time.Duration(h.ValueAtQuantile(99.9)),
	}
}

// settleResult is what a write workload costs once its flushes and
// compactions are done.
type settleResult struct {
	Seconds float64 `json:"seconds"` // the wait for the store to settle
	// Settled is false if the store was still compacting after settleLimit.
	Settled bool `json:"settled"`
	// WriteAmpIO is the process's wchar (plus the WAL bytes stored through
	// a mapping) from the workload's start to the end of the wait over the
	// user bytes (keys and values) written, as the peers runner counts it;
	// WriteAmpEngine is the same from the store's metrics:
	// WAL, flush and compaction bytes over user bytes.
	WriteAmpIO     float64 `json:"write_amp_io"`
	WriteAmpEngine float64 `json:"write_amp_engine"`
	// FilterBytes and IndexBytes are the filters and index blocks pinned in
	// memory, outside the block cache.
	FilterBytes int64 `json:"filter_bytes"`
	IndexBytes  int64 `json:"index_bytes"`
	OpenFiles   int   `json:"open_files"` // the process's file descriptors
	// CPUNanosPerOp is the process's CPU time from the workload's start to
	// the end of the wait, per operation of the workload.
	CPUNanosPerOp float64 `json:"cpu_ns_per_op"`
	// TableBytes is the size of the store's tables, all levels.
	TableBytes int64  `json:"table_bytes"`
	Tree       string `json:"tree"`
}

func newResult(name string, ops, found int, write bool, elapsed time.Duration, before, after shale.Metrics, io procstat.IO) result {
	perOp := func(n int64) float64 { return float64(n) / float64(ops) }
	return result{
		Benchmark:           name,
		Write:               write,
		Ops:                 ops,
		Found:               found,
		Seconds:             elapsed.Seconds(),
		OpsPerSec:           float64(ops) / elapsed.Seconds(),
		NanosPerOp:          float64(elapsed.Nanoseconds()) / float64(ops),
		DiskReadsPerOp:      perOp(after.DiskReads - before.DiskReads),
		FilterSkipsPerOp:    perOp(after.FilterSkips - before.FilterSkips),
		FalsePositivesPerOp: perOp(after.FilterFalsePositives - before.FilterFalsePositives),
		ReadSyscallsPerOp:   perOp(io.SyscR),
		ReadBytesPerOp:      perOp(io.RChar),
		WriteSyscallsPerOp:  perOp(io.SyscW),
		WriteBytesPerOp:     perOp(io.WChar + after.WALMappedBytes - before.WALMappedBytes),
	}
}

// report is everything kvbench prints.
type report struct {
	Config  configReport `json:"config"`
	Results []result     `json:"results"`
	// Tree is the shape of the store after the run; with -compare-filters,
	// of each store after the build, and whether the two are the same.
	Tree      []string `json:"tree"`
	SameShape *bool    `json:"same_shape,omitempty"`
	// Metrics is the store's metrics table after the run (-metrics).
	Metrics string    `json:"metrics,omitempty"`
	Plot    *plotData `json:"plot,omitempty"`
	// YCSB is a -workload run; Results is then empty.
	YCSB *ycsbReport `json:"ycsb,omitempty"`
}

type configReport struct {
	N         int `json:"n"`
	KeySize   int `json:"key_size"`
	ValueSize int `json:"value_size"`
	// CompressionRatio is -compression-ratio.
	CompressionRatio float64 `json:"compression_ratio"`
	// Compression is -compression; empty in reports written before it
	// existed, which used snappy.
	Compression string `json:"compression,omitempty"`
	BloomBits   int    `json:"bloom_bits"`
	// Filter is -filter; empty in reports written before it existed, which
	// used Bloom filters.
	Filter         string `json:"filter,omitempty"`
	CacheSize      int    `json:"cache_size"`
	Sync           bool   `json:"sync"`
	Concurrency    int    `json:"concurrency"`
	CompareFilters bool   `json:"compare_filters"`
}

func reportConfig(cfg config) configReport {
	return configReport{cfg.n, cfg.keySize, cfg.valueSize, cfg.compressionRatio, cmp.Or(cfg.compression, "snappy"), cfg.bloomBits, cfg.filter, cfg.cacheSize, cfg.sync, cfg.concurrency, cfg.compareFilters}
}

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *report) writeText(w io.Writer) {
	c := r.Config
	filters := filtersOf(c)
	cache := fmt.Sprintf("block cache %d KiB", c.CacheSize>>10)
	switch {
	case c.CacheSize < 0:
		cache = "no block cache"
	case c.CacheSize == 0:
		cache = "default block cache"
	}
	sync := "no fsync"
	if c.Sync {
		sync = "fsync per write"
	}
	if r.YCSB != nil {
		fmt.Fprintf(w, "%s, %s compression, %s, %s\n", filters, c.Compression, cache, sync)
		r.YCSB.writeText(w)
		fmt.Fprintf(w, "tree after the run: %s\n", r.Tree[0])
		return
	}
	values := "random"
	if c.CompressionRatio < 1 {
		values = fmt.Sprintf("compressible to %.2f", c.CompressionRatio)
	}
	fmt.Fprintf(w, "n=%d, keys %d B, values %d B (%s), %s, %s compression, %s, %s, goroutines: %d\n",
		c.N, c.KeySize, c.ValueSize, values, filters, c.Compression, cache, sync, c.Concurrency)
	if len(r.Results) > 0 && !c.CompareFilters {
		writeTable(w, r.Results)
		fmt.Fprintf(w, "tree after the run: %s\n", r.Tree[0])
	}
	if r.Metrics != "" {
		fmt.Fprintf(w, "store metrics after the run:\n%s", r.Metrics)
	}
	if c.CompareFilters {
		r.writeComparison(w)
	}
	if r.Plot != nil {
		r.Plot.writeText(w)
	}
}

// writeTable prints results one per row, with a store column if they come
// from more than one store.
func writeTable(w io.Writer, results []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	withStore := slices.ContainsFunc(results, func(x result) bool { return x.Store != "" })
	store := func(x result) string {
		if withStore {
			return x.Store + "\t"
		}
		return ""
	}
	fmt.Fprintf(tw, "benchmark\t%sops/s\tns/op\tCPU ns/op\tdisk reads/op\tfilter skips/op\tfalse pos/op\tfound\tread sysc/op\tread B/op\twrite sysc/op\twrite B/op\tpeak RSS MiB\tfile RSS MiB\t\n", store(result{Store: "store"}))
	for _, x := range results {
		fmt.Fprintf(tw, "%s\t%s%.0f\t%.0f\t%.0f\t%.3f\t%.3f\t%.4f\t%s\t%.4f\t%.0f\t%.3f\t%.0f\t%.0f\t%.0f\t\n", x.Benchmark, store(x),
			x.OpsPerSec, x.NanosPerOp, x.CPUNanosPerOp, x.DiskReadsPerOp, x.FilterSkipsPerOp, x.FalsePositivesPerOp, foundShare(x),
			x.ReadSyscallsPerOp, x.ReadBytesPerOp, x.WriteSyscallsPerOp, x.WriteBytesPerOp, float64(x.PeakRSS)/(1<<20), float64(x.FileRSS)/(1<<20))
	}
	tw.Flush()
	if slices.ContainsFunc(results, func(x result) bool { return x.Scan != nil }) {
		fmt.Fprintln(w, "scans (a new iterator, a seek, then the entries one step at a time):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "benchmark\t%sentries/s\tentries/scan\tp50 µs\tp99 µs\tp99.9 µs\t\n", store(result{Store: "store"}))
		for _, x := range results {
			if s := x.Scan; s != nil {
				fmt.Fprintf(tw, "%s\t%s%.0f\t%.1f\t%s\t%s\t%s\t\n", x.Benchmark, store(x),
					s.EntriesPerSec, s.EntriesPerScan, micros(s.P50), micros(s.P99), micros(s.P999))
			}
		}
		tw.Flush()
	}
	for _, x := range results {
		if s := x.Settle; s != nil {
			fmt.Fprintf(w, "%s%s settled in %.1f s: %.0f CPU ns/op in all; write amp %.2f (wchar) / %.2f (store metrics); tables %.1f MiB; pinned filters %.1f MiB, indexes %.1f MiB; %d open files\n",
				x.Benchmark, store(x), s.Seconds, s.CPUNanosPerOp, s.WriteAmpIO, s.WriteAmpEngine, float64(s.TableBytes)/(1<<20), float64(s.FilterBytes)/(1<<20), float64(s.IndexBytes)/(1<<20), s.OpenFiles)
			if !s.Settled {
				fmt.Fprintf(w, "WARNING: %s was still compacting after %v\n", x.Benchmark, settleLimit)
			}
		}
	}
}

func foundShare(x result) string {
	if x.Write {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(x.Found)/float64(x.Ops))
}

// writeComparison prints the builds, the two trees, and each read workload
// with filters and without, side by side.
func (r *report) writeComparison(w io.Writer) {
	var writes, reads []result
	for _, x := range r.Results {
		if x.Write {
			writes = append(writes, x)
		} else {
			reads = append(reads, x)
		}
	}
	fmt.Fprintln(w, "build (automatic compactions off while writing, then compacted into the bottom level):")
	writeTable(w, writes)
	fmt.Fprintf(w, "tree with filters: %s\ntree without:      %s\n", r.Tree[0], r.Tree[1])
	if !*r.SameShape {
		fmt.Fprintln(w, "WARNING: the two trees differ in shape, so the reads below do not compare like with like")
	}
	if len(reads) == 0 {
		return
	}
	fmt.Fprintln(w, "reads, with filters | without filters:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tops/s\tns/op\tdisk reads/op\tfilter skips/op\tfalse pos/op\tfound\t|\tops/s\tns/op\tdisk reads/op\tfound\t")
	for i := 0; i+1 < len(reads); i += 2 {
		a, b := reads[i], reads[i+1]
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.3f\t%.3f\t%.4f\t%s\t|\t%.0f\t%.0f\t%.3f\t%s\t\n", a.Benchmark,
			a.OpsPerSec, a.NanosPerOp, a.DiskReadsPerOp, a.FilterSkipsPerOp, a.FalsePositivesPerOp, foundShare(a),
			b.OpsPerSec, b.NanosPerOp, b.DiskReadsPerOp, foundShare(b))
	}
	tw.Flush()
	fmt.Fprintln(w, strings.TrimSpace(`
disk reads/op: SSTable blocks read from files, not the block cache. filter skips/op: tables a
lookup ruled out by filter, no I/O. false pos/op: tables whose filter said maybe, without the key.`))
}
