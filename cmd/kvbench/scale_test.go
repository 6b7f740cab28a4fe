package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("1e6, 10000000,1e8")
	if err != nil || len(got) != 3 || got[0] != 1_000_000 || got[1] != 10_000_000 || got[2] != 100_000_000 {
		t.Errorf("parseSizes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1.5", "1e6,x", "-3"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) accepted", bad)
		}
	}
}

// scalePointOf measures one scale point in this process, as a -scale child
// would, with -filter filter: small memtables so that the store has
// tables, and no block cache so that every block a lookup needs is a read
// syscall.
func scalePointOf(t *testing.T, n int, filter string) scalePoint {
	t.Helper()
	cfg := smallConfig()
	cfg.filter = filter
	cfg.n, cfg.reads, cfg.concurrency = n, 500, 1
	cfg.benchmarks, cfg.settle, cfg.json = scaleBenchmarks, true, true
	cfg.memTableSize = 64 << 10
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var p scalePoint
	if err := json.Unmarshal(out.Bytes(), &p.Report); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSettle checks what a scale point measures: the reads' operation count
// is -reads, the fill settles with a write amplification of at least 1 (the
// WAL alone writes every user byte) by both counts and writes at least a
// Put's 116 bytes per Put (mapped WAL bytes included), filters and indexes
// are pinned, and present-key lookups without a block cache cost read
// syscalls (about one: a data block, unless the key is still in the
// memtable).
func TestSettle(t *testing.T) {
	p := scalePointOf(t, 3000, "bloom")
	res := p.Report.Results
	if len(res) != 3 {
		t.Fatalf("%d results, want 3", len(res))
	}
	fill, get, miss := res[0], res[1], res[2]
	s := fill.Settle
	if s == nil || !s.Settled {
		t.Fatalf("fill did not settle: %+v", s)
	}
	if s.WriteAmpIO < 1 || s.WriteAmpEngine < 1 {
		t.Errorf("write amplification %.2f (wchar), %.2f (metrics), want >= 1", s.WriteAmpIO, s.WriteAmpEngine)
	}
	if s.FilterBytes == 0 || s.IndexBytes == 0 || s.OpenFiles == 0 {
		t.Errorf("pinned filters %d B, indexes %d B, %d open files", s.FilterBytes, s.IndexBytes, s.OpenFiles)
	}
	if fill.Ops != 3000 || get.Ops != 500 || miss.Ops != 500 {
		t.Errorf("ops %d, %d, %d; want 3000, 500, 500", fill.Ops, get.Ops, miss.Ops)
	}
	if get.Found != get.Ops || miss.Found != 0 {
		t.Errorf("found %d of %d present keys and %d absent ones", get.Found, get.Ops, miss.Found)
	}
	if fill.WriteSyscallsPerOp <= 0 || fill.WriteBytesPerOp < 116 || get.ReadSyscallsPerOp < 0.5 {
		t.Errorf("%.2f write syscalls and %.0f bytes per Put, %.2f read syscalls per present Get: want > 0, >= 116 and >= 0.5",
			fill.WriteSyscallsPerOp, fill.WriteBytesPerOp, get.ReadSyscallsPerOp)
	}
	if get.PeakRSS <= 0 || get.Settle != nil {
		t.Errorf("readrandom: peak RSS %d, settle %+v", get.PeakRSS, get.Settle)
	}
}

// TestScaleFrom checks that -scale-from merges earlier outputs in key
// order, prints a row per point with its filters, and draws the plot.
func TestScaleFrom(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, pt := range []struct {
		n      int
		filter string
	}{{4000, "monkey"}, {2000, "bloom"}} {
		data, err := json.Marshal(scaleReport{Points: []scalePoint{scalePointOf(t, pt.n, pt.filter)}})
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, strings.Repeat("x", len(files)+1)+".json")
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	cfg := config{scaleFrom: strings.Join(files, ","), plot: filepath.Join(dir, "scale.png")}
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if !regexp.MustCompile(`(?s)\n\| 2000 +\| bloom 10 bits/key +\| \d+ .*\n\| 4000 +\| monkey 10 bits/key +\| \d+ `).MatchString(out.String()) {
		t.Errorf("no rows for 2000 and then 4000 keys in\n%s", out.String())
	}
	checkPNG(t, cfg.plot, 1000, 800)
	cfg.scale = "1e3"
	if err := run(cfg, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "choose one") {
		t.Errorf("-scale with -scale-from: error %v", err)
	}
}

// TestScaleKeepsExistingDir checks that -scale refuses a size whose
// directory already exists under -dir, and leaves what is in it alone: the
// run removes the directories it makes, and only those.
func TestScaleKeepsExistingDir(t *testing.T) {
	root := t.TempDir()
	mine := filepath.Join(root, "1000", "notes.txt")
	if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := scaleChild(config{dir: root}, 1000, io.Discard); err == nil || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("scaleChild into an existing directory: %v, want an error that it exists", err)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "keep me" {
		t.Fatalf("the file already there: %q, %v", b, err)
	}
}
