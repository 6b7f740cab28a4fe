package main

import (
	"slices"

	"errors"
	"fmt"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/internal/procstat"
	"github.com/shale-db/shale/ycsb"
)

// ycsbWorkloads maps -workload names to the core workloads they run, after
// the load.
var ycsbWorkloads = map[string][]ycsb.Workload{
	"ycsb-a":   {ycsb.A},
	"ycsb-b":   {ycsb.B},
	"ycsb-c":   {ycsb.C},
	"ycsb-d":   {ycsb.D},
	"ycsb-e":   {ycsb.E},
	"ycsb-f":   {ycsb.F},
	"ycsb-all": ycsb.Workloads,
}

// ycsbReport is a YCSB run: the load, then each workload, on one store.
type ycsbReport struct {
	Records    int64       `json:"records"`
	Operations int64       `json:"operations"`
	Threads    int         `json:"threads"`
	RowCache   int         `json:"row_cache_bytes"`
	Phases     []ycsbPhase `json:"phases"`
}

// ycsbPhase is the load or one workload, with what the store's counters
// say it cost.
type ycsbPhase struct {
	*ycsb.Result
	DiskReadsPerOp float64 `json:"disk_reads_per_op"`
	RowCacheHits   int64   `json:"row_cache_hits"`
	RowCacheMisses int64   `json:"row_cache_misses"`
	// ReadCompactions is how many read compactions the store ran during
	// the phase (Metrics.ReadCompactions).
	ReadCompactions int64 `json:"read_compactions"`
	// CPUNanosPerOp is the process's CPU time (user and system, every
	// goroutine) over the phase, per operation.
	CPUNanosPerOp float64 `json:"cpu_ns_per_op"`
	// Settle is the load's aftermath, with -settle.
	Settle *settleResult `json:"settle,omitempty"`
}

// rowCacheHitRate is the share of row cache lookups that hit, or -1 if
// there were none.
func (p ycsbPhase) rowCacheHitRate() float64 {
	if n := p.RowCacheHits + p.RowCacheMisses; n > 0 {
		return float64(p.RowCacheHits) / float64(n)
	}
	return -1
}

// runYCSB loads a fresh store and runs the workloads -workload names, in
// order, on it.
func runYCSB(cfg config, dir string, progress io.Writer, rep *report) error {
	db, err := shale.Open(filepath.Join(dir, "store"), cfg.options(cfg.bloomBits, true))
	if err != nil {
		return err
	}
	defer db.Close()
	yr := &ycsbReport{Records: int64(cfg.records), Operations: int64(cfg.ops), Threads: cfg.concurrency, RowCache: cfg.rowCache}
	rep.YCSB = yr
	ycfg := ycsb.Config{Records: int64(cfg.records), Operations: int64(cfg.ops), Threads: cfg.concurrency, Seed: uint64(cfg.seed)}
	b := &bench{cfg: cfg, db: db, autoCompactions: true}
	phase := func(name string, n int64, settle bool, do func(ycsb.Config) (*ycsb.Result, error)) error {
		bar := progressbar.NewOptions64(n, progressbar.OptionSetWriter(progress),
			progressbar.OptionSetVisibility(cfg.progress), progressbar.OptionSetDescription(name),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionClearOnFinish())
		c := ycfg
		c.Progress = func(ops int) { bar.Add(ops) }
		before := db.Metrics()
		ioBefore, err := procstat.ReadIO()
		if err != nil {
			return err
		}
		cpuBefore, err := procstat.CPUTime()
		if err != nil {
			return err
		}
		r, err := do(c)
		bar.Finish()
		if err != nil {
			return err
		}
		after := db.Metrics()
		cpuAfter, err := procstat.CPUTime()
		if err != nil {
			return err
		}
		var s *settleResult
		if settle {
			if s, err = b.settle(before, ioBefore, cpuBefore, int(r.Ops)); err != nil {
				return err
			}
		}
		yr.Phases = append(yr.Phases, ycsbPhase{
			CPUNanosPerOp:   float64(cpuAfter-cpuBefore) / float64(r.Ops),
			Settle:          s,
			Result:          r,
			DiskReadsPerOp:  float64(after.DiskReads-before.DiskReads) / float64(r.Ops),
			RowCacheHits:    after.RowCacheHits - before.RowCacheHits,
			RowCacheMisses:  after.RowCacheMisses - before.RowCacheMisses,
			ReadCompactions: after.ReadCompactions - before.ReadCompactions,
		})
		ycfg.Records = r.Records
		return nil
	}
	store := ycsb.Shale(db)
	if err := phase("load", ycfg.Records, cfg.settle, func(c ycsb.Config) (*ycsb.Result, error) { return ycsb.Load(store, c) }); err != nil {
		return err
	}
	for _, w := range ycsbWorkloads[cfg.workload] {
		if err := phase("workload "+w.Name, ycfg.Operations, false, func(c ycsb.Config) (*ycsb.Result, error) { return ycsb.Run(store, w, c) }); err != nil {
			return err
		}
	}
	rep.Tree = []string{db.Metrics().Shape()}
	return nil
}

