package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestKeys checks that present and missing keys are 16 bytes and interleave.
func TestKeys(t *testing.T) {
	k, m, next := make([]byte, keySize), make([]byte, keySize), make([]byte, keySize)
	presentKey(k, 41)
	missingKey(m, 41)
	presentKey(next, 42)
	if string(k) != "0000000000000082" || string(m) != "0000000000000083" || string(next) != "0000000000000084" {
		t.Fatalf("keys %q %q %q", k, m, next)
	}
}

// TestWorkloads runs every workload on every engine on a small store, in
// this process: the reads check every answer, so a store that lost keys or
// invented them fails here.
func TestWorkloads(t *testing.T) {
	const n = 2000
	for name := range engines {
		if name == "pebble-filters" {
			continue // reads below, on Pebble's store
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			readers := []string{name}
			if name == "pebble" {
				readers = append(readers, "pebble-filters")
			}
			res, err := runChild(name, "fillrandom", dir, "", n, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Ops != n || res.WriteAmp < 1 || res.IO.WChar < n*(keySize+valueSize) || res.PeakRSS <= 0 {
				t.Fatalf("fillrandom: %+v", res)
			}
			if reports := name != "goleveldb"; reports != (len(res.LevelWrites) == 7) {
				t.Fatalf("fillrandom: bytes written per level %v, want 7 levels from shale and Pebble, none from goleveldb", res.LevelWrites)
			}
			for _, r := range readers {
				for _, w := range []string{"readrandom", "readmissing"} {
					res, err := runChild(r, w, dir, "", n, n)
					if err != nil {
						t.Fatalf("%s %s: %v", r, w, err)
					}
					if res.Ops != n || res.OpsPerSec <= 0 {
						t.Fatalf("%s %s: %+v", r, w, res)
					}
				}
			}
		})
	}
}

// TestMemtrace traces a small fill on shale and checks the trace: every
// line has the header's columns, the phases come in order, and the
// resident set and shale's own account are filled in.
func TestMemtrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.csv")
	if err := os.WriteFile(path, []byte(memtraceHeader+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runChild("shale", "fillrandom", t.TempDir(), path, 2000, 0); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(mustRead(t, path))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header := strings.Split(memtraceHeader, ",")
	if len(rows) < 3 || !slices.Equal(rows[0], header) {
		t.Fatalf("trace %q: want the header and a sample per phase at least", rows)
	}
	col := func(name string) int { return slices.Index(header, name) }
	var phases []string
	for _, row := range rows[1:] {
		if row[col("engine")] != "shale" || row[col("workload")] != "fillrandom" {
			t.Fatalf("sample %q: not shale's fillrandom", row)
		}
		if rss, err := strconv.ParseFloat(row[col("rss")], 64); err != nil || rss <= 0 {
			t.Fatalf("sample %q: rss %q", row, row[col("rss")])
		}
		if _, err := strconv.ParseFloat(row[col("offheap")], 64); err != nil {
			t.Fatalf("sample %q: shale's offheap %q: %v", row, row[col("offheap")], err)
		}
		if p := row[col("phase")]; len(phases) == 0 || phases[len(phases)-1] != p {
			phases = append(phases, p)
		}
	}
	if want := []string{"ops", "settle", "close"}; !slices.Equal(phases, want) {
		t.Fatalf("phases %q, want %q", phases, want)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
