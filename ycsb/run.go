package ycsb

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Store is the key-value store a workload runs against. Its methods are
// called from Config.Threads goroutines at once.
type Store interface {
	// Get returns key's value; found is false if the key is absent. The
	// value is the caller's until the next call on the same goroutine.
	Get(key []byte) (value []byte, found bool, err error)
	// Put sets key to value. The store must not keep key or value.
	Put(key, value []byte) error
	// Scan visits up to n records in key order from the first key >= start,
	// stopping early if visit returns an error. key and value are valid
	// only during visit.
	Scan(start []byte, n int, visit func(key, value []byte) error) error
}

// Config sizes a load or a run.
type Config struct {
	// Records is the number of records loaded (Load) or already in the
	// store (Run).
	Records int64
	// Operations is the number of operations a Run does.
	Operations int64
	// Threads is the number of goroutines the operations are split among.
	// 0: 1.
	Threads int
	// FieldCount and FieldLength shape a record. 0: 10 fields of 100 bytes.
	FieldCount, FieldLength int
	// Seed seeds every random choice.
	Seed uint64
	// Progress, if not nil, is called from the workers with the number of
	// operations done since its last call (in steps of about 1000).
	Progress func(ops int)
}

func (c Config) withDefaults() Config {
	if c.Threads == 0 {
		c.Threads = 1
	}
	if c.FieldCount == 0 {
		c.FieldCount = 10
	}
	if c.FieldLength == 0 {
		c.FieldLength = 100
	}
	return c
}

