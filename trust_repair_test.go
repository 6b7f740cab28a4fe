package shale

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestRepairFailsAtEveryOp: a Repair that fails at any file-system
// operation, once or from then on, followed by a Repair that succeeds,
// leaves a store that opens with every write.
func TestRepairFailsAtEveryOp(t *testing.T) {
	build := func() (*vfs.MemFS, map[string]string) {
		fs, want := damageStore(t)
		m := newestOf(t, fs, "db", fileTypeManifest)
		b := readFile(t, fs, m)
		b[30] ^= 0x40
		writeFile(t, fs, m, b)
		return fs, want
	}
	for _, persistent := range []bool{false, true} {
		for i := int64(0); ; i++ {
			fs, want := build()
			efs := vfs.NewErrorFS(fs)
			ii := &vfs.IndexInjector{Index: i, Persistent: persistent}
			efs.SetInjector(ii.Inject)
			report, err := RepairWithReport("db", &Options{FS: efs})
			efs.SetInjector(nil)
			if err != nil && report != nil {
				checkFailedRepairReport(t, report, err)
			}
			if !ii.Fired() {
				if err != nil {
					t.Fatal(err)
				}
				if i < 20 {
					t.Fatalf("only %d operations in a Repair", i)
				}
				break
			}
			for _, c := range []*vfs.MemFS{fs.CrashClone(), fs} {
				t.Run(fmt.Sprintf("persistent=%v/op%02d", persistent, i), func(t *testing.T) {
					if rerr := Repair("db", &Options{FS: c}); rerr != nil {
						t.Fatalf("Repair after one that failed at operation %d (%v): %v", i, err, rerr)
					}
					db, err := Open("db", &Options{FS: c})
					if err != nil {
						t.Fatalf("Open after Repair: %v", err)
					}
					defer db.Close()
					wantData(t, db, want)
				})
			}
		}
	}
}

// checkFailedRepairReport checks the report of a Repair that failed with
// err: it holds the error, has a summary only if the new MANIFEST was
// written, and says of each damaged file whether it was moved to lost/.
func checkFailedRepairReport(t *testing.T, report *RepairReport, err error) {
	t.Helper()
	s := report.String()
	if report.Err != err || strings.Contains(s, "\nrecovered ") != (report.Manifest != "") {
		t.Fatalf("the report of a Repair that failed (%v): Err %v, MANIFEST %q:\n%s", err, report.Err, report.Manifest, s)
	}
	for _, f := range report.Files {
		if f.Damaged && f.LostTo == "" && !strings.Contains(s, f.Name+": ") {
			t.Fatalf("the report does not list %s:\n%s", f.Name, s)
		}
		if f.Damaged && f.LostTo == "" && !strings.Contains(s, "not moved to lost/ (the repair stopped first)") {
			t.Fatalf("the report says %s was moved, but it was not:\n%s", f.Name, s)
		}
	}
}

// TestOpenDuringRepairCrash: a store left by a power loss at any operation
// of a Repair, opened rather than repaired again, opens with every write,
// or fails with ErrCorruption without changing the directory. (With a table
// damaged beyond reading, what it held is lost whatever happens: there
// only the failure is checked.)
func TestOpenDuringRepairCrash(t *testing.T) {
	for _, damage := range []string{"manifest", "current", "table", "none"} {
		fs, want := damageStore(t)
		switch damage {
		case "manifest":
			m := newestOf(t, fs, "db", fileTypeManifest)
			b := readFile(t, fs, m)
			b[30] ^= 0x40
			writeFile(t, fs, m, b)
		case "current":
			fs.Remove("db/CURRENT")
		case "table":
			m := newestOf(t, fs, "db", fileTypeTable)
			b := readFile(t, fs, m)
			b[len(b)-3] ^= 0x40 // the footer: nothing in it can be read
			writeFile(t, fs, m, b)
			want = nil
		}
		efs := vfs.NewErrorFS(fs)
		var crashes []*vfs.MemFS
		efs.SetInjector(func(op vfs.Op, path string) error {
			if mutates(op) {
				crashes = append(crashes, fs.CrashClone())
			}
			return nil
		})
		if err := Repair("db", &Options{FS: efs}); err != nil {
			t.Fatal(err)
		}
		efs.SetInjector(nil)
		for i, c := range crashes {
			before := listDir(t, c, "db")
			db, err := Open("db", &Options{FS: c})
			if err != nil {
				if !errors.Is(err, ErrCorruption) {
					t.Errorf("%s, crash %d: Open: %v, want ErrCorruption", damage, i, err)
				}
				if after := listDir(t, c, "db"); after != before {
					t.Errorf("%s, crash %d: Open failed (%v) and changed the directory:\n%s\n%s", damage, i, err, before, after)
				}
				continue
			}
			if want != nil {
				wantData(t, db, want)
			}
			db.Close()
		}
		if len(crashes) < 15 {
			t.Fatalf("%s: only %d crash points in a Repair", damage, len(crashes))
		}
	}
}

// TestRepairAgainKeepsDeletions: a Repair that could not remove one of its
// inputs (a failed removal, or a crash between removals), run again before
// any Open, reads that input again: the deletions of the first Repair's
// output must still hide what it held. Repair used to drop deletions from
// its output, so a second Repair brought back the old values of deleted
// keys from a table the first left behind.
func TestRepairAgainKeepsDeletions(t *testing.T) {
	fs, want := damageStore(t)
	// The oldest table holds the first values of keys the newer table and
	// the WAL delete.
	oldest := filesOf(t, fs, "db", fileTypeTable)[0]
	efs := vfs.NewErrorFS(fs)
	efs.SetInjector(func(op vfs.Op, p string) error {
		if op == vfs.OpRemove && p == oldest {
			return vfs.ErrInjected
		}
		return nil
	})
	if err := Repair("db", &Options{FS: efs}); err != nil {
		t.Fatal(err)
	}
	efs.SetInjector(nil)
	if _, err := fs.Stat(oldest); err != nil {
		t.Fatalf("the removal of %s was to fail: %v", oldest, err)
	}
	if err := Repair("db", &Options{FS: fs}); err != nil {
		t.Fatal(err)
	}
	db := mustOpen(t, "db", &Options{FS: fs})
	defer db.Close()
	wantData(t, db, want)
}
