package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/vfs"
)

// TestShell runs the sessions in testdata. Each file runs in a fresh
// temporary directory, which is the working directory, so store paths are
// short and the same from run to run. Directives:
//
//	session [dir=D] [readonly] [mem]
//	                   start a session on store D (default "store"), ending
//	                   the one before, opened read-only if asked, on a new
//	                   in-memory file system with mem (kvsh -mem); prints
//	                   the error if D cannot be opened
//	kvsh               run the input's lines in the session, printing each
//	                   line after "> " and then its output
//	prompt             print the interactive prompt
//	run [dir=D] [readonly] [mem]
//	                   run kvsh's session on D (opened as session's options
//	                   say) with the input as stdin, not on a terminal;
//	                   prints its output and its error
//	main               run kvsh as from a shell: the input's first line is
//	                   the command line (kvsh ARGS...), the rest stdin;
//	                   prints stdout and stderr, and the exit status
//	lock dir=D         open the store in D outside kvsh and hold it open
//	write-file path=P  create P (and its directory) with the input
//	ls dir=D           list the files in D
//	flip path=P offset=N   flip a bit of the byte at offset N of P, or of
//	                   the one file P matches as a pattern (N < 0: from the end)
//	tool cmd=C [dir=D] run kvsh C D (C is check or repair), printing its
//	                   output and its error
func TestShell(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		path, err := filepath.Abs(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Chdir(t.TempDir())
		var out bytes.Buffer
		var sh *shell
		endSession := func() {
			if sh != nil {
				if err := sh.close(); err != nil {
					fmt.Fprintf(&out, "close: %v\n", err)
				}
				sh = nil
			}
		}
		defer endSession()

		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out.Reset()
			dir := "store"
			if d.HasArg("dir") {
				d.ScanArgs(t, "dir", &dir)
			}
			switch d.Cmd {
			case "session":
				endSession()
				s, err := newShellWith(&out, dir, false, sessionOptions(d))
				if err != nil {
					return fmt.Sprintf("error: %v\n", err)
				}
				sh = s
				sh.now = fakeClock()
				sh.rng = rand.New(rand.NewPCG(1, 2))
			case "kvsh":
				if sh == nil {
					d.Fatalf(t, "no session")
				}
				for _, line := range strings.Split(d.Input, "\n") {
					fmt.Fprintf(&out, "> %s\n", line)
					if sh.exec(line) {
						endSession()
						out.WriteString("(session ended)\n")
						break
					}
				}
			case "prompt":
				return sh.prompt() + "\n"
			case "run":
				if err := run(strings.NewReader(d.Input), &out, &out, dir, session{opts: sessionOptions(d)}); err != nil {
					fmt.Fprintf(&out, "run: %v\n", err)
				}
			case "main":
				// The input's first line is kvsh's command line; the rest is
				// its stdin. stdout and stderr both go to the output.
				cmdLine, stdin, _ := strings.Cut(d.Input, "\n")
				words, err := splitLine(cmdLine)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				var args []string
				for _, w := range words[1:] { // words[0] is kvsh
					args = append(args, w.text)
				}
				code := kvsh(args, strings.NewReader(stdin), &out, &out, false)
				fmt.Fprintf(&out, "exit status %d\n", code)
			case "lock":
				db, err := shale.Open(dir, nil)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				t.Cleanup(func() { db.Close() })
			case "write-file":
				var p string
				d.ScanArgs(t, "path", &p)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					d.Fatalf(t, "%v", err)
				}
				if err := os.WriteFile(p, []byte(d.Input), 0o644); err != nil {
					d.Fatalf(t, "%v", err)
				}
			case "flip":
				var p string
				var off int
				d.ScanArgs(t, "path", &p)
				d.ScanArgs(t, "offset", &off)
				if m, _ := filepath.Glob(p); len(m) == 1 {
					p = m[0]
				}
				b, err := os.ReadFile(p)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				if off < 0 {
					off += len(b)
				}
				b[off] ^= 0x40
				if err := os.WriteFile(p, b, 0o644); err != nil {
					d.Fatalf(t, "%v", err)
				}
			case "tool":
				var name string
				d.ScanArgs(t, "cmd", &name)
				if err := tool(&out, name, dir); err != nil {
					fmt.Fprintf(&out, "error: %v\n", err)
				}
			case "ls":
				entries, err := os.ReadDir(dir)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				for _, e := range entries {
					fmt.Fprintln(&out, e.Name())
				}
			default:
				d.Fatalf(t, "unknown directive %s", d.Cmd)
			}
			// The slabs kept depend on whether a flush's background free
			// of its memtable came before the next write took a slab (see
			// maskVarying).
			return spareSlabs.ReplaceAllString(out.String(), "${1}[varies]${2}")
		})
	})
}

// fakeClock returns a clock that starts at the epoch and moves one second
// every time it is read, so that load's timings are the same in every run.
func fakeClock() func() time.Time {
	now := time.Unix(0, 0)
	return func() time.Time {
		now = now.Add(time.Second)
		return now
	}
}

// TestStats checks that stats prints the store's metrics table, which the
// root package renders and tests, and the filter and prefix settings for
// new tables.
func TestStats(t *testing.T) {
	var out bytes.Buffer
	sh, err := newShell(&out, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.close()
	for _, line := range []string{"put a 1", "flush", "bloom 7", "prefix 4"} {
		sh.exec(line)
	}
	out.Reset()
	sh.exec("stats")
	want := sh.db.Metrics().String() + "new tables get Bloom filters at 7 bits/key; prefix filters of fixed:4\n"
	if got := out.String(); got != want {
		t.Errorf("stats printed\n%s\nwant\n%s", got, want)
	}
}

// sessionOptions are the options of a session or run directive: read-only
// with the argument readonly, on a new in-memory file system with mem.
func sessionOptions(d *datadriven.TestData) shale.Options {
	opts := shale.Options{ReadOnly: d.HasArg("readonly")}
	if d.HasArg("mem") {
		opts.FS = vfs.NewMem()
	}
	return opts
}