// Result is one load or run: its throughput and, per operation type, its
// latencies.
type Result struct {
	Workload  string        `json:"workload"` // "load" or the workload's name
	Ops       int64         `json:"ops"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	OpsPerSec float64       `json:"ops_per_sec"`
	// Records is the number of records in the store afterwards: a Run
	// that inserts adds to it.
	Records int64 `json:"records"`
	// ByOp has one entry per operation type the workload did, in Op order.
	ByOp []OpResult `json:"by_op"`
}

// OpResult is the latency distribution of one operation type, from an HDR
// histogram of nanoseconds with three significant digits.
type OpResult struct {
	Op    string `json:"op"`
	Count int64  `json:"count"`
	// NotFound counts reads (and read-modify-writes) of a record that was
	// not there. YCSB chooses only records that exist, so it should be 0.
	NotFound int64         `json:"not_found"`
	Mean     time.Duration `json:"mean_ns"`
	P50      time.Duration `json:"p50_ns"`
	P95      time.Duration `json:"p95_ns"`
	P99      time.Duration `json:"p99_ns"`
	P999     time.Duration `json:"p999_ns"`
	Max      time.Duration `json:"max_ns"`
}

// maxLatency is the largest latency the histograms hold; longer operations
// are counted at this value.
const maxLatency = int64(time.Minute)

// Load inserts records 0 to cfg.Records-1, split among cfg.Threads.
func Load(s Store, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	counter := NewCounter(0)
	r, err := execute(s, cfg, cfg.Records, func(t *thread) error {
		return t.insert(counter.Next())
	})
	if err != nil {
		return nil, fmt.Errorf("ycsb: load: %w", err)
	}
	r.Workload = "load"
	r.Records = cfg.Records
	return r, nil
}

// Run runs cfg.Operations operations of w on a store that holds records 0
// to cfg.Records-1, split among cfg.Threads.
func Run(s Store, w Workload, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := w.validate(); err != nil {
		return nil, err
	}
	if cfg.Records < 1 {
		return nil, errors.New("ycsb: run: the store holds no records; load it first")
	}
	// As in YCSB, inserts take the next record numbers, and the zipfian
	// chooser covers the records expected by the end of the run (twice the
	// expected inserts, to be safe), redrawing numbers not yet written.
	inserts := NewCounter(cfg.Records)
	expectedNew := int64(float64(cfg.Operations) * w.Insert * 2)
	r, err := execute(s, cfg, cfg.Operations, func(t *thread) error {
		if t.zipf == nil && t.latest == nil {
			if w.Request == LatestRequests {
				t.latest = NewLatest(inserts)
			} else {
				t.zipf = NewScrambledZipfian(0, cfg.Records+expectedNew)
			}
		}
		return t.operation(&w, inserts)
	})
	if err != nil {
		return nil, fmt.Errorf("ycsb: workload %s: %w", w.Name, err)
	}
	r.Workload = w.Name
	r.Records = inserts.Last() + 1
	return r, nil
}

// execute runs n operations, op, split among cfg.Threads goroutines, each
// with its own random stream and histograms, and merges their histograms.
func execute(s Store, cfg Config, n int64, op func(*thread) error) (*Result, error) {
	threads := make([]*thread, cfg.Threads)
	for i := range threads {
		threads[i] = &thread{
			store: s,
			cfg:   cfg,
			rng:   rand.New(rand.NewPCG(cfg.Seed, uint64(i))),
		}
	}
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		failed   = make(chan struct{})
	)
	start := time.Now()
	for i, t := range threads {
		lo, hi := int64(i)*n/int64(len(threads)), int64(i+1)*n/int64(len(threads))
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := 0
			for j := lo; j < hi; j++ {
				if err := op(t); err != nil {
					errOnce.Do(func() { firstErr = err; close(failed) })
					return
				}
				if done++; done == 1000 {
					if cfg.Progress != nil {
						cfg.Progress(done)
					}
					done = 0
					select {
					case <-failed:
						return
					default:
					}
				}
			}
			if cfg.Progress != nil && done > 0 {
				cfg.Progress(done)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return nil, firstErr
	}
	r := &Result{Ops: n, Elapsed: elapsed, OpsPerSec: float64(n) / elapsed.Seconds()}
	for op := range numOps {
		h := hdrhistogram.New(1, maxLatency, 3)
		var notFound int64
		for _, t := range threads {
			if t.hist[op] != nil {
				h.Merge(t.hist[op])
			}
			notFound += t.notFound[op]
		}
		if h.TotalCount() == 0 {
			continue
		}
		r.ByOp = append(r.ByOp, OpResult{
			Op:       op.String(),
			Count:    h.TotalCount(),
			NotFound: notFound,
			Mean:     time.Duration(h.Mean()),
			P50:      time.Duration(h.ValueAtQuantile(50)),
			P95:      time.Duration(h.ValueAtQuantile(95)),
			P99:      time.Duration(h.ValueAtQuantile(99)),
			P999:     time.Duration(h.ValueAtQuantile(99.9)),
			Max:      time.Duration(h.Max()),
		})
	}
	return r, nil
}

// thread is one goroutine's generators and measurements.
type thread struct {
	store    Store
	cfg      Config
	rng      *rand.Rand
	zipf     *ScrambledZipfian
	latest   *Latest
	hist     [numOps]*hdrhistogram.Histogram
	notFound [numOps]int64
}

// record adds one operation's latency to its histogram.
func (t *thread) record(op Op, start time.Time) {
	if t.hist[op] == nil {
		t.hist[op] = hdrhistogram.New(1, maxLatency, 3)
	}
	t.hist[op].RecordCorrectedValue(min(int64(time.Since(start)), maxLatency), 0)
}

// operation does one operation of w, chosen by its proportions.
func (t *thread) operation(w *Workload, inserts *Counter) error {
	op := w.choose(t.rng.Float64())
	if op == OpInsert {
		n := inserts.Next()
		if err := t.insert(n); err != nil {
			return err
		}
		inserts.Acknowledge(n)
		return nil
	}
	key := Key(t.chooseRecord(w, inserts))
	start := time.Now()
	var err error
	switch op {
	case OpRead:
		err = t.read(op, key)
	case OpUpdate:
		err = t.update(op, key)
	case OpScan:
		err = t.scan(key, 1+t.rng.IntN(w.MaxScanLength))
	case OpReadModifyWrite:
		if err = t.read(op, key); err == nil {
			err = t.update(op, key)
		}
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
	t.record(op, start)
	return nil
}

// chooseRecord picks the record number a read, update or scan starts at:
// one that has been written.
func (t *thread) chooseRecord(w *Workload, inserts *Counter) int64 {
	if w.Request == LatestRequests {
		return t.latest.Next(t.rng)
	}
	for {
		if n := t.zipf.Next(t.rng); n <= inserts.Last() {
			return n
		}
	}
}

// insert writes record n with random fields.
func (t *thread) insert(n int64) error {
	r := make(record, t.cfg.FieldCount)
	for i := range r {
		r[i] = randomField(t.rng, t.cfg.FieldLength)
	}
	key := Key(n)
	start := time.Now()
	if err := t.store.Put(key, r.encode()); err != nil {
		return fmt.Errorf("insert %s: %w", key, err)
	}
	t.record(OpInsert, start)
	return nil
}

// read reads a whole record and splits it into fields. A missing record is
// counted against op.
func (t *thread) read(op Op, key []byte) error {
	v, found, err := t.store.Get(key)
	if err != nil || !found {
		if !found {
			t.notFound[op]++
		}
		return err
	}
	_, err = decodeRecord(v)
	return err
}

// update writes one random field of a record: a read, a merge, a write.
func (t *thread) update(op Op, key []byte) error {
	v, found, err := t.store.Get(key)
	if err != nil {
		return err
	}
	if !found {
		t.notFound[op]++
		return nil
	}
	r, err := decodeRecord(v)
	if err != nil {
		return err
	}
	if len(r) == 0 {
		return errors.New("record has no fields")
	}
	r[t.rng.IntN(len(r))] = randomField(t.rng, t.cfg.FieldLength)
	return t.store.Put(key, r.encode())
}

// scan reads n records from key, splitting each into fields.
func (t *thread) scan(key []byte, n int) error {
	return t.store.Scan(key, n, func(_, value []byte) error {
		_, err := decodeRecord(value)
		return err
	})
}
