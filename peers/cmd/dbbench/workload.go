package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/shale-db/shale/internal/permutation"
	"github.com/shale-db/shale/internal/procstat"
)

const (
	keySize   = 16
	valueSize = 100
	// writers is the number of writers of fillrandom-4.
	writers = 4
	// A store has settled when the process has written less than quietBytes
	// in quietFor: its flushes and compactions are done. (Pebble keeps
	// writing a few bytes to its WAL now and then, even when idle.)
	// settleLimit bounds the wait.
	quietFor    = time.Second
	quietBytes  = 64 << 10
	settleLimit = 5 * time.Minute
)

// result is what one workload measured in one process.
type result struct {
	Engine, Workload string
	Ops              int
	Seconds          float64 // the operations alone
	OpsPerSec        float64
	// IO is /proc/self/io's change over the operations alone.
	IO procstat.IO
	// SettleSeconds and WriteAmp: fills only. WriteAmp is wchar from the
	// start of the fill to the end of the settle over the user bytes.
	SettleSeconds float64
	WriteAmp      float64
	// LevelWrites: fills only, when the engine reports it. The bytes of
	// tables written into each level (L0 first) from the start of the fill
	// to the end of the settle, over the user bytes.
	LevelWrites []float64
	PeakRSS     int64 // VmHWM, bytes
}

// runChild opens engine's store in dir and runs one workload on it,
// appending samples of its memory to the trace at memtracePath if not "".
func runChild(engine, workload, dir, memtracePath string, n, reads int) (res result, err error) {
	s, err := engines[engine](dir)
	if err != nil {
		return res, err
	}
	var trace *memtrace
	if memtracePath != "" {
		if trace, err = startMemtrace(memtracePath, engine, workload, s.memory); err != nil {
			s.close()
			return res, err
		}
	}
	defer func() {
		if trace != nil {
			trace.setPhase("close")
		}
		if cerr := s.close(); err == nil {
			err = cerr
		}
		if trace != nil {
			if terr := trace.stop(); err == nil {
				err = terr
			}
		}
		if err == nil {
			res.PeakRSS, err = procstat.PeakRSS()
		}
	}()
	res = result{Engine: engine, Workload: workload}
	mapped := func() int64 {
		if s.mappedWrites == nil {
			return 0
		}
		return s.mappedWrites()
	}
	mappedBefore := mapped()
	before, err := procstat.ReadIO()
	if err != nil {
		return res, err
	}
	start := time.Now()
	switch workload {
	case "fillrandom":
		err = fill(s, n, 1)
	case "fillrandom-4":
		err = fill(s, n, writers)
	case "readrandom":
		err = read(s, n, reads, false)
	case "readmissing":
		err = read(s, n, reads, true)
	default:
		err = fmt.Errorf("unknown workload %q", workload)
	}
	if err != nil {
		return res, err
	}
	res.Seconds = time.Since(start).Seconds()
	after, err := procstat.ReadIO()
	if err != nil {
		return res, err
	}
	res.IO = after.Sub(before)
	// Bytes stored through a mapping are written as surely as by write(2)
	// (the kernel has them), but wchar does not see them: count them in.
	mappedBytes := mapped() - mappedBefore
	res.IO.WChar += mappedBytes
	if strings.HasPrefix(workload, "fill") {
		res.Ops = n
		if trace != nil {
			trace.setPhase("settle")
		}
		settleStart := time.Now()
		settled, err := settle()
		if err != nil {
			return res, err
		}
		res.SettleSeconds = time.Since(settleStart).Seconds()
		res.WriteAmp = float64(settled.WChar-before.WChar+mappedBytes) / float64(n*(keySize+valueSize))
		if s.levelWrites != nil {
			for _, b := range s.levelWrites() {
				res.LevelWrites = append(res.LevelWrites, float64(b)/float64(n*(keySize+valueSize)))
			}
		}
	} else {
		res.Ops = reads
	}
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	return res, nil
}

