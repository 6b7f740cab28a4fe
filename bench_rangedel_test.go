package shale

import (
	"flag"
	"testing"
)

var deleteRangeKeys = flag.Int("deleterange.keys", 1_000_000, "keys BenchmarkDeleteRange deletes")

// BenchmarkDeleteRange deletes -deleterange.keys consecutive keys (1M by
// default), loaded and compacted into the bottom level, either with one
// DeleteRange or with one Delete per key (NoSync: the cost of the writes,
// not of fsync). Each op is one whole deletion; ns/op is its write time.
// It reports the WAL bytes the deletion wrote, the bytes of tables before
// it, after the flush and the compactions the picker runs on its own
// (delete-only compactions for the range), and after a full Compact.
//
//	go test -run '^$' -bench DeleteRange -benchtime 1x .
func BenchmarkDeleteRange(b *testing.B) {
	n := *deleteRangeKeys
	for _, how := range []string{"DeleteRange", "Deletes"} {
		b.Run(how, func(b *testing.B) {
			var walBytes, before, settled, compacted int64
			for range b.N {
				b.StopTimer()
				db := openBench(b, &Options{NoSync: true, DisableAutomaticCompactions: true})
				batch := db.NewBatch()
				for i := range n {
					batch.Put(benchKey(i), []byte("value-value-value-value"))
					if batch.Count() == 10_000 {
						if err := db.Apply(batch); err != nil {
							b.Fatal(err)
						}
						batch.Reset()
					}
				}
				if err := db.Apply(batch); err != nil {
					b.Fatal(err)
				}
				if err := db.Compact(); err != nil {
					b.Fatal(err)
				}
				before = tableBytes(db)
				wal := db.Metrics().WALBytes
				b.StartTimer()
				if how == "DeleteRange" {
					if err := db.DeleteRange(benchKey(0), benchKey(n)); err != nil {
						b.Fatal(err)
					}
				} else {
					for i := range n {
						if err := db.Delete(benchKey(i)); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				walBytes = db.Metrics().WALBytes - wal
				if err := db.Flush(); err != nil {
					b.Fatal(err)
				}
				settleCompactions(b, db)
				settled = tableBytes(db)
				if err := db.Compact(); err != nil {
					b.Fatal(err)
				}
				compacted = tableBytes(db)
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(walBytes), "wal-bytes")
			b.ReportMetric(float64(before), "table-bytes-before")
			b.ReportMetric(float64(settled), "table-bytes-settled")
			b.ReportMetric(float64(compacted), "table-bytes-compacted")
		})
	}
}

func tableBytes(db *DB) int64 {
	var n int64
	for _, l := range db.Metrics().Levels {
		n += l.Bytes
	}
	return n
}
