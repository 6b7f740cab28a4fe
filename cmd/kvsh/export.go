package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/shale-db/shale"
)

// defaultExportRate is export-filter's false-positive rate when p= is not
// given.
const defaultExportRate = 0.01

func cmdExportFilter(sh *shell, args []string, opts map[string]string) error {
	if sh.snap != nil {
		return errors.New("a snapshot is open, and export-filter reads the live store: snapshot off first")
	}
	p := defaultExportRate
	if s, ok := opts["p"]; ok {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v > 0 && v < 1) {
			return fmt.Errorf("p: want a false-positive rate between 0 and 1, such as 0.01, not %s", shale.FormatKey([]byte(s)))
		}
		p = v
	}
	if sameDir(filepath.Dir(args[0]), sh.dir) {
		return fmt.Errorf("%s is in the store's directory, where a file may be the store's: write the filter elsewhere", shale.FormatKey([]byte(args[0])))
	}
	var lower, upper []byte
	if len(args) > 1 {
		lower = []byte(args[1])
	}
	if len(args) > 2 {
		upper = []byte(args[2])
	}
	if err := checkRange(args[1:]); err != nil {
		return err
	}
	f, n, err := sh.db.ExportFilterContext(sh.ctx, lower, upper, p)
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: export-filter stopped; %s not written", errInterrupted, args[0])
	}
	if err != nil {
		return err
	}
	data, err := f.MarshalBinary()
	if err != nil {
		return err
	}
	if err := os.WriteFile(args[0], data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "wrote %s: %s", args[0], plural(n, "item"))
	if n > 0 {
		fmt.Fprintf(sh.out, ", %.2f bits per item", f.BitsPerKey())
	}
	fmt.Fprintf(sh.out, ", %s, %s, false-positive rate %g\n", plural(f.K(), "probe"), plural(len(data), "byte"), p)
	return nil
}
