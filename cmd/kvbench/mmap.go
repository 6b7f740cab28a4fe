package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/internal/procstat"
)

// compareMmapChunk is how many Gets compareMmap runs on one handle before
// it switches to the other.
const compareMmapChunk = 10_000

// compareMmap measures what reading tables through mappings buys: the write
// workloads fill a store, which is then opened twice, read-only, in this
// one process, once reading tables through mappings and once with pread
// only (Options.DisableMmapReads), and readrandom runs on the two handles
// in turn, compareMmapChunk Gets at a time, the same keys on each. So the
// two see the same data, the same tree and the same load on the machine,
// and their ratios hold on a busy one. The process's CPU time and read
// syscalls are taken around each chunk; its RSS is the two handles'
// together.
func compareMmap(cfg config, dir string, progress io.Writer, rep *report) error {
	store := filepath.Join(dir, "store")
	b, err := openBench(cfg, store, cfg.bloomBits, true)
	if err != nil {
		return err
	}
	for _, name := range cfg.benchmarks {
		if !isWrite(name) {
			continue
		}
		r, err := b.run(name, cfg.opsOf(name), progress)
		if err != nil {
			b.close()
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	rep.Tree = append(rep.Tree, b.db.Metrics().Shape())
	if err := b.db.Close(); err != nil {
		return err
	}
	modes := []struct {
		name  string
		pread bool
	}{{"mmap", false}, {"pread", true}}
	type tally struct {
		ops, found int
		wall, cpu  time.Duration
		io         procstat.IO
	}
	workers := make([]*worker, len(modes))
	tallies := make([]tally, len(modes))
	for i, m := range modes {
		o := cfg.options(cfg.bloomBits, false)
		o.ReadOnly, o.DisableMmapReads = true, m.pread
		wb := &bench{cfg: cfg}
		if wb.db, err = shale.Open(store, o); err != nil {
			return err
		}
		defer wb.db.Close()
		workers[i] = &worker{b: wb, rng: newRand(cfg.seed, 2)}
	}
	n := cfg.opsOf("readrandom")
	for done := 0; done < n; done += compareMmapChunk {
		chunk := min(compareMmapChunk, n-done)
		for j := range modes {
			i := (j + done/compareMmapChunk) % len(modes) // each goes first in turn
			w, t := workers[i], &tallies[i]
			io0, err := procstat.ReadIO()
			if err != nil {
				return err
			}
			cpu0, err := procstat.CPUTime()
			if err != nil {
				return err
			}
			start := time.Now()
			for range chunk {
				ok, err := hit(w.b.db.Get(w.key(w.rng.IntN(cfg.n))))
				if err != nil {
					return fmt.Errorf("readrandom (%s): %w", modes[i].name, err)
				}
				if ok {
					t.found++
				}
			}
			t.wall += time.Since(start)
			cpu1, err := procstat.CPUTime()
			if err != nil {
				return err
			}
			io1, err := procstat.ReadIO()
			if err != nil {
				return err
			}
			t.cpu += cpu1 - cpu0
			d := io1.Sub(io0)
			t.io.SyscR += d.SyscR
			t.io.RChar += d.RChar
			t.ops += chunk
		}
	}
	rss, err := procstat.Status("VmHWM", "RssFile")
	if err != nil {
		return err
	}
	for i, m := range modes {
		t := tallies[i]
		ops := float64(t.ops)
		// Each handle's metrics count its own reads alone.
		mt := workers[i].b.db.Metrics()
		rep.Results = append(rep.Results, result{
			DiskReadsPerOp: float64(mt.DiskReads) / ops, FilterSkipsPerOp: float64(mt.FilterSkips) / ops,
			FalsePositivesPerOp: float64(mt.FilterFalsePositives) / ops,
			Benchmark:           "readrandom", Store: m.name, Ops: t.ops, Found: t.found,
			Seconds: t.wall.Seconds(), OpsPerSec: ops / t.wall.Seconds(), NanosPerOp: float64(t.wall.Nanoseconds()) / ops,
			CPUNanosPerOp:     float64(t.cpu.Nanoseconds()) / ops,
			ReadSyscallsPerOp: float64(t.io.SyscR) / ops, ReadBytesPerOp: float64(t.io.RChar) / ops,
			PeakRSS: rss[0], FileRSS: rss[1],
		})
	}
	return nil
}