// writeText prints the run as a table: per phase its throughput, then one
// row per operation type with its latency percentiles.
func (y *ycsbReport) writeText(w io.Writer) {
	rowCache := "row cache off"
	if y.RowCache > 0 {
		rowCache = fmt.Sprintf("row cache %d bytes", y.RowCache)
	}
	fmt.Fprintf(w, "YCSB: %d records of 10 fields x 100 B, %d operations per workload, threads: %d, %s\n",
		y.Records, y.Operations, y.Threads, rowCache)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tops/s\tCPU ns/op\tdisk reads/op\trow cache hits\tread compactions\top\tcount\tp50\tp95\tp99\tp99.9\tmax\t")
	for _, p := range y.Phases {
		hits := "-"
		if rate := p.rowCacheHitRate(); rate >= 0 {
			hits = fmt.Sprintf("%.1f%%", 100*rate)
		}
		for i, o := range p.ByOp {
			head := "\t\t\t\t\t\t"
			if i == 0 {
				head = fmt.Sprintf("%s\t%.0f\t%.0f\t%.3f\t%s\t%d\t", p.Workload, p.OpsPerSec, p.CPUNanosPerOp, p.DiskReadsPerOp, hits, p.ReadCompactions)
			}
			fmt.Fprintf(tw, "%s%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", head, o.Op, o.Count,
				micros(o.P50), micros(o.P95), micros(o.P99), micros(o.P999), micros(o.Max))
		}
	}
	tw.Flush()
	for _, p := range y.Phases {
		if s := p.Settle; s != nil {
			fmt.Fprintf(w, "%s settled in %.1f s: %.0f CPU ns/op in all; write amp %.2f (wchar) / %.2f (store metrics); tables %.1f MiB\n",
				p.Workload, s.Seconds, s.CPUNanosPerOp, s.WriteAmpIO, s.WriteAmpEngine, float64(s.TableBytes)/(1<<20))
		}
	}
	fmt.Fprintln(w, strings.TrimSpace(`
latencies in µs, from HDR histograms (3 significant digits). row cache hits: share of the
per-table row cache lookups that hit. disk reads/op: SSTable blocks read from files.
read compactions: run during the phase (see docs/performance.md, "Read compactions").`))
}

// micros formats a latency in microseconds.
func micros(d time.Duration) string {
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond))
}

func (cfg *config) validateYCSB() error {
	if _, ok := ycsbWorkloads[cfg.workload]; !ok {
		return fmt.Errorf("unknown workload %q (known: ycsb-a to ycsb-f, ycsb-all)", cfg.workload)
	}
	if err := cfg.validateFilter(); err != nil {
		return err
	}
	switch {
	case cfg.records < 1:
		return errors.New("-records must be at least 1")
	case cfg.ops < 1:
		return errors.New("-ops must be at least 1")
	case cfg.concurrency < 1:
		return errors.New("-threads must be at least 1")
	case cfg.rowCache < 0:
		return errors.New("-row-cache must not be negative")
	case cfg.compareFilters:
		return errors.New("-compare-filters runs the db_bench workloads, not YCSB")
	}
	return nil
}

// drawYCSBPlot draws two panels into a PNG file: (a) each phase's
// throughput and (b) each phase's p99 latency per operation type.
func drawYCSBPlot(file string, y *ycsbReport) error {
	var names []string
	var throughput plotter.Values
	for _, p := range y.Phases {
		names = append(names, p.Workload)
		throughput = append(throughput, p.OpsPerSec)
	}
	tp := plot.New()
	tp.Title.Text = fmt.Sprintf("(a) YCSB throughput (%d records, threads: %d)", y.Records, y.Threads)
	tp.Y.Label.Text = "operations per second"
	bars, err := plotter.NewBarChart(throughput, vg.Points(30))
	if err != nil {
		return err
	}
	bars.Color = plotutil.Color(0)
	tp.Add(bars)
	tp.NominalX(names...)

	lat := plot.New()
	lat.Title.Text = "(b) p99 latency per operation type"
	lat.Y.Label.Text = "µs (log scale)"
	lat.Y.Scale = plot.LogScale{}
	lat.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var ops []string
	for _, p := range y.Phases {
		for _, o := range p.ByOp {
			if !slices.Contains(ops, o.Op) {
				ops = append(ops, o.Op)
			}
		}
	}
	var scatters []any
	for _, op := range ops {
		var points plotter.XYs // only the phases that did op
		for j, p := range y.Phases {
			if k := slices.IndexFunc(p.ByOp, func(o ycsb.OpResult) bool { return o.Op == op }); k >= 0 {
				points = append(points, plotter.XY{X: float64(j), Y: max(1, float64(p.ByOp[k].P99)/float64(time.Microsecond))})
			}
		}
		scatters = append(scatters, op, points)
	}
	if err := plotutil.AddScatters(lat, scatters...); err != nil {
		return err
	}
	lat.Y.Max *= 3 // room for the legend above the slowest point
	lat.Legend.Top = true
	lat.Legend.Left = true
	lat.NominalX(names...)
	return drawPanels(file, 2, tp, lat)
}
