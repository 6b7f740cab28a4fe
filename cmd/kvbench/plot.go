package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/shale-db/shale"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Sizes of the -plot measurements: at most fpKeys keys per store for the
// false-positive rates, and l0Keys keys per table and l0Lookups lookups per
// point for the reads against L0 tables. -n lowers them.
const (
	fpKeys     = 100_000
	l0Keys     = 2000
	l0Lookups  = 2000
	l0MaxFiles = 16
)

// plotData is what -plot measures.
type plotData struct {
	FPKeys int       `json:"fp_keys"` // keys per store, and absent lookups, for FP
	FP     []fpPoint `json:"false_positive_rate"`
	L0Keys int       `json:"l0_keys_per_table"`
	L0     []l0Point `json:"l0_reads_per_absent_lookup"`
}

type fpPoint struct {
	BitsPerKey int     `json:"bits_per_key"`
	Measured   float64 `json:"measured"`
	Formula    float64 `json:"formula"`
}

type l0Point struct {
	Tables         int     `json:"tables"`
	WithFilters    float64 `json:"with_filters"`
	WithoutFilters float64 `json:"without_filters"`
}

// formulaFPR is the false-positive rate of a Bloom filter with b bits per key
// and k = round(b ln 2) probes: (1 - e^(-k/b))^k.
func formulaFPR(b int) float64 {
	k := max(1, math.Round(float64(b)*math.Ln2))
	return math.Pow(1-math.Exp(-k/float64(b)), k)
}

// measurePlot measures both panels of -plot in stores under dir, through the
// DB's public API and metrics only.
func measurePlot(cfg config, dir string, progress io.Writer) (*plotData, error) {
	d := &plotData{FPKeys: min(cfg.n, fpKeys), L0Keys: min(cfg.n, l0Keys)}
	// (a) One store per bits/key: write the keys, flush, look up absent keys
	// inside the tables' key ranges; the rate is the share of filter checks
	// of tables without the key that said "maybe". The panel sets Bloom
	// filters against their formula, so its stores get Bloom filters
	// whatever -filter chose.
	fc := cfg
	fc.n, fc.valueSize, fc.concurrency, fc.filter = d.FPKeys, 8, 1, "bloom"
	fc.keySize = max(cfg.keySize, len(fmt.Sprint(fc.n)))
	for bits := 2; bits <= 20; bits++ {
		b, err := openBench(fc, filepath.Join(dir, fmt.Sprintf("fp%d", bits)), bits, false)
		if err != nil {
			return nil, err
		}
		m, err := b.fillAndProbe(progress)
		b.close()
		if err != nil {
			return nil, err
		}
		rate := 0.0
		if absent := m.FilterSkips + m.FilterFalsePositives; absent > 0 {
			rate = float64(m.FilterFalsePositives) / float64(absent)
		}
		d.FP = append(d.FP, fpPoint{bits, rate, formulaFPR(bits)})
	}
	// (b) Two stores, with and without filters, no block cache, no
	// automatic compactions; table t holds every l0MaxFiles-th key from
	// t-1, so every table's key range spans the key space and only a filter
	// rules a table out. After each new table, look up absent keys.
	lc := cfg
	lc.n, lc.valueSize, lc.concurrency, lc.cacheSize = l0MaxFiles*d.L0Keys, 8, 1, -1
	lc.keySize = max(cfg.keySize, len(fmt.Sprint(lc.n)))
	lookups := min(cfg.n, l0Lookups)
	bits := cfg.bloomBits
	if bits == shale.NoFilter {
		bits = 10
	}
	var reads [2][]float64
	for i, bits := range []int{bits, shale.NoFilter} {
		b, err := openBench(lc, filepath.Join(dir, fmt.Sprintf("l0-%d", i)), bits, false)
		if err != nil {
			return nil, err
		}
		reads[i], err = b.readsPerL0Table(lookups, progress)
		b.close()
		if err != nil {
			return nil, err
		}
	}
	for t := range l0MaxFiles {
		d.L0 = append(d.L0, l0Point{t + 1, reads[0][t], reads[1][t]})
	}
	return d, os.RemoveAll(dir)
}

