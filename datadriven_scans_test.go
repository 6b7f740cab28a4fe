package shale

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/cockroachdb/datadriven"
)

// The datadriven commands of the scans headline (testdata/scans):
//
//	load-multiples n=N step=S files=F [every=E] [value=V] [settle]
//	                 (the keys %016d of the multiples of S below n*S, every
//	                  E-th of them, striped over F flushed files as load
//	                  stripes; settle: compact as the picker wants after
//	                  each flush)
//	empty-scans n=N [width=W] [correlated] [seed=K] [prefix=P]
//	                 (N empty scans between the keys of the last
//	                  load-multiples: each a bounded iterator's First over
//	                  a range of up to W (16) consecutive key values placed
//	                  at random in a random gap, or, correlated, exactly
//	                  [p+1, p+W+1) for a random present key p; with
//	                  prefix=P, a scan whose keys all share their first P
//	                  bytes also sets IterOptions.Prefix to them, as a
//	                  user of prefix filters would; prints the files whose
//	                  key range overlaps each scan, the disk reads, and the
//	                  range- and prefix-filter counts)
//	rangefilters     (the range filters' memory and bits per key)

// loadMultiples runs load-multiples.
func (s *ddState) loadMultiples(d *datadriven.TestData) (string, error) {
	var n, step, files int
	every, value := 1, "v"
	d.ScanArgs(s.t, "n", &n)
	d.ScanArgs(s.t, "step", &step)
	d.ScanArgs(s.t, "files", &files)
	if d.HasArg("every") {
		d.ScanArgs(s.t, "every", &every)
	}
	if d.HasArg("value") {
		d.ScanArgs(s.t, "value", &value)
	}
	for j := 0; j < files; j++ {
		b := s.db.NewBatch()
		for i := j * every; i < n; i += files * every {
			b.Put(fmt.Appendf(nil, "%016d", i*step), []byte(value))
		}
		if err := s.flushBatch(d, b); err != nil {
			return "", err
		}
	}
	s.multiples, s.step = n, step
	return s.lsm(), nil
}

// emptyScans runs empty-scans.
func (s *ddState) emptyScans(d *datadriven.TestData) (string, error) {
	var n, prefix int
	width, seed := 16, 1
	if d.HasArg("prefix") {
		d.ScanArgs(s.t, "prefix", &prefix)
	}
	d.ScanArgs(s.t, "n", &n)
	if d.HasArg("width") {
		d.ScanArgs(s.t, "width", &width)
	}
	if d.HasArg("seed") {
		d.ScanArgs(s.t, "seed", &seed)
	}
	if width >= s.step {
		s.t.Fatalf("%s: width %d does not fit between keys %d apart", d.Pos, width, s.step)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	before := s.db.Metrics()
	overlapping, found := 0, 0
	for range n {
		p := rng.IntN(s.multiples-1) * s.step
		lo, w := p+1, width
		if !d.HasArg("correlated") {
			w = 1 + rng.IntN(width)
			lo += rng.IntN(s.step - w)
		}
		lower, upper := fmt.Appendf(nil, "%016d", lo), fmt.Appendf(nil, "%016d", lo+w)
		overlapping += s.overlappingFiles(lower, upper)
		o := &IterOptions{LowerBound: lower, UpperBound: upper}
		if last := fmt.Appendf(nil, "%016d", lo+w-1); prefix > 0 && bytes.Equal(lower[:prefix], last[:prefix]) {
			o.Prefix = lower[:prefix]
		}
		it := s.db.NewIter(o)
		if it.First() {
			found++
		}
		if err := it.Close(); err != nil {
			return "", err
		}
	}
	after := s.db.Metrics()
	reads := after.DiskReads - before.DiskReads
	var b strings.Builder
	fmt.Fprintf(&b, "%d scans, %d found; files overlapping a scan: %.2f on average\n", n, found, float64(overlapping)/float64(n))
	fmt.Fprintf(&b, "disk reads: %d (%.3f per scan)\n", reads, float64(reads)/float64(n))
	fmt.Fprintf(&b, "range filter checks: %d, skips: %d, false positives: %d\n",
		after.RangeFilterChecks-before.RangeFilterChecks, after.RangeFilterSkips-before.RangeFilterSkips,
		after.RangeFilterFalsePositives-before.RangeFilterFalsePositives)
	if prefix > 0 {
		fmt.Fprintf(&b, "prefix filter checks: %d, skips: %d\n",
			after.PrefixFilterChecks-before.PrefixFilterChecks, after.PrefixFilterSkips-before.PrefixFilterSkips)
	}
	return b.String(), nil
}

// overlappingFiles counts the tables whose key range meets [lower, upper).
func (s *ddState) overlappingFiles(lower, upper []byte) int {
	rs, _ := s.db.loadReadState(readLatest)
	defer rs.unref()
	n := 0
	for _, files := range rs.v.Levels {
		for _, f := range files {
			if bytes.Compare(f.Smallest.UserKey, upper) < 0 && bytes.Compare(f.Largest.UserKey, lower) >= 0 {
				n++
			}
		}
	}
	return n
}

// rangeFilters describes the range filters of the live tables.
func (s *ddState) rangeFilters() string {
	rs, _ := s.db.loadReadState(readLatest)
	defer rs.unref()
	var bytes, keys int64
	for _, files := range rs.v.Levels {
		for _, f := range files {
			r := rs.v.tables[f.FileNum].reader
			bytes += int64(r.RangeFilterSize())
			keys += int64(r.Properties().NumUserKeys)
		}
	}
	if keys == 0 {
		return "no keys\n"
	}
	return fmt.Sprintf("range filters: %d bytes in memory for %d keys: %.2f bits per key, %.2f MiB per million keys\n",
		bytes, keys, float64(8*bytes)/float64(keys), float64(bytes)/float64(keys)*1e6/(1<<20))
}
