//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shale-db/shale"
)

// restoreByBatch is the restore Restore replaced: the whole stream in one
// batch (a range deletion of every key, the records, the applied index).
// BenchmarkRestore measures both.
func restoreByBatch(f *fsm, r io.Reader) error {
	b := f.db.NewBatch()
	b.DeleteRange(dataLower, dataUpper)
	applied, err := readSnapshot(r, func(uint64) {}, func(k, v []byte) { b.Put(dataKey(k), v) })
	if err != nil {
		return err
	}
	b.Put(appliedKey, binary.BigEndian.AppendUint64(nil, applied))
	if err := f.db.Apply(b); err != nil {
		return err
	}
	f.applied = applied
	return nil
}

// restoreKeys is how many keys BenchmarkRestore's snapshot holds:
// -restore-keys, 1M by default.
var restoreKeys = flag.Int("restore-keys", 1_000_000, "BenchmarkRestore: keys in the snapshot")

// BenchmarkRestore restores a snapshot of -restore-keys keys (16-byte keys,
// 100-byte random values) into a state of 100,000 other keys, through
// Restore (one ingested table) and through one batch (restoreByBatch). Each
// restore is timed to when its memtables are flushed, and reports the
// process's CPU time (user and system, every goroutine) and the bytes it
// wrote (/proc/self/io's wchar and the mapped WAL's stores) per stream
// byte; Linux only.
func BenchmarkRestore(b *testing.B) {
	dir := b.TempDir()
	src, db := openFSM(b, filepath.Join(dir, "src"))
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 100)
	batch := db.NewBatch()
	for i := range *restoreKeys {
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		batch.Put(dataKey(fmt.Appendf(nil, "key%013d", i)), value)
		if batch.Count() == 1000 {
			if err := db.Apply(batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	apply(b, src, 1, "last", []byte("x"))
	stream := snapshotOf(b, src)
	want := state(b, src)
	db.Close()
	for _, way := range []struct {
		name    string
		restore func(f *fsm, r io.Reader) error
	}{
		{"ingest", func(f *fsm, r io.Reader) error { return f.Restore(io.NopCloser(r)) }},
		{"batch", restoreByBatch},
	} {
		b.Run(way.name, func(b *testing.B) {
			var cpu time.Duration
			var written int64
			defer func() {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(written)/float64(b.N)/float64(len(stream)), "written/stream-byte")
			}()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				dst, ddb := openFSM(b, filepath.Join(b.TempDir(), "dst"))
				for j := range 100 {
					batch := ddb.NewBatch()
					for k := range 1000 {
						batch.Put(dataKey(fmt.Appendf(nil, "old%06d", j*1000+k)), value)
					}
					if err := ddb.Apply(batch); err != nil {
						b.Fatal(err)
					}
				}
				if err := ddb.Flush(); err != nil {
					b.Fatal(err)
				}
				cpu0, wchar0 := cpuAndWrites(b, ddb)
				b.StartTimer()
				if err := way.restore(dst, bytes.NewReader(stream)); err != nil {
					b.Fatal(err)
				}
				if err := ddb.Flush(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu1, wchar1 := cpuAndWrites(b, ddb)
				cpu += cpu1 - cpu0
				written += wchar1 - wchar0
				if i == 0 {
					if got := state(b, dst); got != want {
						b.Fatalf("restored state differs:\n got %.200s\nwant %.200s", got, want)
					}
				}
				ddb.Close()
				b.StartTimer()
			}
		})
	}
}

// cpuAndWrites returns the process's CPU time so far (user and system)
// and the bytes it has written: wchar of /proc/self/io, plus what db
// stored through its mapped WAL, which wchar does not see.
func cpuAndWrites(b *testing.B, db *shale.DB) (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	io, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(io), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return cpu, n + db.Metrics().WALMappedBytes
		}
	}
	b.Fatal("/proc/self/io has no wchar")
	return 0, 0
}
