package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/vfs"
)

// maxIngestFiles bounds the FILE arguments of ingest.
const maxIngestFiles = 1000

// cmdIngest adds the tables FILE... to the store (shale.DB.Ingest).
func cmdIngest(sh *shell, args []string, _ map[string]string) error {
	if err := sh.db.Ingest(args); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "ingested %s; %s\n", plural(len(args), "file"), sh.db.Metrics().Shape())
	return nil
}

// cmdExportTable writes the entries with FROM <= key < TO, of the snapshot
// if one is open, to the table FILE (shale.NewTableWriter), for ingest.
func cmdExportTable(sh *shell, args []string, _ map[string]string) (err error) {
	if err := checkRange(args[1:]); err != nil {
		return err
	}
	if sameDir(filepath.Dir(args[0]), sh.dir) {
		return fmt.Errorf("%s is in the store's directory, where a file may be the store's: write the table elsewhere", shale.FormatKey([]byte(args[0])))
	}
	w, err := shale.NewTableWriter(args[0], &sh.opts)
	if err != nil {
		return err
	}
	it := sh.newIter(args[1:])
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if err = w.Put(it.Key(), it.Value()); err != nil {
			break
		}
		n++
	}
	err = errors.Join(err, it.Close())
	if cerr := w.Close(); err == nil {
		err = cerr
	} else if cerr == nil {
		// A table of part of the range is no export: remove it.
		fs := sh.opts.FS
		if fs == nil {
			fs = vfs.Default
		}
		fs.Remove(args[0])
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "wrote %s: %s\n", args[0], plural(n, "entry"))
	return nil
}
