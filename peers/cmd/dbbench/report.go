package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// describe says what a workload does, for its table's title.
func describe(workload string, sz sizes) string {
	if phase, threads, ok := parseYCSB(workload); ok {
		if phase == "load" {
			return fmt.Sprintf("YCSB load, %d records of 1 KB, %d thread(s)", sz.YCSBRecords, threads)
		}
		return fmt.Sprintf("YCSB %s, %d operations on %d+ records of 1 KB, %d thread(s)", phase, sz.YCSBOps, sz.YCSBRecords, threads)
	}
	switch workload {
	case "fillrandom":
		return fmt.Sprintf("fillrandom, %d keys of %d B with %d B values, 1 writer", sz.Keys, keySize, valueSize)
	case "fillrandom-4":
		return fmt.Sprintf("fillrandom-4, %d keys of %d B with %d B values, %d writers", sz.Keys, keySize, valueSize, writers)
	case "readrandom", "readmissing":
		return fmt.Sprintf("%s, %d lookups in %d keys", workload, sz.Reads, sz.Keys)
	case "scanforward":
		return fmt.Sprintf("scanforward, %d seeks + %d nexts in %d keys", sz.Scans, scanLength, sz.Keys)
	case "scanbackward":
		return fmt.Sprintf("scanbackward, %d seeks + %d prevs in %d keys", sz.Scans, scanLength, sz.Keys)
	}
	return workload
}

// micros formats a latency in µs, to a tenth below 100.
func micros(d time.Duration) string {
	us := float64(d) / float64(time.Microsecond)
	if us < 100 {
		return fmt.Sprintf("%.1f", us)
	}
	return fmt.Sprintf("%.0f", us)
}

// printTable writes one workload's results as a markdown table. The first
// result is the reference of the ratios (shale, when it runs first).
func printTable(w io.Writer, workload string, sz sizes, results []result) {
	if len(results) == 0 {
		return
	}
	ref := results[0]
	fmt.Fprintf(w, "%s:\n\n| engine | ops/s | %s/engine |", describe(workload, sz), ref.Engine)
	for _, o := range ref.ByOp {
		fmt.Fprintf(w, " %s µs p50 / p99 / p99.9 |", o.Op)
	}
	fmt.Fprintln(w, " CPU s/1k ops | read sysc/op | write sysc/op | write amp | dirtied amp | settle s | peak RSS MiB |")
	fmt.Fprintf(w, "|---|---|---|%s---|---|---|---|---|---|---|\n", strings.Repeat("---|", len(ref.ByOp)))
	for _, r := range results {
		ops := float64(r.Ops)
		fmt.Fprintf(w, "| %s | %.0f | %.2fx |", r.Engine, r.OpsPerSec, ref.OpsPerSec/r.OpsPerSec)
		for _, o := range r.ByOp {
			fmt.Fprintf(w, " %s / %s / %s |", micros(o.P50), micros(o.P99), micros(o.P999))
		}
		amp, dirtied, settle := "", "", ""
		if writes(workload) {
			amp, dirtied, settle = fmt.Sprintf("%.2f", r.WriteAmp), fmt.Sprintf("%.2f", r.DirtiedAmp), fmt.Sprintf("%.1f", r.SettleSeconds)
		}
		fmt.Fprintf(w, " %.3f | %.3f | %.3f | %s | %s | %s | %.0f |\n",
			1000*r.CPUSeconds/ops, float64(r.IO.SyscR)/ops, float64(r.IO.SyscW)/ops,
			amp, dirtied, settle, float64(r.PeakRSS)/(1<<20))
	}
	fmt.Fprintln(w)
	levels := false
	for _, r := range results {
		if !slices.ContainsFunc(r.LevelWrites, func(x float64) bool { return x > 0 }) {
			continue
		}
		levels = true
		fmt.Fprintf(w, "%s, table bytes written into each level per user byte:", r.Engine)
		for level, x := range r.LevelWrites {
			if x > 0 {
				fmt.Fprintf(w, " L%d %.2f", level, x)
			}
		}
		fmt.Fprintln(w)
	}
	if levels {
		fmt.Fprintln(w)
	}
}

// isPeer reports whether an engine is a peer of shale rather than shale
// in another configuration.
func isPeer(engine string) bool { return !strings.HasPrefix(engine, "shale") }

// printSummary writes, for each workload, the first engine (shale) against
// the best peer: throughput, p99 of each operation type, and CPU per
// operation, each against the peer best at it.
func printSummary(w io.Writer, order []string, byWorkload map[string][]result) {
	fmt.Fprintln(w, "Summary, shale against the best peer at each measure:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | ops/s, shale / best peer | p99 µs, shale / lowest peer | CPU s/1k ops, shale / lowest peer |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, workload := range order {
		results := byWorkload[workload]
		if len(results) < 2 || isPeer(results[0].Engine) {
			continue
		}
		ref := results[0]
		var best, leanest *result
		for i := range results {
			r := &results[i]
			if !isPeer(r.Engine) {
				continue
			}
			if best == nil || r.OpsPerSec > best.OpsPerSec {
				best = r
			}
			if leanest == nil || r.CPUSeconds/float64(r.Ops) < leanest.CPUSeconds/float64(leanest.Ops) {
				leanest = r
			}
		}
		if best == nil {
			continue
		}
		var tails []string
		for k, o := range ref.ByOp {
			var low *result
			for i := range results {
				r := &results[i]
				if isPeer(r.Engine) && k < len(r.ByOp) && (low == nil || r.ByOp[k].P99 < low.ByOp[k].P99) {
					low = r
				}
			}
			tails = append(tails, fmt.Sprintf("%s %s / %s (%s)", o.Op, micros(o.P99), micros(low.ByOp[k].P99), low.Engine))
		}
		perK := func(r *result) float64 { return 1000 * r.CPUSeconds / float64(r.Ops) }
		fmt.Fprintf(w, "| %s | %.2fx (%s) | %s | %.3f / %.3f (%s) |\n", workload,
			ref.OpsPerSec/best.OpsPerSec, best.Engine, strings.Join(tails, "; "),
			perK(&ref), perK(leanest), leanest.Engine)
	}
	fmt.Fprintln(w)
}