// fill puts keys 0..n-1 once each in a random order, split among w writers.
func fill(s *store, n, w int) error {
	var wg sync.WaitGroup
	errs := make([]error, w)
	order := permutation.New(n, 1)
	for t := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(t), 7))
			k := make([]byte, keySize)
			v := make([]byte, valueSize)
			for j := t * n / w; j < (t+1)*n/w; j++ {
				presentKey(k, order.At(j))
				for i := range v {
					v[i] = byte(rng.Uint32())
				}
				if err := s.put(k, v); err != nil {
					errs[t] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// read looks up reads keys of a store of n keys, in a random order: present
// keys, or keys between them when missing, and checks each answer.
func read(s *store, n, reads int, missing bool) error {
	get, done := s.newReader()
	order := permutation.New(n, 2)
	k := make([]byte, keySize)
	for j := range reads {
		i := order.At(j % n)
		if missing {
			missingKey(k, i)
		} else {
			presentKey(k, i)
		}
		found, err := get(k)
		if err != nil {
			done()
			return err
		}
		if found == missing {
			done()
			return fmt.Errorf("key %q: found %v, want %v", k, found, !missing)
		}
	}
	return done()
}

// presentKey writes the i-th key of the store into k: 2i in 16 digits.
func presentKey(k []byte, i uint64) { decimalKey(k, 2*i) }

// missingKey writes the key just after the i-th key of the store: 2i+1.
func missingKey(k []byte, i uint64) { decimalKey(k, 2*i+1) }

func decimalKey(k []byte, x uint64) {
	for i := len(k) - 1; i >= 0; i-- {
		k[i] = byte('0' + x%10)
		x /= 10
	}
}

// settle waits until the process writes less than quietBytes in quietFor,
// and returns the I/O counters then.
func settle() (procstat.IO, error) {
	last, err := procstat.ReadIO()
	if err != nil {
		return last, err
	}
	quietSince := time.Now()
	for deadline := time.Now().Add(settleLimit); time.Now().Before(deadline); {
		time.Sleep(quietFor / 5)
		cur, err := procstat.ReadIO()
		if err != nil {
			return cur, err
		}
		if cur.WChar-last.WChar >= quietBytes {
			last, quietSince = cur, time.Now()
		} else if time.Since(quietSince) >= quietFor {
			return cur, nil
		}
	}
	return last, fmt.Errorf("still writing after %v", settleLimit)
}

// printTable writes one workload's results as a markdown table. The first
// result is the reference of the ratios (shale, when it runs first).
func printTable(w io.Writer, workload string, results []result) {
	if len(results) == 0 {
		return
	}
	ref := results[0]
	fmt.Fprintf(w, "%s, %d keys:\n\n", workload, *numKeys)
	fmt.Fprintf(w, "| engine | ops/s | %s/engine | read syscalls/op | read B/op | write syscalls/op | write B/op | write amp | settle s | peak RSS MiB | RSS %s/engine |\n", ref.Engine, ref.Engine)
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		ops := float64(r.Ops)
		amp, settle := "", ""
		if strings.HasPrefix(workload, "fill") {
			amp, settle = fmt.Sprintf("%.2f", r.WriteAmp), fmt.Sprintf("%.1f", r.SettleSeconds)
		}
		fmt.Fprintf(w, "| %s | %.0f | %.2fx | %.3f | %.0f | %.3f | %.0f | %s | %s | %.0f | %.2fx |\n",
			r.Engine, r.OpsPerSec, ref.OpsPerSec/r.OpsPerSec,
			float64(r.IO.SyscR)/ops, float64(r.IO.RChar)/ops,
			float64(r.IO.SyscW)/ops, float64(r.IO.WChar)/ops,
			amp, settle, float64(r.PeakRSS)/(1<<20), float64(ref.PeakRSS)/float64(r.PeakRSS))
	}
	fmt.Fprintln(w)
	levels := false
	for _, r := range results {
		if len(r.LevelWrites) == 0 {
			continue
		}
		levels = true
		fmt.Fprintf(w, "%s, table bytes written into each level per user byte:", r.Engine)
		for level, x := range r.LevelWrites {
			if x > 0 {
				fmt.Fprintf(w, " L%d %.2f", level, x)
			}
		}
		fmt.Fprintln(w)
	}
	if levels {
		fmt.Fprintln(w)
	}
}
