package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/shale-db/shale/internal/permutation"
	"github.com/shale-db/shale/internal/procstat"
	"github.com/shale-db/shale/ycsb"
)

const (
	keySize   = 16
	valueSize = 100
	// writers is the number of writers of fillrandom-4.
	writers = 4
	// scanLength is the entries a scan visits.
	scanLength = 100
	// A store has settled when the process has written and dirtied less
	// than quietBytes in quietFor (below): its flushes and compactions are
	// done. (Pebble keeps writing a few bytes to its WAL now and then,
	// even when idle.) settleLimit bounds the wait.
	quietBytes  = 64 << 10
	settleLimit = 5 * time.Minute
)

// quietFor is how long a store must stay quiet to have settled (see
// quietBytes); a variable so that tests of tiny stores can shorten it.
var quietFor = time.Second

// ycsbThreads are the thread counts the YCSB workloads run with, each on a
// store of its own that its load fills.
var ycsbThreads = []int{1, 4}

// workloads in the order they run: the reads and scans use the store
// fillrandom leaves, and each YCSB workload the store its load left (with
// the inserts of the workloads before it).
var workloads = func() []string {
	w := []string{"fillrandom", "readrandom", "readmissing", "scanforward", "scanbackward", "fillrandom-4"}
	for _, t := range ycsbThreads {
		w = append(w, ycsbName("load", t))
		for _, y := range ycsb.Workloads {
			w = append(w, ycsbName(y.Name, t))
		}
	}
	return w
}()

// ycsbName names the YCSB phase ("load", "A", ...) run with threads.
func ycsbName(phase string, threads int) string {
	return fmt.Sprintf("ycsb-%s-%d", strings.ToLower(phase), threads)
}

// parseYCSB splits a YCSB workload's name into its phase ("load" or a
// core workload's name) and thread count; ok is false for other workloads.
func parseYCSB(workload string) (phase string, threads int, ok bool) {
	rest, ok := strings.CutPrefix(workload, "ycsb-")
	if !ok {
		return "", 0, false
	}
	phase, t, ok := strings.Cut(rest, "-")
	threads, err := strconv.Atoi(t)
	if !ok || err != nil {
		return "", 0, false
	}
	if phase != "load" {
		phase = strings.ToUpper(phase)
	}
	return phase, threads, true
}

// storeGroup names the store a workload uses, and builder the workload
// that fills it.
func storeGroup(workload string) (group, builder string) {
	if _, threads, ok := parseYCSB(workload); ok {
		return fmt.Sprintf("ycsb%d", threads), ycsbName("load", threads)
	}
	if workload == "fillrandom-4" {
		return "fill4", workload
	}
	return "fill", "fillrandom"
}

// writes reports whether a workload writes, and so is followed by a
// settle and has a write amplification.
func writes(workload string) bool {
	phase, _, ok := parseYCSB(workload)
	if !ok {
		return strings.HasPrefix(workload, "fill")
	}
	return phase != ycsb.C.Name
}

// sizes are a run's sizes, which every child gets.
type sizes struct {
	Keys, Reads, Scans int
	// YCSBRecords is the records a YCSB load inserts, YCSBOps the
	// operations of each YCSB workload.
	YCSBRecords, YCSBOps int64
}

// result is what one workload measured in one process.
type result struct {
	Engine, Workload string
	Ops              int64
	Seconds          float64 // the operations alone
	OpsPerSec        float64
	// ByOp is the latency of each operation type.
	ByOp []ycsb.OpResult
	// IO is /proc/self/io's change over the operations alone.
	IO procstat.IO
	// CPUSeconds is the process's CPU time (user and system, all threads)
	// over the operations and, for a workload that writes, the settle.
	CPUSeconds float64
	// From the start of the operations to the end of the settle:
	// UserBytes is the keys and values the workload put; WriteBytes the
	// bytes the engine wrote, WAL included however it writes it (see
	// writtenBytes); DirtiedBytes the bytes of the pages the process
	// dirtied for storage (write_bytes of /proc/self/io), which a page
	// rewritten while still dirty adds to only once. WriteAmp and
	// DirtiedAmp are their ratios to UserBytes.
	UserBytes, WriteBytes, DirtiedBytes int64
	WriteAmp, DirtiedAmp                float64
	SettleSeconds                       float64
	// LevelWrites: writing workloads, when the engine reports it. The
	// bytes of tables written into each level (L0 first) from the start of
	// the workload to the end of the settle, over the user bytes.
	LevelWrites []float64
	PeakRSS     int64 // VmHWM, bytes
	// Records is the records in a YCSB store afterwards.
	Records int64
}

