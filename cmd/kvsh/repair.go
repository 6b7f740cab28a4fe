package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/shale-db/shale"
)

func cmdCheck(sh *shell, args []string, _ map[string]string) error {
	return sh.offline(args, func(dir string) error { return checkStore(sh.out, dir, &sh.opts) })
}

func cmdRepair(sh *shell, args []string, _ map[string]string) error {
	return sh.offline(args, func(dir string) error { return repairStore(sh.out, dir, &sh.opts) })
}

// offline runs fn on the store in args[0], or on this session's store, with
// that store closed if it is the one open (Check and Repair take the
// store's lock). Afterwards it opens the session's store again if it is
// closed, which also opens a store that failed to reopen before.
func (sh *shell) offline(args []string, fn func(dir string) error) error {
	dir := sh.dir
	if len(args) == 1 {
		dir = args[0]
	}
	if sh.db != nil && sameDir(dir, sh.dir) {
		if sh.snap != nil {
			return errors.New("a snapshot is open and closing the store would end it: snapshot off first")
		}
		if err := sh.closeStore(); err != nil {
			return fmt.Errorf("closing %s: %w", sh.dir, err)
		}
	}
	err := fn(dir)
	if sh.db == nil && sameDir(dir, sh.dir) {
		db, oerr := shale.Open(sh.dir, &sh.opts)
		if oerr != nil {
			return errors.Join(err, fmt.Errorf("reopening %s: %w", sh.dir, oerr))
		}
		sh.setStore(db, sh.dir)
		fmt.Fprintf(sh.out, "reopened %s: %s\n", sh.dir, db.Metrics().Shape())
	}
	return err
}

// checkStore runs shale.Check on the store in dir and prints the verdict:
// consistent, or every problem on a line of its own. Problems make it
// return an error, after the list.
func checkStore(w io.Writer, dir string, opts *shale.Options) error {
	err := shale.Check(dir, opts)
	var ce *shale.CheckError
	switch {
	case err == nil:
		fmt.Fprintf(w, "%s: consistent\n", dir)
		return nil
	case errors.As(err, &ce):
		fmt.Fprintf(w, "%s: %s:\n", dir, plural(len(ce.Problems), "problem"))
		for _, p := range ce.Problems {
			fmt.Fprintf(w, "  %v\n", p)
		}
		return fmt.Errorf("%s is damaged (repair rebuilds it from its intact records)", dir)
	}
	return err
}

// repairStore runs shale.Repair on the store in dir and prints its report:
// what it kept of each file, what it moved to lost/, and a summary.
func repairStore(w io.Writer, dir string, opts *shale.Options) error {
	o := *opts
	o.Logger = nil // the report says it all, once
	report, err := shale.RepairWithReport(dir, &o)
	if report != nil {
		for line := range strings.Lines(report.String()) {
			fmt.Fprintf(w, "  %s", line)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: repaired\n", dir)
	return nil
}
