// Command kvbench runs db_bench-style workloads, or the YCSB core
// workloads, against a fresh shale store.
//
//	kvbench [-benchmarks fillrandom,readrandom,...] [-n 1000000] [-reads N] [-settle] [-compare-filters] [-json] [-plot FILE.png]
//	kvbench -scale 1e6,1e7,1e8 [-dir DIR] [-json] [-plot docs/scale.png]
//	kvbench -scale-from a.json,b.json [-json] [-plot docs/scale.png]
//	kvbench -workload ycsb-a|...|ycsb-f|ycsb-all [-records 100000] [-ops 100000] [-threads 1] [-row-cache BYTES] [-json] [-plot FILE.png]
//
// Workloads, run in the order given:
//
//	fillseq      write n keys in ascending order
//	fillrandom   write n keys in random order (every key once)
//	overwrite    write n keys chosen at random from the n keys
//	readrandom   look up n keys chosen at random from the n keys (present after a fill)
//	readmissing  look up n absent keys, each just after a present one, so inside the tables' key ranges
//	readseq      read n entries with iterators
//	seekrandom   seek to n random keys and read the entry there
//
// and, only when named, the bulk loads, which write fillseq's keys:
//
//	fillbatch    write n keys in ascending order, 1000 to a batch
//	fillingest   write n keys in ascending order into tables of 100,000
//	             keys (shale.NewTableWriter, in the store's directory
//	             with ".tables" appended), ingesting each when it is
//	             written (DB.Ingest) and then removing it
//
// and, also only when named, the short scans of YCSB's workload E, each with a
// new iterator: a seek to a random key, then -scan-length entries (100)
// read one step at a time, forward (SeekGE, Next) or reverse (SeekLT,
// Prev), from keys chosen uniformly or as YCSB's scrambled zipfian does.
// They report, besides the columns every workload has (per scan), the
// entries read per second and the percentiles of one scan's latency:
//
//	scan         n forward scans from uniform random keys
//	scanzipf     n forward scans from zipfian random keys
//	scanrev      n reverse scans from uniform random keys
//	scanrevzipf  n reverse scans from zipfian random keys
//
// Key i is the decimal number i, zero-padded to -key-size bytes; values are
// -value-size random bytes, or with -compression-ratio below 1 bytes that
// snappy compresses to that fraction of their size. A store holds -n keys; each workload runs -n
// operations, or -reads for the read workloads when set. -concurrency splits
// each workload's operations among that many goroutines.
//
// -compression chooses Options.Compression: snappy (the default), none or
// zstd at every level, or ABOVE/BOTTOM, such as snappy/zstd, for the levels
// above the bottom one and for the bottom level (L6).
//
// Each workload reports its throughput, ns per operation, the CPU time the
// process spent per operation (user and system, every goroutine: the
// flushes and compactions the workload caused while it ran, and with
// -settle until the store settles), the store's disk
// reads and filter checks per operation, the process's read and write
// syscalls and bytes per operation (syscr, rchar, syscw and wchar of
// /proc/self/io, so page-cache hits count; the write bytes add the WAL
// bytes stored through a mapping, which wchar does not see) and its peak
// RSS so far (VmHWM); reading them needs Linux's /proc.
// -settle waits after each write workload until no flush is left, nor a
// compaction where the store compacts by itself (not with
// -compare-filters), and the process has stopped writing (a store that
// fails ends the wait with its error), then reports the workload's
// write amplification twice: the process's wchar over the user bytes (as
// the peers runner, peers/cmd/dbbench, counts it) and the store's
// Metrics.WriteAmp over the workload; the filter and index bytes pinned
// in memory, the open file descriptors, and the bytes of the store's
// tables. -settle also waits after a YCSB load.
//
// -scale measures how the store scales: for each key count it runs
// fillrandom, readrandom (present keys) and readmissing (absent keys inside
// the key range) with -settle and at most 1M lookups per read workload, in
// a fresh process and a fresh directory under -dir, removed once measured
// (100M keys take about 12 GB). It prints a table, or with -json the
// children's reports with the commit measured and the load average around
// each run; -plot draws fill throughput, write amplification, Get time and
// read syscalls per Get against the key count. -scale-from prints and plots
// the points of earlier -scale -json outputs together, so that sizes can be
// run separately. The stores are made in a temporary directory
// that is removed afterwards, or in -dir (which must be empty or absent):
// store, or filters and nofilter with -compare-filters, and plot (removed
// once measured).
//
// -compare-filters builds the same data twice, into a store with Bloom
// filters (-bloom-bits) and one without, and runs the read workloads on both
// on the same tree layout, printed side by side. See compareFilters.
//
// -plot FILE.png measures and draws (a) the filters' false-positive rate
// against the formula for 2 to 20 bits per key and (b) the disk reads of an
// absent-key lookup with and without filters for 1 to 16 L0 tables. Use
// -benchmarks= to draw the plot only.
//
// -workload runs YCSB (package ycsb) instead of -benchmarks: it loads
// -records records (10 fields of 100 bytes each), then runs -ops operations
// of the named core workload, or of A, B, C, F, D and E in that order for
// ycsb-all, split among -threads goroutines (the same setting as
// -concurrency). It prints each phase's throughput and, per operation type,
// latency percentiles from HDR histograms, the disk reads per operation and
// the row cache's hit rate; -row-cache BYTES turns the row cache on. -plot
// then draws the throughput and the p99 latencies.
//
// -cpuprofile and -memprofile write profiles of the run for go tool pprof;
// -blockprofile and -mutexprofile record where goroutines waited (every
// wait of a microsecond or more, every contended lock), and -trace writes
// an execution trace for go tool trace (go tool trace -pprof=sched FILE
// lists where goroutines waited to run, a garbage collection included).
//
// Progress bars go to stderr when it is a terminal; the results go to
// stdout, as a table or, with -json, as JSON.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"golang.org/x/term"
)