// runChild opens engine's store in dir and runs one workload on it,
// appending samples of its memory to the trace at memtracePath if not "".
// records is the records a YCSB workload finds in the store.
func runChild(engine, workload, dir, memtracePath string, sz sizes, records int64) (res result, err error) {
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
	var levelsBefore []int64
	if s.levelWrites != nil {
		levelsBefore = s.levelWrites()
	}
	counted := &countingStore{store: s}
	mappedBefore := mapped(s)
	before, err := procstat.ReadIO()
	if err != nil {
		return res, err
	}
	cpuBefore, err := procstat.CPUTime()
	if err != nil {
		return res, err
	}
	start := time.Now()
	if phase, threads, ok := parseYCSB(workload); ok {
		var r *ycsb.Result
		if r, err = runYCSB(counted, phase, threads, sz, records); err == nil {
			res.Ops, res.ByOp, res.Records = r.Ops, r.ByOp, r.Records
		}
	} else {
		res.Ops, res.ByOp, err = runDB(counted, workload, sz)
	}
	if err != nil {
		return res, err
	}
	res.Seconds = time.Since(start).Seconds()
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	after, err := procstat.ReadIO()
	if err != nil {
		return res, err
	}
	res.IO = after.Sub(before)
	res.UserBytes = counted.userBytes.Load()
	if writes(workload) {
		if trace != nil {
			trace.setPhase("settle")
		}
		settleStart := time.Now()
		if after, err = settle(); err != nil {
			return res, err
		}
		res.SettleSeconds = time.Since(settleStart).Seconds()
		res.WriteBytes = writtenBytes(s, after.Sub(before), mapped(s)-mappedBefore)
		res.DirtiedBytes = after.WriteBytes - before.WriteBytes
		res.WriteAmp = float64(res.WriteBytes) / float64(res.UserBytes)
		res.DirtiedAmp = float64(res.DirtiedBytes) / float64(res.UserBytes)
		if s.levelWrites != nil {
			for l, b := range s.levelWrites() {
				res.LevelWrites = append(res.LevelWrites, float64(b-levelsBefore[l])/float64(res.UserBytes))
			}
		}
	}
	cpu, err := procstat.CPUTime()
	res.CPUSeconds = (cpu - cpuBefore).Seconds()
	return res, err
}

// mapped returns the bytes s has written through mappings so far, as it
// counts them.
func mapped(s *store) int64 {
	if s.mappedWrites == nil {
		return 0
	}
	return s.mappedWrites()
}

// writtenBytes is the bytes an engine wrote, given the process's I/O
// counters and the bytes the engine wrote through mappings over the same
// time: the bytes of its write(2) calls (wchar) and those it stored through
// mappings, as it counts them; or, for an engine that does not count them
// and writes each page once (pagesWritten), the pages it dirtied. The
// dirtied pages are no measure for the others: a page rewritten while
// still dirty counts once (a WAL page filled by many small writes, or a
// recycled WAL file, as Pebble's, rewritten before its pages went back to
// disk), and again each time it is dirtied after a writeback.
func writtenBytes(s *store, io procstat.IO, mapped int64) int64 {
	if s.pagesWritten {
		return io.WriteBytes
	}
	return io.WChar + mapped
}

// countingStore is a store seen as a ycsb.Store, counting the bytes put.
type countingStore struct {
	*store
	userBytes atomic.Int64
}

func (s *countingStore) Put(key, value []byte) error {
	s.userBytes.Add(int64(len(key) + len(value)))
	return s.put(key, value)
}

func (s *countingStore) Get(key []byte) ([]byte, bool, error) { return s.get(key) }

func (s *countingStore) Scan(start []byte, n int, visit func(key, value []byte) error) error {
	return s.scan(start, n, false, visit)
}

// runYCSB runs a YCSB phase: the load of sz.YCSBRecords records, or
// sz.YCSBOps operations of a core workload on a store of records records.
func runYCSB(s *countingStore, phase string, threads int, sz sizes, records int64) (*ycsb.Result, error) {
	cfg := ycsb.Config{Records: records, Operations: sz.YCSBOps, Threads: threads, Seed: 1}
	var r *ycsb.Result
	var err error
	if phase == "load" {
		cfg.Records = sz.YCSBRecords
		r, err = ycsb.Load(s, cfg)
	} else {
		i := slices.IndexFunc(ycsb.Workloads, func(w ycsb.Workload) bool { return w.Name == phase })
		if i < 0 {
			return nil, fmt.Errorf("no YCSB workload %q", phase)
		}
		r, err = ycsb.Run(s, ycsb.Workloads[i], cfg)
	}
	if err != nil {
		return nil, err
	}
	for _, o := range r.ByOp {
		if o.NotFound > 0 {
			return nil, fmt.Errorf("%d of %d %s operations found no record", o.NotFound, o.Count, o.Op)
		}
	}
	return r, nil
}

// runDB runs a db_bench workload and returns its operations and their
// latencies.
func runDB(s *countingStore, workload string, sz sizes) (int64, []ycsb.OpResult, error) {
	var (
		op    string
		ops   int
		hists []*hdrhistogram.Histogram
		err   error
	)
	switch workload {
	case "fillrandom":
		op, ops = "put", sz.Keys
		hists, err = fill(s, sz.Keys, 1)
	case "fillrandom-4":
		op, ops = "put", sz.Keys
		hists, err = fill(s, sz.Keys, writers)
	case "readrandom", "readmissing":
		op, ops = "get", sz.Reads
		hists, err = read(s.store, sz.Keys, sz.Reads, workload == "readmissing")
	case "scanforward", "scanbackward":
		op, ops = "scan", sz.Scans
		hists, err = scan(s.store, sz.Keys, sz.Scans, workload == "scanbackward")
	default:
		err = fmt.Errorf("unknown workload %q", workload)
	}
	if err != nil {
		return 0, nil, err
	}
	return int64(ops), []ycsb.OpResult{opResult(op, hists)}, nil
}

