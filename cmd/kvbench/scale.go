package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
)

// scaleBenchmarks are the workloads of a -scale run, in order.
var scaleBenchmarks = []string{"fillrandom", "readrandom", "readmissing"}

// scaleReads caps the lookups of each read workload of a -scale run, so
// that 100M keys stay feasible.
const scaleReads = 1_000_000

// scaleReport is what -scale measures: one report per store size, in
// ascending order of keys.
type scaleReport struct {
	Points []scalePoint `json:"points"`
}

// scalePoint is one store size, measured in a process of its own.
type scalePoint struct {
	Report report `json:"report"`
	// Commit is the VCS revision kvbench was built from ("+dirty" if the
	// work tree had changes), when the build recorded it.
	Commit string `json:"commit,omitempty"`
	// LoadBefore and LoadAfter are /proc/loadavg around the run: the
	// machine's load, which the timings depend on.
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
}

// parseSizes parses -scale's comma-separated key counts; each may be
// written as an integer or in e notation (1e6).
func parseSizes(s string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x < 1 || x != float64(int(x)) {
			return nil, fmt.Errorf("-scale: %q is not a key count", f)
		}
		sizes = append(sizes, int(x))
	}
	return sizes, nil
}

// runScale measures fillrandom, readrandom and readmissing at each size of
// cfg.scale, each in a fresh process (this program with -n, -reads, -settle
// and -json) and a fresh directory, removed once measured; or, with
// cfg.scaleFrom, reads the points of earlier -scale -json runs. Then it
// prints the points and draws cfg.plot.
func runScale(cfg config, out, progress io.Writer) error {
	if cfg.scale != "" && cfg.scaleFrom != "" {
		return errors.New("-scale and -scale-from: choose one")
	}
	var rep scaleReport
	if cfg.scaleFrom != "" {
		for file := range strings.SplitSeq(cfg.scaleFrom, ",") {
			var r scaleReport
			data, err := os.ReadFile(file)
			if err == nil {
				err = json.Unmarshal(data, &r)
			}
			if err != nil {
				return fmt.Errorf("-scale-from %s: %w", file, err)
			}
			rep.Points = append(rep.Points, r.Points...)
		}
	} else {
		sizes, err := parseSizes(cfg.scale)
		if err != nil {
			return err
		}
		for _, n := range sizes {
			p, err := scaleChild(cfg, n, progress)
			if err != nil {
				return err
			}
			rep.Points = append(rep.Points, p)
		}
	}
	slices.SortStableFunc(rep.Points, func(a, b scalePoint) int { return a.Report.Config.N - b.Report.Config.N })
	if cfg.plot != "" {
		if err := drawScalePlot(cfg.plot, rep.Points); err != nil {
			return err
		}
	}
	if cfg.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	writeScaleTable(out, rep.Points)
	return nil
}

// scaleChild runs one size in a child process.
func scaleChild(cfg config, n int, progress io.Writer) (scalePoint, error) {
	root := cfg.dir
	if root == "" {
		tmp, err := os.MkdirTemp("", "kvbench-scale-")
		if err != nil {
			return scalePoint{}, err
		}
		defer os.RemoveAll(tmp)
		root = tmp
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return scalePoint{}, err
	}
	// The size's directory is made here and removed afterwards, so it must
	// not exist already: what is in it is not this run's to delete.
	dir := filepath.Join(root, strconv.Itoa(n))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return scalePoint{}, fmt.Errorf("-scale %d keys: %w (kvbench makes this directory and removes it afterwards)", n, err)
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return scalePoint{}, err
	}
	cmd := exec.Command(self, "-benchmarks", strings.Join(scaleBenchmarks, ","),
		"-n", strconv.Itoa(n), "-reads", strconv.Itoa(min(n, scaleReads)), "-settle", "-json", "-dir", dir,
		"-key-size", strconv.Itoa(cfg.keySize), "-value-size", strconv.Itoa(cfg.valueSize),
		"-compression-ratio", strconv.FormatFloat(cfg.compressionRatio, 'g', -1, 64), "-compression", cfg.compression,
		"-bloom-bits", strconv.Itoa(cfg.bloomBits), "-filter", cfg.filter, "-cache-size", strconv.Itoa(cfg.cacheSize),
		"-memtable", strconv.Itoa(cfg.memTableSize), "-seed", strconv.FormatInt(cfg.seed, 10),
		"-no-read-compactions="+strconv.FormatBool(cfg.noReadCompactions), "-mmap="+strconv.FormatBool(cfg.mmapReads))
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, progress
	p := scalePoint{Commit: buildCommit(), LoadBefore: loadAvg()}
	if err := cmd.Run(); err != nil {
		return p, fmt.Errorf("-scale %d keys: %w", n, err)
	}
	p.LoadAfter = loadAvg()
	if err := json.Unmarshal(stdout.Bytes(), &p.Report); err != nil {
		return p, fmt.Errorf("-scale %d keys: reading the child's report: %w", n, err)
	}
	return p, nil
}

// buildCommit is the VCS revision this binary was built from, if recorded.
func buildCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// loadAvg is the first three fields of /proc/loadavg, or "" if unreadable.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

// scaleRow is one point's figures, as the table and the plot show them.
type scaleRow struct {
	keys                     float64
	fillOpsPerSec            float64
	writeAmpIO, writeAmpEng  float64
	pinnedBytes              float64
	peakRSS                  float64
	getNs, missNs            float64       // readrandom, readmissing
	getSyscalls, missSyscall float64       // read syscalls per lookup
	settle                   *settleResult // the fill's
}

