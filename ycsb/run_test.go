package ycsb

import (
	"bytes"
	"slices"
	"sync"
	"testing"

	"github.com/shale-db/shale"
)

// mapStore is a Store in a sorted slice, for testing the runner.
type mapStore struct {
	mu   sync.Mutex
	keys [][]byte
	vals map[string][]byte
	puts int
}

func newMapStore() *mapStore { return &mapStore{vals: map[string][]byte{}} }

func (m *mapStore) Get(key []byte) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vals[string(key)]
	return v, ok, nil
}

func (m *mapStore) Put(key, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if _, ok := m.vals[string(key)]; !ok {
		i, _ := slices.BinarySearchFunc(m.keys, key, bytes.Compare)
		m.keys = slices.Insert(m.keys, i, bytes.Clone(key))
	}
	m.vals[string(key)] = bytes.Clone(value)
	return nil
}

func (m *mapStore) Scan(start []byte, n int, visit func(key, value []byte) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, _ := slices.BinarySearchFunc(m.keys, start, bytes.Compare)
	for ; i < len(m.keys) && n > 0; i, n = i+1, n-1 {
		if err := visit(m.keys[i], m.vals[string(m.keys[i])]); err != nil {
			return err
		}
	}
	return nil
}

// TestRun loads a store and runs every core workload on it, checking that
// each does its operations in its proportions, finds every record it
// chooses, and leaves records of the configured shape.
func TestRun(t *testing.T) {
	const records, ops = 2000, 10_000
	s := newMapStore()
	progress := 0
	var mu sync.Mutex
	cfg := Config{Records: records, Operations: ops, Threads: 3, Seed: 1, Progress: func(n int) {
		mu.Lock()
		progress += n
		mu.Unlock()
	}}
	r, err := Load(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.vals) != records || r.Ops != records || progress != records || len(r.ByOp) != 1 || r.ByOp[0].Count != records {
		t.Fatalf("load: %d records in the store, result %+v, progress %d", len(s.vals), r, progress)
	}
	for _, w := range Workloads {
		cfg.Records = r.Records
		puts := s.puts
		r, err = Run(s, w, cfg)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int64{}
		for _, o := range r.ByOp {
			counts[o.Op] = o.Count
			if o.NotFound != 0 {
				t.Errorf("%s: %d %s found no record", w.Name, o.NotFound, o.Op)
			}
			if !(o.P50 <= o.P95 && o.P95 <= o.P99 && o.P99 <= o.P999 && o.P999 <= o.Max && o.P50 > 0) {
				t.Errorf("%s %s: percentiles out of order: %+v", w.Name, o.Op, o)
			}
		}
		want := map[string]float64{"read": w.Read, "update": w.Update, "insert": w.Insert, "scan": w.Scan, "read-modify-write": w.ReadModifyWrite}
		for op, p := range want {
			if got := float64(counts[op]) / ops; got < p-0.02 || got > p+0.02 {
				t.Errorf("%s: %.3f of the operations were %s, want %.2f", w.Name, got, op, p)
			}
		}
		if r.Records != cfg.Records+counts["insert"] || int64(len(s.vals)) != r.Records {
			t.Errorf("%s: %d inserts took %d records to %d (%d in the store)", w.Name, counts["insert"], cfg.Records, r.Records, len(s.vals))
		}
		if got := int64(s.puts - puts); got != counts["insert"]+counts["update"]+counts["read-modify-write"] {
			t.Errorf("%s: %d puts for %v", w.Name, got, counts)
		}
	}
	for k, v := range s.vals {
		rec, err := decodeRecord(v)
		if err != nil || len(rec) != 10 || slices.ContainsFunc(rec, func(f []byte) bool { return len(f) != 100 }) {
			t.Fatalf("record %s is not 10 fields of 100 bytes: %v", k, err)
		}
	}
}

// TestRunScanLength checks that workload E's scans read 1 to 100 records,
// uniformly: on average about 50.
func TestRunScanLength(t *testing.T) {
	s := newMapStore()
	cfg := Config{Records: 5000, Operations: 4000, Seed: 2}
	if _, err := Load(s, cfg); err != nil {
		t.Fatal(err)
	}
	scanned := 0
	counting := &scanCounter{mapStore: s, scanned: &scanned}
	r, err := Run(counting, E, cfg)
	if err != nil {
		t.Fatal(err)
	}
	scans := r.ByOp[slices.IndexFunc(r.ByOp, func(o OpResult) bool { return o.Op == "scan" })].Count
	if mean := float64(scanned) / float64(scans); mean < 45 || mean > 56 {
		t.Errorf("scans read %.1f records on average, want about 50.5", mean)
	}
}

type scanCounter struct {
	*mapStore
	scanned *int
}

func (c *scanCounter) Scan(start []byte, n int, visit func(key, value []byte) error) error {
	return c.mapStore.Scan(start, n, func(k, v []byte) error {
		*c.scanned++
		return visit(k, v)
	})
}

// TestShale runs workload E, whose scans and inserts use every Store
// method, on a shale store and checks that it holds the records afterwards.
func TestShale(t *testing.T) {
	db, err := shale.Open(t.TempDir(), &shale.Options{NoSync: true, MemTableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := Shale(db)
	cfg := Config{Records: 500, Operations: 500, Seed: 3}
	if _, err := Load(s, cfg); err != nil {
		t.Fatal(err)
	}
	r, err := Run(s, E, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for n := range r.Records {
		if _, found, err := s.Get(Key(n)); !found || err != nil {
			t.Fatalf("record %d: found %v, %v", n, found, err)
		}
	}
	if _, found, err := s.Get([]byte("nobody")); found || err != nil {
		t.Fatalf("absent key: found %v, %v", found, err)
	}
}
