package wal

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/shale-db/shale/internal/base"
)

// FuzzReader reads arbitrary bytes as a log. Beyond never panicking, it
// checks that the Reader is consistent with itself: it returns no more bytes
// of records than the file holds, ends with io.EOF or a corruption error
// naming the file and an offset in it, and whatever it returned before
// stopping at an offset is exactly what it reads from the file cut there.
// The seeds are logs of both versions, whole, damaged, cut and extended;
// logs whose LOG fragment is damaged; logs ended as a memtable rotation
// ends a WAL, damaged before and in their END; and logs holding imitated
// and foreign-salted COMMITs.
func FuzzReader(f *testing.F) {
	add := func(log []byte) {
		f.Add(log)
		if len(log) > 20 {
			damaged := bytes.Clone(log)
			damaged[len(log)/2] ^= 0x10
			f.Add(damaged)
			f.Add(log[:len(log)-3])
			f.Add(append(bytes.Clone(log), make([]byte, 10)...))
		}
	}
	for _, sizes := range [][]int{{}, {0}, {5, 0, 3}, {100, 40000}, {32755, 10}, {32754, 3}, {10, 80000, 20}} {
		records := sizedRecords(sizes...)
		add(writeV1(records))
		add(writeLog(f, records))
		add(groupedLog(f, records, []int{len(records)}, false, true))
	}
	f.Add(appendFragment(appendFragment(nil, typeFirst1, []byte("a")), typeFull1, []byte("b")))
	f.Add(appendFragment(appendFragment(nil, typeLast1, []byte("a")), typeFull1, []byte("b")))
	f.Add(appendFragment(nil, 12, []byte("future")))
	f.Add(appendFragment(nil, typeLog, []byte{3, 0, 0, 0}))

	// Synced logs of two blocks and of one with their salt, or their LOG
	// header, damaged.
	for _, sizes := range [][]int{{100, 40000, 10}, {100, 200, 10}} {
		synced := groupedLog(f, sizedRecords(sizes...), []int{1, 1, 1}, true, false)
		for _, b := range []int{2, headerSize + 5} {
			damaged := bytes.Clone(synced)
			damaged[b] ^= 1
			f.Add(damaged)
			f.Add(damaged[:len(damaged)-30])
		}
	}
	// Logs ended as the DB ends a WAL at a memtable rotation (EndClose):
	// synced groups, then the END; with a bit flipped in the last record,
	// in its COMMIT or in the END, and with zeros after the END.
	for _, sizes := range [][]int{{100, 200, 10}, {100, 40000, 10}} {
		ended := groupedLog(f, sizedRecords(sizes...), []int{1, 1, 1}, true, true)
		for _, back := range []int{endSize + commitSize + 3, endSize + 3, endSize / 2} {
			damaged := bytes.Clone(ended)
			damaged[len(damaged)-back] ^= 4
			f.Add(damaged)
		}
		f.Add(append(bytes.Clone(ended), make([]byte, 4096)...))
	}
	// A record holding a COMMIT sealed for the offset where it lands, with
	// the log's salt (as only the Writer could make) and with another, the
	// log cut right after it.
	log := groupedLog(f, sizedRecords(100), []int{1}, true, false)
	at := int64(len(log) + headerSize)
	for _, salt := range []uint64{testSalt, testSalt + 1} {
		value := commitFragment(salt, at, 1<<40, 1)
		f.Add(appendFragment(bytes.Clone(log), typeFull, append(value, 1, 2, 3))[:at+int64(len(value))])
	}
	// A COMMIT sealed with another salt at a fragment position.
	f.Add(appendCommit(appendFragment(bytes.Clone(log), typeFull, []byte("b")), testSalt+1, 0, 1))

	f.Fuzz(func(t *testing.T, data []byte) {
		res := read(t, bytes.NewReader(data))
		total := 0
		for i, rec := range res.records {
			total += len(rec)
			if res.offsets[i] < 0 || res.offsets[i] >= int64(len(data)) ||
				i > 0 && res.offsets[i] <= res.offsets[i-1] {
				t.Fatalf("record %d at offset %d", i, res.offsets[i])
			}
		}
		if total > len(data) {
			t.Fatalf("read %d bytes of records from a %d-byte file", total, len(data))
		}

		// The offset the Reader stopped at: the end of the intact log, or
		// the corruption.
		var stop int64
		var ce *base.CorruptionError
		switch {
		case res.err == io.EOF && res.torn:
			stop = res.tornAt
		case res.err == io.EOF:
			return
		case errors.As(res.err, &ce) && errors.Is(res.err, base.ErrCorruption):
			if ce.File != testFile || ce.Offset < 0 || ce.Offset >= int64(len(data)) {
				t.Fatalf("corruption error %v names the wrong file or offset", res.err)
			}
			stop = ce.Offset
		default:
			t.Fatalf("ended with %v", res.err)
		}
		if stop < 0 || stop > int64(len(data)) {
			t.Fatalf("stopped at offset %d of a %d-byte file", stop, len(data))
		}
		cut := read(t, bytes.NewReader(data[:stop]))
		if cut.err != io.EOF {
			t.Fatalf("cut at %d: ended with %v", stop, cut.err)
		}
		checkRecords(t, "cut where the Reader stopped", cut.records, res.records)
	})
}
