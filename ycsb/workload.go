// Package ycsb generates the Yahoo! Cloud Serving Benchmark's core workloads
// A to F (Cooper et al., "Benchmarking Cloud Serving Systems with YCSB",
// SoCC 2010, and YCSB's workloads/workload[a-f] files) and runs them
// against any ordered key-value store, measuring each operation type's
// latency in an HDR histogram. kvbench runs it on shale (through Shale);
// the peers module runs it on Pebble and goleveldb too, so the stores see
// the same operations.
//
// As in YCSB's CoreWorkload: a record is FieldCount fields of FieldLength
// random bytes (10 of 100 by default: 1 KB), stored as one value under the
// key "user" followed by the decimal FNV-1a hash of its record number, so
// that consecutive inserts are scattered over the key space. Reads read
// the whole record; an update writes one field, which on a key-value store
// is a read, a merge and a write (as YCSB's RocksDB binding does); an
// insert writes a new record; a scan reads 1 to 100 records (uniformly)
// from a start key; a read-modify-write reads a record and updates it.
package ycsb

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Distribution is how a workload chooses the records it reads and updates.
type Distribution int

const (
	// ZipfianRequests is YCSB's "zipfian": a ScrambledZipfian over the
	// records.
	ZipfianRequests Distribution = iota
	// LatestRequests is YCSB's "latest": skewed towards the newest inserts
	// (see Latest).
	LatestRequests
)

// String returns the distribution's YCSB name.
func (d Distribution) String() string {
	switch d {
	case ZipfianRequests:
		return "zipfian"
	case LatestRequests:
		return "latest"
	}
	return fmt.Sprintf("Distribution(%d)", int(d))
}

// Workload is a mix of operations and how they choose records. The
// proportions add up to 1.
type Workload struct {
	Name string
	// Proportions of the operations.
	Read, Update, Insert, Scan, ReadModifyWrite float64
	// Request chooses the records of reads, updates, scans and
	// read-modify-writes.
	Request Distribution
	// MaxScanLength bounds a scan's length, drawn uniformly from
	// [1, MaxScanLength].
	MaxScanLength int
}

// The core workloads, as YCSB's workloads/workload[a-f] define them.
var (
	// A is update heavy: 50% reads, 50% updates (a session store).
	A = Workload{Name: "A", Read: 0.5, Update: 0.5, Request: ZipfianRequests}
	// B is read mostly: 95% reads, 5% updates (photo tagging).
	B = Workload{Name: "B", Read: 0.95, Update: 0.05, Request: ZipfianRequests}
	// C is read only (a user profile cache).
	C = Workload{Name: "C", Read: 1, Request: ZipfianRequests}
	// D reads the latest records: 95% reads, 5% inserts (status updates).
	D = Workload{Name: "D", Read: 0.95, Insert: 0.05, Request: LatestRequests}
	// E is short ranges: 95% scans of 1 to 100 records, 5% inserts
	// (threaded conversations).
	E = Workload{Name: "E", Scan: 0.95, Insert: 0.05, Request: ZipfianRequests, MaxScanLength: 100}
	// F is read-modify-write: 50% reads, 50% read-modify-writes (a user
	// database).
	F = Workload{Name: "F", Read: 0.5, ReadModifyWrite: 0.5, Request: ZipfianRequests}
)

// Workloads are the core workloads in the order YCSB recommends running
// them after one load: A, B, C, F, D (D's inserts change the data the
// others read, so it comes after them), then E.
var Workloads = []Workload{A, B, C, F, D, E}

// Op is an operation type.
type Op int

// The operation types, in the order results list them.
const (
	OpRead Op = iota
	OpUpdate
	OpInsert
	OpScan
	OpReadModifyWrite
	numOps
)

// String returns the operation's name as reports print it.
func (o Op) String() string {
	return [...]string{"read", "update", "insert", "scan", "read-modify-write"}[o]
}

// choose picks an operation by the workload's proportions from u in [0, 1).
func (w *Workload) choose(u float64) Op {
	for op, p := range []float64{w.Read, w.Update, w.Insert, w.Scan} {
		if u < p {
			return Op(op)
		}
		u -= p
	}
	return OpReadModifyWrite
}

func (w *Workload) validate() error {
	sum := w.Read + w.Update + w.Insert + w.Scan + w.ReadModifyWrite
	if sum < 0.999 || sum > 1.001 {
		return fmt.Errorf("ycsb: workload %s: proportions add up to %g, not 1", w.Name, sum)
	}
	if w.Scan > 0 && w.MaxScanLength < 1 {
		return fmt.Errorf("ycsb: workload %s scans but has no MaxScanLength", w.Name)
	}
	return nil
}

// Key returns record n's key: "user" and the decimal FNV-1a hash of n, as
// YCSB's CoreWorkload names records with insertorder=hashed.
func Key(n int64) []byte {
	return strconv.AppendInt([]byte("user"), fnvHash64(n), 10)
}

// record is a record's fields, in field order.
type record [][]byte

// encode lays a record out as one value: for each field, its length as a
// uvarint and its bytes. (Field names are implied by the order: field0,
// field1, ...)
func (r record) encode() []byte {
	n := 0
	for _, f := range r {
		n += binary.MaxVarintLen64 + len(f)
	}
	b := make([]byte, 0, n)
	for _, f := range r {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// decodeRecord splits a value into its fields, which alias b.
func decodeRecord(b []byte) (record, error) {
	var r record
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, fmt.Errorf("ycsb: value is not a record: bad field %d", len(r))
		}
		r = append(r, b[k:k+int(n)])
		b = b[k+int(n):]
	}
	return r, nil
}

// randomField returns length random printable bytes, as YCSB's
// RandomByteIterator makes field values.
func randomField(rng *rand.Rand, length int) []byte {
	f := make([]byte, length)
	for i := 0; i < length; i += 8 {
		v := rng.Uint64()
		for j := i; j < min(i+8, length); j++ {
			f[j] = ' ' + byte(v%95)
			v >>= 8
		}
	}
	return f
}