// fillAndProbe writes the keys into one table and looks up as many absent
// keys, returning the metrics of the lookups.
func (b *bench) fillAndProbe(progress io.Writer) (shale.Metrics, error) {
	if _, err := b.run("fillseq", b.cfg.n, progress); err != nil {
		return shale.Metrics{}, err
	}
	if err := b.db.Flush(); err != nil {
		return shale.Metrics{}, err
	}
	before := b.db.Metrics()
	if _, err := b.run("readmissing", b.cfg.n, progress); err != nil {
		return shale.Metrics{}, err
	}
	m := b.db.Metrics()
	m.FilterSkips -= before.FilterSkips
	m.FilterFalsePositives -= before.FilterFalsePositives
	return m, nil
}

// readsPerL0Table adds l0MaxFiles tables one by one, striping the keys over
// them, and after each measures the disk reads per absent-key lookup.
func (b *bench) readsPerL0Table(lookups int, progress io.Writer) ([]float64, error) {
	w := &worker{b: b, rng: newRand(b.cfg.seed, 2)}
	var reads []float64
	for t := range l0MaxFiles {
		for i := t; i < b.cfg.n; i += l0MaxFiles {
			if err := w.put(i); err != nil {
				return nil, err
			}
		}
		if err := b.db.Flush(); err != nil {
			return nil, err
		}
		r, err := b.run("readmissing", lookups, progress)
		if err != nil {
			return nil, err
		}
		reads = append(reads, r.DiskReadsPerOp)
	}
	return reads, nil
}

// drawPlot draws the two panels side by side into a PNG file.
func drawPlot(file string, d *plotData) error {
	fp := plot.New()
	fp.Title.Text = fmt.Sprintf("(a) Bloom filter false-positive rate (%d keys)", d.FPKeys)
	fp.X.Label.Text = "bits per key"
	fp.Y.Label.Text = "false positives per absent-key check"
	fp.Y.Scale = plot.LogScale{}
	fp.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var measured, formula plotter.XYs
	for _, p := range d.FP {
		if p.Measured > 0 { // a log scale has no zero
			measured = append(measured, plotter.XY{X: float64(p.BitsPerKey), Y: p.Measured})
		}
		formula = append(formula, plotter.XY{X: float64(p.BitsPerKey), Y: p.Formula})
	}
	lines := []any{"formula (1-e^(-k/b))^k, k=round(b ln 2)", formula}
	if len(measured) > 0 {
		lines = append(lines, "measured (0 not drawn)", measured)
	}
	if err := plotutil.AddLinePoints(fp, lines...); err != nil {
		return err
	}
	fp.Legend.Left = true

	l0 := plot.New()
	l0.Title.Text = fmt.Sprintf("(b) disk reads per absent-key lookup (%d keys per table)", d.L0Keys)
	l0.X.Label.Text = "tables in L0 (no block cache)"
	l0.Y.Label.Text = "disk reads per lookup"
	var with, without plotter.XYs
	for _, p := range d.L0 {
		with = append(with, plotter.XY{X: float64(p.Tables), Y: p.WithFilters})
		without = append(without, plotter.XY{X: float64(p.Tables), Y: p.WithoutFilters})
	}
	if err := plotutil.AddLinePoints(l0, "without filters", without, "with filters", with); err != nil {
		return err
	}
	l0.Y.Min = 0
	l0.Legend.Top = true
	l0.Legend.Left = true

	return drawPanels(file, 2, fp, l0)
}

// drawPanels draws plots into a PNG file, cols to a row, 7 by 5 inches
// each.
func drawPanels(file string, cols int, plots ...*plot.Plot) error {
	rows := (len(plots) + cols - 1) / cols
	img := vgimg.New(vg.Length(7*cols)*vg.Inch, vg.Length(5*rows)*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Inch / 2, PadY: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	for i, p := range plots {
		p.Draw(tiles.At(dc, i%cols, i/cols))
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (d *plotData) writeText(w io.Writer) {
	fmt.Fprintf(w, "false-positive rate, %d keys per store, as many absent lookups:\n", d.FPKeys)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "bits/key\tmeasured\tformula\t")
	for _, p := range d.FP {
		fmt.Fprintf(tw, "%d\t%.5f\t%.5f\t\n", p.BitsPerKey, p.Measured, p.Formula)
	}
	tw.Flush()
	fmt.Fprintf(w, "disk reads per absent-key lookup, %d keys per L0 table, no block cache:\n", d.L0Keys)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tables\twith filters\twithout\t")
	for _, p := range d.L0 {
		fmt.Fprintf(tw, "%d\t%.3f\t%.3f\t\n", p.Tables, p.WithFilters, p.WithoutFilters)
	}
	tw.Flush()
}
