// Command dbbench runs shale, Pebble v2 and goleveldb side by side through
// the same db_bench-style workloads, each workload in a fresh process, and
// prints one markdown table per workload with the ratios shale/peer.
//
// Every engine gets 16-byte keys, 100-byte values, 4 KiB blocks, 8 MiB of
// block cache, 4 MiB memtables, 2 MiB target files, 10-bit Bloom filters and
// no fsync. The workloads, in the order they run:
//
//   - fillrandom: one writer puts every key of the store once, in random
//     order, one Put per write; then the store settles (see settle). The
//     store it leaves is the one the reads use.
//   - readrandom: one reader looks up -reads present keys in random order.
//   - readmissing: the same, for keys that sit between present keys.
//   - fillrandom-4: as fillrandom, with 4 writers, into a fresh directory.
//
// I/O comes from /proc/self/io, so it counts the whole process: syscr and
// syscw are read and write syscalls, rchar and wchar the bytes they moved
// (page cache hits included). An engine that writes through a shared
// memory mapping (shale's WAL) moves bytes wchar does not see; the runner
// adds them, as the engine counts them, to its write bytes. Write
// amplification is those bytes over the user bytes written (keys plus
// values), counted from the start of the fill to the end of the settle,
// the same way for every engine. Peak RSS is VmHWM
// from /proc/self/status at the end of the workload's process.
//
// Usage:
//
//	go run ./cmd/dbbench [-keys 1000000] [-reads 1000000] [-dir /tmp] [-engines shale,pebble,pebble-filters,goleveldb]
//	    [-workloads fillrandom,readrandom,readmissing,fillrandom-4] [-memtrace mem.csv]
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
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

var (
	numKeys      = flag.Int("keys", 1_000_000, "keys in the store (the issue's scales: 1000000 and 10000000)")
	numReads     = flag.Int("reads", 1_000_000, "lookups per read workload")
	baseDir      = flag.String("dir", os.TempDir(), "where each engine's fresh directories are made")
	engineList   = flag.String("engines", "shale,pebble,pebble-filters,goleveldb", "engines to run, comma-separated; shale first gives the ratios")
	workloadList = flag.String("workloads", strings.Join(workloads, ","), "workloads to run, comma-separated; they run in the default's order, and the reads need fillrandom's store")
	memtracePath = flag.String("memtrace", "", "write a CSV `file` of each workload's memory, sampled every 100 ms (see memtraceHeader)")

	// The flags a child process runs with; the parent sets them.
	childEngine   = flag.String("child.engine", "", "run one workload on this engine and print its result as JSON (internal)")
	childWorkload = flag.String("child.workload", "", "the workload a child runs (internal)")
	childStore    = flag.String("child.store", "", "the store directory a child uses (internal)")
	childMemtrace = flag.String("child.memtrace", "", "the memory trace a child appends to (internal)")
)

// workloads in the order they run: the reads use the store fillrandom leaves.
var workloads = []string{"fillrandom", "readrandom", "readmissing", "fillrandom-4"}

func main() {
	flag.Parse()
	if *childEngine != "" {
		res, err := runChild(*childEngine, *childWorkload, *childStore, *childMemtrace, *numKeys, *numReads)
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
	if err := runAll(); err != nil {
		fmt.Fprintln(os.Stderr, "dbbench:", err)
		os.Exit(1)
	}
}

// runAll runs every workload on every engine, each in a child process, and
// prints the tables.
func runAll() error {
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
	}
	if slices.ContainsFunc(chosen, func(w string) bool { return strings.HasPrefix(w, "read") }) && !slices.Contains(chosen, "fillrandom") {
		return fmt.Errorf("the reads read the store fillrandom fills: list fillrandom too")
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
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("dbbench: %d keys, %d reads per read workload, stores under %s\n\n", *numKeys, *numReads, root)
	for _, w := range workloads {
		if !slices.Contains(chosen, w) {
			continue
		}
		var results []result
		for _, name := range names {
			if name == "pebble-filters" && strings.HasPrefix(w, "fill") {
				continue // its writes are Pebble's
			}
			res, err := runInChild(self, name, w, storeDir(root, name, w))
			if err != nil {
				return err
			}
			results = append(results, res)
			fmt.Fprintf(os.Stderr, "%s %s: %.0f ops/s\n", name, w, res.OpsPerSec)
		}
		printTable(os.Stdout, w, results)
		if w == "fillrandom-4" {
			for _, name := range names {
				os.RemoveAll(storeDir(root, name, w))
			}
		}
	}
	return nil
}

// storeDir is the store a workload uses: fillrandom-4 gets one of its own,
// the reads use the one fillrandom left, and pebble-filters reads Pebble's.
func storeDir(root, engine, workload string) string {
	if engine == "pebble-filters" {
		engine = "pebble"
	}
	if workload == "fillrandom-4" {
		return filepath.Join(root, engine+"-fill4")
	}
	return filepath.Join(root, engine)
}

// runInChild runs one workload in a fresh process and returns its result.
func runInChild(self, engine, workload, dir string) (result, error) {
	cmd := exec.Command(self,
		"-child.engine", engine, "-child.workload", workload, "-child.store", dir,
		"-keys", fmt.Sprint(*numKeys), "-reads", fmt.Sprint(*numReads), "-child.memtrace", *memtracePath)
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
