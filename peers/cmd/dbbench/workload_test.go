package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/procstat"
	"github.com/shale-db/shale/ycsb"
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

// testSizes are small enough for CI; every key starts a scan, so the scans
// reach both ends of the store.
var testSizes = sizes{Keys: 500, Reads: 500, Scans: 500, YCSBRecords: 300, YCSBOps: 300}

// TestWorkloads runs every workload on every engine on a small store, in
// this process, and checks what each reports. The reads and scans check
// every answer, so a store that lost keys or invented them, or an adapter
// that scans the wrong way, fails here.
func TestWorkloads(t *testing.T) {
	defer func(q time.Duration) { quietFor = q }(quietFor)
	quietFor = 50 * time.Millisecond // the stores are tiny: settle fast
	for name := range engines {
		if name == "pebble-filters" {
			continue // reads below, on Pebble's store
		}
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			accounted := accountsWrites(t, root)
			chosen := workloads
			if strings.HasPrefix(name, "shale-") {
				chosen = []string{"fillrandom", "readrandom", "readmissing"}
			}
			records := map[string]int64{}
			for _, w := range chosen {
				dir := storeDir(root, name, w)
				res, err := runChild(name, w, dir, "", testSizes, records[dir])
				if err != nil {
					t.Fatalf("%s: %v", w, err)
				}
				records[dir] = res.Records
				checkResult(t, res, accounted)
				if w == "fillrandom" {
					if reports := name != "goleveldb" && name != "badger"; reports != (len(res.LevelWrites) == 7) {
						t.Fatalf("fillrandom: bytes written per level %v, want 7 levels from shale and Pebble, none from goleveldb and Badger", res.LevelWrites)
					}
				}
				if name == "pebble" && strings.HasPrefix(w, "read") {
					res, err := runChild("pebble-filters", w, dir, "", testSizes, 0)
					if err != nil {
						t.Fatalf("pebble-filters %s: %v", w, err)
					}
					checkResult(t, res, accounted)
				}
			}
			// D and E insert records, and the next workload finds them.
			if got, want := records[storeDir(root, name, "ycsb-e-1")], testSizes.YCSBRecords; !slices.Contains(chosen, "ycsb-e-1") == (got > want) {
				t.Errorf("the YCSB store holds %d records after E, want more than the %d loaded", got, want)
			}
		})
	}
}

// checkResult checks the figures of one workload's result.
func checkResult(t *testing.T, res result, accounted bool) {
	t.Helper()
	sz := testSizes
	want := map[string]int64{
		"fillrandom": int64(sz.Keys), "fillrandom-4": int64(sz.Keys),
		"readrandom": int64(sz.Reads), "readmissing": int64(sz.Reads),
		"scanforward": int64(sz.Scans), "scanbackward": int64(sz.Scans),
	}[res.Workload]
	if phase, _, ok := parseYCSB(res.Workload); ok {
		want = sz.YCSBOps
		if phase == "load" {
			want = sz.YCSBRecords
		}
	}
	if res.Ops != want || res.OpsPerSec <= 0 || res.CPUSeconds <= 0 || res.PeakRSS <= 0 || len(res.ByOp) == 0 {
		t.Fatalf("%s %s: %+v, want %d operations", res.Engine, res.Workload, res, want)
	}
	for _, o := range res.ByOp {
		if o.Count <= 0 || o.P50 <= 0 || o.P50 > o.P99 || o.P99 > o.P999 {
			t.Fatalf("%s %s: latencies of %s: %+v", res.Engine, res.Workload, o.Op, o)
		}
	}
	if !writes(res.Workload) {
		if res.UserBytes != 0 || res.WriteAmp != 0 {
			t.Fatalf("%s %s: a read workload put %d bytes (write amp %v)", res.Engine, res.Workload, res.UserBytes, res.WriteAmp)
		}
		return
	}
	if res.UserBytes <= 0 {
		t.Fatalf("%s %s: put no bytes", res.Engine, res.Workload)
	}
	// Every engine writes about each user byte to its WAL, through
	// write(2) or a mapping; but without fsync an engine may keep the
	// WAL's last block in memory (Pebble wrote 8 bytes for the 20 KB that
	// YCSB B updates here), so only workloads that put more than a few
	// blocks are checked. Badger's bytes are its dirtied pages, so its
	// count needs a file system that counts them.
	if (accounted || res.Engine != "badger") && res.UserBytes > 256<<10 && res.WriteAmp < 0.5 {
		t.Fatalf("%s %s: write amplification %.2f (%d bytes written for %d)", res.Engine, res.Workload, res.WriteAmp, res.WriteBytes, res.UserBytes)
	}
}

// accountsWrites reports whether the file system of dir counts the pages a
// process dirties in write_bytes (tmpfs does not), writing a file there to
// see.
func accountsWrites(t *testing.T, dir string) bool {
	before, err := procstat.ReadIO()
	if err != nil {
		t.Skip("no /proc/self/io:", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probe"), make([]byte, 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := procstat.ReadIO()
	if err != nil {
		t.Fatal(err)
	}
	if after.WriteBytes == before.WriteBytes {
		t.Logf("%s does not count write_bytes: write amplification not checked", dir)
		return false
	}
	return true
}

// TestSummary checks that the summary sets shale against the best peer at
// each measure, and leaves shale's variants out of the peers.
func TestSummary(t *testing.T) {
	op := func(p99 time.Duration) []ycsb.OpResult { return []ycsb.OpResult{{Op: "get", P99: p99}} }
	results := []result{
		{Engine: "shale", Ops: 1000, OpsPerSec: 100, CPUSeconds: 2, ByOp: op(30 * time.Microsecond)},
		{Engine: "shale-ribbon", Ops: 1000, OpsPerSec: 500, CPUSeconds: 0.1, ByOp: op(time.Microsecond)},
		{Engine: "pebble", Ops: 1000, OpsPerSec: 50, CPUSeconds: 1, ByOp: op(20 * time.Microsecond)},
		{Engine: "badger", Ops: 1000, OpsPerSec: 80, CPUSeconds: 3, ByOp: op(40 * time.Microsecond)},
	}
	var b strings.Builder
	printSummary(&b, []string{"readrandom"}, map[string][]result{"readrandom": results})
	want := "| readrandom | 1.25x (badger) | get 30.0 / 20.0 (pebble) | 2.000 / 1.000 (pebble) |"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("summary:\n%s\nwant the line\n%s", b.String(), want)
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
	if _, err := runChild("shale", "fillrandom", t.TempDir(), path, testSizes, 0); err != nil {
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