func scaleRowOf(p scalePoint) (scaleRow, error) {
	r := scaleRow{keys: float64(p.Report.Config.N)}
	find := func(name string) (result, error) {
		for _, x := range p.Report.Results {
			if x.Benchmark == name {
				return x, nil
			}
		}
		return result{}, fmt.Errorf("the %d-key point has no %s result", p.Report.Config.N, name)
	}
	fill, err := find("fillrandom")
	if err != nil {
		return r, err
	}
	if fill.Settle == nil {
		return r, fmt.Errorf("the %d-key point's fill did not settle", p.Report.Config.N)
	}
	get, err := find("readrandom")
	if err != nil {
		return r, err
	}
	miss, err := find("readmissing")
	if err != nil {
		return r, err
	}
	r.fillOpsPerSec, r.settle = fill.OpsPerSec, fill.Settle
	r.writeAmpIO, r.writeAmpEng = fill.Settle.WriteAmpIO, fill.Settle.WriteAmpEngine
	r.pinnedBytes = float64(fill.Settle.FilterBytes + fill.Settle.IndexBytes)
	r.peakRSS = float64(max(fill.PeakRSS, get.PeakRSS, miss.PeakRSS))
	r.getNs, r.missNs = get.NanosPerOp, miss.NanosPerOp
	r.getSyscalls, r.missSyscall = get.ReadSyscallsPerOp, miss.ReadSyscallsPerOp
	return r, nil
}

// writeScaleTable prints the points as a markdown table.
func writeScaleTable(w io.Writer, points []scalePoint) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| keys\t| filters\t| fill ops/s\t| write amp (wchar)\t| write amp (metrics)\t| present Get ns\t| read syscalls/present Get\t| absent Get ns\t| read syscalls/absent Get\t| pinned filters+indexes MiB\t| peak RSS MiB\t| open files\t| tree\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|")
	for _, p := range points {
		r, err := scaleRowOf(p)
		if err != nil {
			fmt.Fprintf(tw, "| %d\t| %v\t|\n", p.Report.Config.N, err)
			continue
		}
		s := r.settle
		settled := ""
		if !s.Settled {
			settled = " (still compacting)"
		}
		fmt.Fprintf(tw, "| %.0f\t| %s\t| %.0f\t| %.2f\t| %.2f\t| %.0f\t| %.4f\t| %.0f\t| %.4f\t| %.1f\t| %.0f\t| %d\t| %s%s\t|\n",
			r.keys, filtersOf(p.Report.Config), r.fillOpsPerSec, r.writeAmpIO, r.writeAmpEng, r.getNs, r.getSyscalls, r.missNs, r.missSyscall,
			r.pinnedBytes/(1<<20), r.peakRSS/(1<<20), s.OpenFiles, s.Tree, settled)
	}
	tw.Flush()
}

// filtersOf names a run's table filters as its text report does, e.g.
// "monkey 10 bits/key"; runs from before -filter used Bloom filters.
func filtersOf(c configReport) string {
	if c.BloomBits < 1 {
		return "no filters"
	}
	return fmt.Sprintf("%s %d bits/key", cmp.Or(c.Filter, "bloom"), c.BloomBits)
}

// drawScalePlot draws four panels against the key count (log scale): fill
// throughput, write amplification, Get time, and read syscalls per Get.
func drawScalePlot(file string, points []scalePoint) error {
	var rows []scaleRow
	for _, p := range points {
		r, err := scaleRowOf(p)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	line := func(y func(scaleRow) float64) plotter.XYs {
		var xys plotter.XYs
		for _, r := range rows {
			xys = append(xys, plotter.XY{X: r.keys, Y: y(r)})
		}
		return xys
	}
	// panel draws lines against the key count. Time and syscalls per Get
	// use a log scale (present and absent keys differ tenfold or more),
	// widened so that the legend below the lines hides none of them.
	panel := func(title, ylabel string, logY bool, lines ...any) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "keys in the store"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Label.Text = ylabel
		if err := plotutil.AddLinePoints(p, lines...); err != nil {
			return nil, err
		}
		if logY {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			p.Y.Min, p.Y.Max = p.Y.Min/10, p.Y.Max*2
		} else {
			p.Y.Min, p.Y.Max = 0, p.Y.Max*1.3
			p.Legend.Top = true
		}
		p.Legend.Left = true
		return p, nil
	}
	fill, err := panel("(a) fillrandom throughput", "ops/s", false,
		"1 writer, 16 B keys, 100 B values", line(func(r scaleRow) float64 { return r.fillOpsPerSec }))
	if err != nil {
		return err
	}
	amp, err := panel("(b) write amplification after the fill settles", "bytes written per user byte", false,
		"process wchar", line(func(r scaleRow) float64 { return r.writeAmpIO }),
		"store metrics (WAL + flush + compaction)", line(func(r scaleRow) float64 { return r.writeAmpEng }))
	if err != nil {
		return err
	}
	ns, err := panel("(c) Get time", "ns per Get (log scale)", true,
		"present keys (readrandom)", line(func(r scaleRow) float64 { return r.getNs }),
		"absent keys (readmissing)", line(func(r scaleRow) float64 { return r.missNs }))
	if err != nil {
		return err
	}
	sys, err := panel("(d) read syscalls per Get", "read syscalls per Get (log scale)", true,
		"present keys (readrandom)", line(func(r scaleRow) float64 { return r.getSyscalls }),
		"absent keys (readmissing)", line(func(r scaleRow) float64 { return r.missSyscall }))
	if err != nil {
		return err
	}
	return drawPanels(file, 2, fill, amp, ns, sys)
}
