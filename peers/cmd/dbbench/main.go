// Command dbbench runs shale, Pebble v2, goleveldb and Badger side by side
// through the same workloads, each workload on each engine in a fresh
// process, and prints one markdown table per workload, then a summary of
// shale against the best peer.
//
// The db_bench workloads use 16-byte keys and 100-byte random values; the
// YCSB ones (the ycsb package's generator, as kvbench's) records of 10
// fields of 100 bytes. Every engine gets 4 KiB blocks, 8 MiB of block
// cache, 4 MiB memtables, 2 MiB target files, 10-bit Bloom filters (Badger:
// a 1% false-positive rate) and no fsync (see engines.go for what differs).
// The workloads, in the order they run:
//
//   - fillrandom: one writer puts every key of the store once, in random
//     order, one Put per write; then the store settles (see settle). The
//     store it leaves is the one the reads and scans use.
//   - readrandom: one reader looks up -reads present keys in random order.
//   - readmissing: the same, for keys that sit between present keys.
//   - scanforward, scanbackward: -scans scans, each through a new
//     iterator: a seek to a random present key and 100 entries from it,
//     forward or backward.
//   - fillrandom-4: as fillrandom, with 4 writers, into a fresh store.
//   - ycsb-load-T, ycsb-a-T, ..., ycsb-e-T for T = 1 and 4 threads: the
//     YCSB load of -keys records into a fresh store, then the core
//     workloads A, B, C, F, D, E, -ycsb.ops operations each, in YCSB's
//     order on that store. Each workload that writes is followed by a
//     settle.
//
// Each workload reports ops/s; the latency of each operation type (p50,
// p99, p99.9); CPU seconds (user and system, every thread: getrusage) per
// 1,000 operations, over the operations and the settle that follows them;
// read and write syscalls per operation (syscr, syscw of /proc/self/io,
// the whole process, background work included); write amplification, the
// bytes written from the start of the workload to the end of its settle
// over the user bytes (keys and values) put, WAL included however it is
// written (see writtenBytes); the pages dirtied per user byte
// (write_bytes); and peak RSS (VmHWM at the end of the process).
//
// Usage:
//
//	go build -o /tmp/dbbench ./cmd/dbbench
//	/tmp/dbbench [-keys 1000000] [-reads 200000] [-scans 20000] [-ycsb.ops 50000] [-dir /tmp]
//	    [-engines shale,pebble,pebble-filters,goleveldb,badger] [-workloads fillrandom,readrandom,...]
//	    [-json results.json] [-memtrace mem.csv]
//
// -memtrace writes a CSV file of every workload's memory, sampled every
// 100 ms from the start of the workload to the end of its process (its
// columns: memtraceHeader): the resident set, the Go heap and, for shale,
// what its Metrics say it holds, to see when the peak comes and what
// makes it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

var (
	numKeys      = flag.Int("keys", 1_000_000, "keys in the store, and records YCSB loads (the issue's scales: 1000000 and 10000000)")
	numReads     = flag.Int("reads", 200_000, "lookups per read workload")
	numScans     = flag.Int("scans", 20_000, "scans per scan workload")
	ycsbOps      = flag.Int64("ycsb.ops", 50_000, "operations per YCSB workload (A to F)")
	baseDir      = flag.String("dir", os.TempDir(), "where each engine's fresh directories are made")
	engineList   = flag.String("engines", "shale,pebble,pebble-filters,goleveldb,badger", "engines to run, comma-separated; the first gives the ratios")
	workloadList = flag.String("workloads", strings.Join(workloads, ","), "workloads to run, comma-separated; they run in the default's order, and each needs the workload that fills its store")
	jsonPath     = flag.String("json", "", "also write every result to this `file` as JSON")
	memtracePath = flag.String("memtrace", "", "write a CSV `file` of each workload's memory, sampled every 100 ms (see memtraceHeader)")

	// The flags a child process runs with; the parent sets them.
	childEngine   = flag.String("child.engine", "", "run one workload on this engine and print its result as JSON (internal)")
	childWorkload = flag.String("child.workload", "", "the workload a child runs (internal)")
	childStore    = flag.String("child.store", "", "the store directory a child uses (internal)")
	childRecords  = flag.Int64("child.records", 0, "the records a YCSB workload finds in the store (internal)")
	childMemtrace = flag.String("child.memtrace", "", "the memory trace a child appends to (internal)")
)

func main() {
	flag.Parse()
	sz := sizes{Keys: *numKeys, Reads: *numReads, Scans: *numScans, YCSBRecords: int64(*numKeys), YCSBOps: *ycsbOps}
	if *childEngine != "" {
		res, err := runChild(*childEngine, *childWorkload, *childStore, *childMemtrace, sz, *childRecords)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s %s: %v\n", *childEngine, *childWorkload, err)
			os.Exit(1)
		}
		if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := runAll(sz); err != nil {
		fmt.Fprintln(os.Stderr, "dbbench:", err)
		os.Exit(1)
	}
}

