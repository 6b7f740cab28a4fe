package main

// numbers and scans: decimal keys, and short scans over them that measure
// what the range filters save (lesson 10).

import (
	"fmt"
	"math"
	"strconv"
)

// maxDigits bounds numbers' and scans' digits=D: keys of up to 18 digits
// fit an int64's range.
const maxDigits = 18

// digitsOption returns the option digits=D, 7 by default.
func digitsOption(opts map[string]string) (int, error) {
	d, err := intOption(opts, "digits", 7, 1)
	if err != nil || d > maxDigits {
		return 0, fmt.Errorf("digits: want 1 to %d", maxDigits)
	}
	return d, nil
}

// decimalKey is v as a key of digits digits, zero-padded.
func decimalKey(v uint64, digits int) []byte {
	return fmt.Appendf(nil, "%0*d", digits, v)
}

func cmdNumbers(sh *shell, args []string, opts map[string]string) error {
	n, err := parseInt("N", args[0], 1)
	if err != nil {
		return err
	}
	digits, err := digitsOption(opts)
	if err != nil {
		return err
	}
	universe := uint64(math.Pow10(digits))
	b := sh.db.NewBatch()
	for range n {
		b.Put(decimalKey(sh.rng.Uint64N(universe), digits), []byte("v"))
	}
	if err := sh.db.Apply(b); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "wrote %s, %d-digit decimals drawn at random below %d\n", plural(n, "key"), digits, universe)
	return nil
}

func cmdScans(sh *shell, args []string, opts map[string]string) error {
	n, err := parseInt("N", args[0], 1)
	if err != nil {
		return err
	}
	if n > maxFilterItems {
		return fmt.Errorf("N: at most %d", maxFilterItems)
	}
	digits, err := digitsOption(opts)
	if err != nil {
		return err
	}
	length, err := intOption(opts, "len", 10, 1)
	if err != nil {
		return err
	}
	universe := uint64(math.Pow10(digits))
	if uint64(length) >= universe {
		return fmt.Errorf("len: want fewer than the %d values of %d digits", universe, digits)
	}
	before := sh.db.Metrics()
	found := 0
	for range n {
		lo := sh.rng.Uint64N(universe - uint64(length) + 1)
		it := sh.newIter([]string{string(decimalKey(lo, digits)), string(decimalKey(lo+uint64(length), digits))})
		if it.First() {
			found++
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	after := sh.db.Metrics()
	checks := after.RangeFilterChecks - before.RangeFilterChecks
	skips := after.RangeFilterSkips - before.RangeFilterSkips
	fps := after.RangeFilterFalsePositives - before.RangeFilterFalsePositives
	disk := after.DiskReads - before.DiskReads
	cached := after.BlockCacheHits - before.BlockCacheHits
	fmt.Fprintf(sh.out, "%s of %s (%d-digit keys): %d found a key; %.3f blocks read per scan (%d from disk, %d from the block cache)\n",
		plural(n, "scan"), plural(length, "value"), digits, found, float64(disk+cached)/float64(n), disk, cached)
	if checks == 0 {
		fmt.Fprintln(sh.out, "range filters: none consulted (no table has one)")
		return nil
	}
	rate := 0.0
	if skips+fps > 0 {
		rate = float64(fps) / float64(skips+fps) * 100
	}
	fmt.Fprintf(sh.out, "range filters: %d checked, %d skipped, %s (%s of the tables without a key there)",
		checks, skips, plural(int(fps), "false positive"), strconv.FormatFloat(rate, 'f', 2, 64)+"%")
	fmt.Fprintln(sh.out)
	return nil
}