func main() {
	var cfg config
	var benchmarks string
	flag.StringVar(&benchmarks, "benchmarks", strings.Join(allBenchmarks, ","), "comma-separated workloads to run, in order")
	flag.IntVar(&cfg.n, "n", 1_000_000, "operations per workload, and the number of keys")
	flag.IntVar(&cfg.keySize, "key-size", 16, "key size in bytes")
	flag.IntVar(&cfg.valueSize, "value-size", 100, "value size in bytes")
	flag.Float64Var(&cfg.compressionRatio, "compression-ratio", 1, "the fraction of its size that snappy compresses a value to (db_bench's -compression_ratio); 1: random, incompressible values")
	flag.StringVar(&cfg.compression, "compression", "snappy", "how tables are compressed: snappy, none or zstd at every level, or ABOVE/BOTTOM (e.g. snappy/zstd) for L0-L5 and for L6")
	flag.IntVar(&cfg.bloomBits, "bloom-bits", 10, "Bloom filter bits per key (-1: no filters)")
	flag.StringVar(&cfg.filter, "filter", "bloom", "how tables spend -bloom-bits: bloom (a Bloom filter of that size in every table), monkey (MonkeyBloom: Bloom filters sized per sorted run, that size on average) or ribbon (a Ribbon filter of that size in every table)")
	flag.IntVar(&cfg.cacheSize, "cache-size", 8<<20, "block cache size in bytes (negative: no cache)")
	flag.BoolVar(&cfg.mmapReads, "mmap", true, "read tables through memory mappings (false: Options.DisableMmapReads, pread only)")
	flag.BoolVar(&cfg.sync, "sync", false, "fsync every write")
	flag.IntVar(&cfg.concurrency, "concurrency", 1, "goroutines per workload")
	flag.IntVar(&cfg.concurrency, "threads", 1, "the same as -concurrency")
	flag.StringVar(&cfg.workload, "workload", "", "run YCSB instead of -benchmarks: ycsb-a to ycsb-f, or ycsb-all")
	flag.IntVar(&cfg.records, "records", 100_000, "YCSB: records loaded before the workloads")
	flag.IntVar(&cfg.ops, "ops", 100_000, "YCSB: operations per workload")
	flag.IntVar(&cfg.rowCache, "row-cache", 0, "row cache size in bytes (0: off)")
	flag.IntVar(&cfg.memTableSize, "memtable", 0, "memtable size in bytes (0: the store's default, 4 MiB)")
	flag.BoolVar(&cfg.noReadCompactions, "no-read-compactions", false, "turn read compactions off (Options.DisableReadCompactions)")
	flag.StringVar(&cfg.dir, "dir", "", "directory for the stores, empty or absent (default: a temporary directory, removed afterwards)")
	flag.BoolVar(&cfg.compareFilters, "compare-filters", false, "run the read workloads with and without filters on the same data and layout")
	flag.BoolVar(&cfg.compareMmap, "compare-mmap", false, "after the write workloads, run readrandom on the store opened twice, read-only, reading tables through mappings and with pread, in turns of 10,000 Gets")
	flag.BoolVar(&cfg.json, "json", false, "print the results as JSON")
	flag.StringVar(&cfg.plot, "plot", "", "draw false-positive rates and disk reads per absent lookup (YCSB: throughput and p99 latencies) into this PNG file")
	flag.Int64Var(&cfg.seed, "seed", 1, "random seed")
	flag.IntVar(&cfg.reads, "reads", 0, "operations per read workload (0: -n)")
	flag.IntVar(&cfg.scanLength, "scan-length", 100, "entries each scan of the scan workloads reads")
	flag.BoolVar(&cfg.settle, "settle", false, "after each write workload (and a YCSB load), wait for its flushes and compactions and report its write amplification")
	flag.StringVar(&cfg.scale, "scale", "", "comma-separated key counts (1e6,1e7,1e8): measure fill and reads at each, in fresh processes")
	flag.StringVar(&cfg.scaleFrom, "scale-from", "", "comma-separated JSON outputs of -scale runs: print and plot their points instead of measuring")
	flag.BoolVar(&cfg.metrics, "metrics", false, "print the store's metrics (write amplification, bytes written per level) after the run")
	var cpuProfile, memProfile, blockProfile, mutexProfile, traceFile string
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	flag.StringVar(&memProfile, "memprofile", "", "write a heap profile to this file after the run: what was allocated (go tool pprof -sample_index=alloc_space) and what was still in use")
	flag.StringVar(&blockProfile, "blockprofile", "", "write a profile of where goroutines blocked (waits of 1 µs or more) to this file after the run")
	flag.StringVar(&mutexProfile, "mutexprofile", "", "write a profile of contended locks to this file after the run")
	flag.StringVar(&traceFile, "trace", "", "write an execution trace of the run to this file (go tool trace)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "kvbench: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if benchmarks != "" {
		cfg.benchmarks = strings.Split(benchmarks, ",")
	}
	cfg.progress = term.IsTerminal(int(os.Stderr.Fd()))
	run := func() error { return run(cfg, os.Stdout, os.Stderr) }
	if err := profiled(profiles{cpu: cpuProfile, mem: memProfile, block: blockProfile, mutex: mutexProfile, trace: traceFile}, run); err != nil {
		fmt.Fprintf(os.Stderr, "kvbench: %v\n", err)
		os.Exit(1)
	}
}

// profiles names the files the run's profiles go to; an empty name writes
// none.
type profiles struct {
	cpu, mem, block, mutex, trace string
}

// profiled runs f with the profiles p names: a CPU profile and an execution
// trace of it, and after it the heap, blocking and lock contention
// profiles.
func profiled(p profiles, f func() error) error {
	if p.cpu != "" {
		out, err := os.Create(p.cpu)
		if err != nil {
			return err
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if p.trace != "" {
		out, err := os.Create(p.trace)
		if err != nil {
			return err
		}
		defer out.Close()
		if err := trace.Start(out); err != nil {
			return err
		}
		defer trace.Stop()
	}
	if p.block != "" {
		runtime.SetBlockProfileRate(int(time.Microsecond))
	}
	if p.mutex != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if err := f(); err != nil {
		return err
	}
	if p.mem != "" {
		runtime.GC() // the in-use figures are those of the last GC: make it now
	}
	for _, w := range []struct{ file, profile string }{{p.mem, "heap"}, {p.block, "block"}, {p.mutex, "mutex"}} {
		if w.file == "" {
			continue
		}
		if err := writeProfile(w.file, w.profile); err != nil {
			return err
		}
	}
	return nil
}

// writeProfile writes the runtime profile of that name to file.
func writeProfile(file, name string) error {
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(out, 0); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
