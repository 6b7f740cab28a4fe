package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateLessons = flag.Bool("update", false, "rewrite the outputs recorded in docs/lessons/*.md from what kvsh prints now")

// lessonsDir holds the lessons, relative to this package.
const lessonsDir = "../../docs/lessons"

// TestLessons runs every lesson in docs/lessons and fails when kvsh's
// output differs from what the page records. A page names its store in the
// command it tells the reader to start with, "go run ./cmd/kvsh DIR"; the
// test runs a fresh store of that name in a temporary directory, or, for
// "go run ./cmd/kvsh -mem DIR", on a new in-memory file system. Its
// ```kvsh blocks hold commands, each on a line starting with "> ", and the
// output of each below it; the test runs the commands of all blocks in
// order in one session. What varies from run to run is masked (see
// maskVarying). With -update it rewrites the pages' outputs instead.
func TestLessons(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(lessonsDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatalf("no lessons in %s", lessonsDir)
	}
	for _, page := range pages {
		if filepath.Base(page) == "README.md" {
			continue // the index
		}
		page, err := filepath.Abs(page)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(strings.TrimSuffix(filepath.Base(page), ".md"), func(t *testing.T) {
			old, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			t.Chdir(t.TempDir())
			got := runLesson(t, string(old))
			if got == string(old) {
				return
			}
			if *updateLessons {
				if err := os.WriteFile(page, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			t.Errorf("%s: kvsh's output differs from the page (go test ./cmd/kvsh -run TestLessons -update rewrites it):\n%s",
				filepath.Base(page), firstDifference(string(old), got))
		})
	}
}

var startCommand = regexp.MustCompile("go run \\./cmd/kvsh (-mem )?([^\\s`]+)")

// runLesson runs the commands of the page's kvsh blocks and returns the page
// with each command's output as kvsh printed it now.
func runLesson(t *testing.T, page string) string {
	m := startCommand.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the page does not say how to start kvsh (go run ./cmd/kvsh [-mem] DIR)")
	}
	var out bytes.Buffer
	open := newShell
	if m[1] != "" {
		open = newMemShell
	}
	sh, err := open(&out, m[2], false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sh.close(); err != nil {
			t.Error(err)
		}
	}()
	var b strings.Builder
	inBlock, commands := false, 0
	for _, line := range strings.SplitAfter(page, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		switch {
		case !inBlock:
			b.WriteString(line)
			inBlock = trimmed == "```kvsh"
		case trimmed == "```":
			b.WriteString(line)
			inBlock = false
		case strings.HasPrefix(trimmed, "> "):
			b.WriteString(line)
			out.Reset()
			if sh.exec(strings.TrimPrefix(trimmed, "> ")) {
				t.Fatalf("%s ended the session", trimmed)
			}
			b.WriteString(maskVarying(out.String()))
			commands++
		}
		// Any other line in a block is recorded output: the command above it
		// has just printed it anew.
	}
	if inBlock {
		t.Fatal("a ```kvsh block is not closed")
	}
	if commands == 0 {
		t.Fatal("the page has no kvsh commands")
	}
	return b.String()
}

var (
	timings    = regexp.MustCompile(`( in |stalls: )\d[\d.]*(?:ns|µs|ms|s|m|h)(?:[\d.]+(?:ns|µs|ms|s|m|h))*\b(: \d+ keys/s)?`)
	spareSlabs = regexp.MustCompile(`(besides, )[\d.]+ (?:B|KiB|MiB|GiB)( of freed memtable slabs)`)
)

// maskVarying masks what kvsh prints that differs from run to run: the
// durations (load's time and rate, stats' stall time), as [time], and
// stats' figure of freed memtable slabs kept, as [varies]: a
// memtable's slabs are kept when a background flush frees it, so how many
// a load leaves kept depends on whether each flush finished before the
// next memtable took a slab.
func maskVarying(s string) string {
	s = timings.ReplaceAllString(s, "${1}[time]")
	return spareSlabs.ReplaceAllString(s, "${1}[varies]${2}")
}

// firstDifference shows the first line where got differs from want.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  page: %s\n  kvsh: %s", i+1, wl, gl)
		}
	}
	return "(no difference)"
}

func TestMaskVarying(t *testing.T) {
	for in, want := range map[string]string{
		"loaded 2000 random keys (16-byte keys, 100-byte values) in 15ms: 136877 keys/s\n": "loaded 2000 random keys (16-byte keys, 100-byte values) in [time]\n",
		"loaded 5 random keys (1-byte keys, 1-byte values) in 0s\n":                        "loaded 5 random keys (1-byte keys, 1-byte values) in [time]\n",
		"loaded 9 random keys in 1m2.5s: 0 keys/s":                                         "loaded 9 random keys in [time]",
		"stalls: 1.5µs (0 slowdowns)":                                                      "stalls: [time] (0 slowdowns)",
		"=> found in 000012.sst: v06":                                                      "=> found in 000012.sst: v06",
		"added 2 items (2 in the filter)":                                                  "added 2 items (2 in the filter)",
		"row cache 0 B; besides, 440.1 KiB of freed memtable slabs kept for the next":      "row cache 0 B; besides, [varies] of freed memtable slabs kept for the next",
		"besides, 0 B of freed memtable slabs kept":                                        "besides, [varies] of freed memtable slabs kept",
	} {
		if got := maskVarying(in); got != want {
			t.Errorf("maskVarying(%q) = %q, want %q", in, got, want)
		}
	}
}