// runAll runs every workload on every engine, each in a child process, and
// prints the tables.
func runAll(sz sizes) error {
	names := strings.Split(*engineList, ",")
	for _, name := range names {
		if engines[name] == nil {
			return fmt.Errorf("unknown engine %q", name)
		}
		if name == "pebble-filters" && !slices.Contains(names, "pebble") {
			return fmt.Errorf("pebble-filters reads the store pebble fills: list pebble too")
		}
	}
	chosen := strings.Split(*workloadList, ",")
	for _, w := range chosen {
		if !slices.Contains(workloads, w) {
			return fmt.Errorf("unknown workload %q", w)
		}
		if _, builder := storeGroup(w); !slices.Contains(chosen, builder) {
			return fmt.Errorf("%s needs the store %s fills: list %s too", w, builder, builder)
		}
	}
	var order []string // the chosen workloads, in the order they run
	for _, w := range workloads {
		if slices.Contains(chosen, w) {
			order = append(order, w)
		}
	}
	if *memtracePath != "" {
		if err := os.WriteFile(*memtracePath, []byte(memtraceHeader+"\n"), 0o644); err != nil {
			return err
		}
	}
	root, err := os.MkdirTemp(*baseDir, "dbbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	// An interrupted run stops its child and removes its stores.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	began := time.Now()
	fmt.Printf("dbbench: %s\n\n", machine())
	fmt.Printf("%d keys and YCSB records, %d lookups per read workload, %d scans per scan workload, %d operations per YCSB workload; engines %s\n\n",
		sz.Keys, sz.Reads, sz.Scans, sz.YCSBOps, strings.Join(names, ", "))
	records := map[string]int64{} // a YCSB store's records, by directory
	byWorkload := map[string][]result{}
	// A failed or interrupted run still reports the workloads it finished.
	var runErr error
	for i, w := range order {
		wBegan := time.Now()
		var results []result
		for _, name := range names {
			if name == "pebble-filters" && w != "readrandom" && w != "readmissing" {
				continue // its writes and scans are Pebble's
			}
			dir := storeDir(root, name, w)
			res, err := runInChild(ctx, self, name, w, dir, sz, records[dir])
			if err != nil {
				runErr = err
				break
			}
			records[dir] = res.Records
			results = append(results, res)
			fmt.Fprintf(os.Stderr, "%s %s: %.0f ops/s\n", name, w, res.OpsPerSec)
		}
		if runErr != nil {
			order = order[:i]
			break
		}
		byWorkload[w] = results
		printTable(os.Stdout, w, sz, results)
		fmt.Fprintf(os.Stderr, "%s: %v\n", w, time.Since(wBegan).Round(time.Second))
		// Remove the stores no later workload uses.
		group, _ := storeGroup(w)
		if !slices.ContainsFunc(order[i+1:], func(later string) bool { g, _ := storeGroup(later); return g == group }) {
			for _, name := range names {
				os.RemoveAll(storeDir(root, name, w))
			}
		}
	}
	printSummary(os.Stdout, order, byWorkload)
	status := "done"
	if runErr != nil {
		status = "stopped"
	}
	fmt.Printf("dbbench: %s in %v; load average at the end: %s\n", status, time.Since(began).Round(time.Second), loadAverage())
	if *jsonPath != "" {
		var all []result
		for _, w := range order {
			all = append(all, byWorkload[w]...)
		}
		b, err := json.MarshalIndent(all, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonPath, b, 0o644)
		}
		if runErr == nil {
			runErr = err
		}
	}
	return runErr
}

// storeDir is the store a workload uses: one per engine and store group,
// and pebble-filters reads Pebble's.
func storeDir(root, engine, workload string) string {
	if engine == "pebble-filters" {
		engine = "pebble"
	}
	group, _ := storeGroup(workload)
	return filepath.Join(root, engine+"-"+group)
}

// runInChild runs one workload in a fresh process and returns its result.
func runInChild(ctx context.Context, self, engine, workload, dir string, sz sizes, records int64) (result, error) {
	cmd := exec.CommandContext(ctx, self,
		"-child.engine", engine, "-child.workload", workload, "-child.store", dir,
		"-child.records", fmt.Sprint(records), "-child.memtrace", *memtracePath,
		"-keys", fmt.Sprint(sz.Keys), "-reads", fmt.Sprint(sz.Reads), "-scans", fmt.Sprint(sz.Scans),
		"-ycsb.ops", fmt.Sprint(sz.YCSBOps))
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%s %s: %w", engine, workload, err)
	}
	var res result
	if err := json.NewDecoder(bufio.NewReader(&out)).Decode(&res); err != nil {
		return result{}, fmt.Errorf("%s %s: reading its result: %w", engine, workload, err)
	}
	return res, nil
}

// machine describes the machine and the moment: the date, the CPU, the
// cores, the Go version, shale's commit (if the runner runs inside its git
// tree) and the load average.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
				cpu = strings.TrimSpace(value)
				break
			}
		}
	}
	commit := "unknown commit"
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		commit = "commit " + strings.TrimSpace(string(out))
		if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
			commit += " with uncommitted changes"
		}
	}
	return fmt.Sprintf("%s; %s, %d cores; %s; shale at %s; load average %s",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), cpu, runtime.NumCPU(), runtime.Version(), commit, loadAverage())
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