// newHistogram returns a histogram of latencies in nanoseconds up to a
// minute, with three significant digits (as the ycsb package keeps).
func newHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(time.Minute), 3) }

// record adds the latency of an operation that began at start.
func record(h *hdrhistogram.Histogram, start time.Time) {
	h.RecordCorrectedValue(min(int64(time.Since(start)), h.HighestTrackableValue()), 0)
}

// opResult merges the goroutines' histograms of an operation type.
func opResult(op string, hists []*hdrhistogram.Histogram) ycsb.OpResult {
	h := newHistogram()
	for _, x := range hists {
		h.Merge(x)
	}
	return ycsb.OpResult{
		Op:    op,
		Count: h.TotalCount(),
		Mean:  time.Duration(h.Mean()),
		P50:   time.Duration(h.ValueAtQuantile(50)),
		P95:   time.Duration(h.ValueAtQuantile(95)),
		P99:   time.Duration(h.ValueAtQuantile(99)),
		P999:  time.Duration(h.ValueAtQuantile(99.9)),
		Max:   time.Duration(h.Max()),
	}
}

// fill puts keys 0..n-1 once each in a random order, split among w writers,
// and returns each writer's latencies.
func fill(s *countingStore, n, w int) ([]*hdrhistogram.Histogram, error) {
	var wg sync.WaitGroup
	errs := make([]error, w)
	hists := make([]*hdrhistogram.Histogram, w)
	order := permutation.New(n, 1)
	for t := range w {
		hists[t] = newHistogram()
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
				start := time.Now()
				if err := s.Put(k, v); err != nil {
					errs[t] = err
					return
				}
				record(hists[t], start)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return hists, nil
}

// read looks up reads keys of a store of n keys, in a random order: present
// keys, or keys between them when missing, and checks each answer.
func read(s *store, n, reads int, missing bool) ([]*hdrhistogram.Histogram, error) {
	lookup, done := s.newReader, func() error { return nil }
	get := func(key []byte) (bool, error) {
		_, found, err := s.get(key)
		return found, err
	}
	if lookup != nil {
		get, done = lookup()
	}
	h := newHistogram()
	order := permutation.New(n, 2)
	k := make([]byte, keySize)
	for j := range reads {
		i := order.At(j % n)
		if missing {
			missingKey(k, i)
		} else {
			presentKey(k, i)
		}
		start := time.Now()
		found, err := get(k)
		if err != nil {
			done()
			return nil, err
		}
		record(h, start)
		if found == missing {
			done()
			return nil, fmt.Errorf("key %q: found %v, want %v", k, found, !missing)
		}
	}
	return []*hdrhistogram.Histogram{h}, done()
}

// scan makes scans scans of up to scanLength entries through a new iterator
// each, in a store of n keys: forward from a present key, or backward from
// the key just after one (so that the first key is that present key), the
// keys taken in a random order. It checks every key visited.
func scan(s *store, n, scans int, reverse bool) ([]*hdrhistogram.Histogram, error) {
	h := newHistogram()
	order := permutation.New(n, 3)
	start, want := make([]byte, keySize), make([]byte, keySize)
	for j := range scans {
		i := int64(order.At(j % n))
		step := int64(1)
		if reverse {
			missingKey(start, uint64(i))
			step = -1
		} else {
			presentKey(start, uint64(i))
		}
		next := i // the key the next entry must have
		began := time.Now()
		err := s.scan(start, scanLength, reverse, func(key, value []byte) error {
			presentKey(want, uint64(next))
			if !bytes.Equal(key, want) || len(value) != valueSize {
				return fmt.Errorf("scan from %q: got key %q (value of %d bytes), want %q", start, key, len(value), want)
			}
			next += step
			return nil
		})
		if err != nil {
			return nil, err
		}
		record(h, began)
		// A scan stops early only at an end of the store.
		if got, want := (next-i)*step, int64(min(scanLength, wantEntries(n, i, reverse))); got != want {
			return nil, fmt.Errorf("scan from %q visited %d entries, want %d", start, got, want)
		}
	}
	return []*hdrhistogram.Histogram{h}, nil
}

// wantEntries is the number of entries from key i to the end of a store of
// n keys, in the scan's direction.
func wantEntries(n int, i int64, reverse bool) int {
	if reverse {
		return int(i) + 1
	}
	return n - int(i)
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

// settle waits until the process writes and dirties less than quietBytes
// in quietFor, and returns the I/O counters then.
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
		if cur.WChar-last.WChar >= quietBytes || cur.WriteBytes-last.WriteBytes >= quietBytes {
			last, quietSince = cur, time.Now()
		} else if time.Since(quietSince) >= quietFor {
			return cur, nil
		}
	}
	return last, fmt.Errorf("still writing after %v", settleLimit)
}
