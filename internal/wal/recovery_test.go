package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/base"
)

// span is where a record lies in a well-formed log: from the header of its
// first fragment to the end of its last.
type span struct{ start, end int }

func recordSpans(t testing.TB, log []byte) []span {
	t.Helper()
	frags, stop, problem := walk(log)
	if problem != "" {
		t.Fatalf("log is not well formed: %s at offset %d", problem, stop)
	}
	var spans []span
	for _, f := range frags {
		switch f.typ {
		case typeFull, typeFirst:
			spans = append(spans, span{f.off, f.off + f.size})
		case typeMiddle, typeLast:
			spans[len(spans)-1].end = f.off + f.size
		}
	}
	return spans
}

// result is everything a Reader makes of a log.
type result struct {
	records [][]byte
	offsets []int64
	err     error // what ended the log: io.EOF or another error
	torn    bool
	tornAt  int64
}

func read(t testing.TB, r io.ReaderAt) result {
	t.Helper()
	var res result
	rd := NewReader(r, testFile)
	for {
		rec, err := rd.Next()
		if err != nil {
			res.err = err
			break
		}
		res.records = append(res.records, bytes.Clone(rec))
		res.offsets = append(res.offsets, rd.Offset())
	}
	if _, err := rd.Next(); err != res.err {
		t.Fatalf("Next returned %v, then %v", res.err, err)
	}
	res.tornAt, res.torn = rd.TornTail()
	return res
}

// checkRecords fails the test unless got holds exactly want.
func checkRecords(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: read %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: record %d is not the record written", what, i)
		}
	}
}

// checkCut checks the log of records (laid out as spans) cut to its first c
// bytes: it must read back every record that ends by c and then end with
// io.EOF, torn exactly when bytes of the next record's fragments remain.
func checkCut(t *testing.T, log []byte, records [][]byte, spans []span, c int) {
	t.Helper()
	res := read(t, bytes.NewReader(log[:c]))
	j := 0
	for j < len(spans) && spans[j].end <= c {
		j++
	}
	what := fmt.Sprintf("cut at %d", c)
	if res.err != io.EOF {
		t.Fatalf("%s: %v", what, res.err)
	}
	checkRecords(t, what, res.records, records[:j])
	wantTorn := j < len(spans) && c > spans[j].start
	var wantAt int64
	if wantTorn && j > 0 {
		wantAt = int64(spans[j-1].end)
	}
	if res.torn != wantTorn || res.tornAt != wantAt {
		t.Fatalf("%s: TornTail() = %d, %t; want %d, %t", what, res.tornAt, res.torn, wantAt, wantTorn)
	}
}

func sizedRecords(sizes ...int) [][]byte {
	records := make([][]byte, len(sizes))
	for i, n := range sizes {
		records[i] = pattern(i, n)
	}
	return records
}

// TestTruncateEveryOffset cuts a small log at every byte, and a log whose
// last record crosses a block boundary at every byte of that record.
func TestTruncateEveryOffset(t *testing.T) {
	t.Run("small", func(t *testing.T) {
		records := sizedRecords(0, 1, 50, 7, 0, 200, 3)
		log := writeLog(t, records)
		spans := recordSpans(t, log)
		for c := 0; c <= len(log); c++ {
			checkCut(t, log, records, spans, c)
		}
	})
	t.Run("last record spans blocks", func(t *testing.T) {
		// The last record starts 500 bytes before the end of block 0.
		records := sizedRecords(0, 10, 300, 31930, 2000)
		log := writeLog(t, records)
		spans := recordSpans(t, log)
		last := spans[len(spans)-1]
		if last.start != blockSize-500 || last.end <= blockSize {
			t.Fatalf("last record at %v, want it to cross offset %d", last, blockSize)
		}
		for c := last.start; c <= len(log); c++ {
			checkCut(t, log, records, spans, c)
		}
	})
}

// TestBitFlips flips bits in every fragment header, in the padding and in a
// sample of payload bytes of a log with records of many shapes. A flip in
// the padding changes nothing; a flip in the last record is a torn tail; a
// flip anywhere else is corruption at the damaged record. In every case the
// records read before the end are exactly the records written before the
// damage.
func TestBitFlips(t *testing.T) {
	records := sizedRecords(0, 100, 40000, 7, 25384, 70000, 0, 33, 50000)
	log := writeLog(t, records)
	spans := recordSpans(t, log)
	frags, _, _ := walk(log)

	type flip struct{ off, bit int }
	var flips []flip
	padding := 0
	for _, f := range frags {
		n := headerSize
		if f.padding {
			n = f.size
			padding += n
		}
		for i := f.off; i < f.off+n; i++ {
			for bit := range 8 {
				flips = append(flips, flip{i, bit})
			}
		}
		for i := f.off + n; i < f.off+f.size; i += 257 {
			flips = append(flips, flip{i, i % 8})
		}
	}
	if padding == 0 {
		t.Fatal("the log has no padding to flip")
	}

	damaged := bytes.Clone(log)
	for _, fl := range flips {
		damaged[fl.off] ^= 1 << fl.bit
		res := read(t, bytes.NewReader(damaged))
		damaged[fl.off] ^= 1 << fl.bit

		k := 0 // the record hit, or len(records) for padding
		for k < len(spans) && !(spans[k].start <= fl.off && fl.off < spans[k].end) {
			k++
		}
		what := fmt.Sprintf("flip bit %d at offset %d (record %d)", fl.bit, fl.off, k)
		switch {
		case k == len(spans): // padding
			checkRecords(t, what, res.records, records)
			if res.err != io.EOF || res.torn {
				t.Fatalf("%s: ended with %v, torn %t; want a clean end", what, res.err, res.torn)
			}
		case k == len(spans)-1:
			checkRecords(t, what, res.records, records[:k])
			if res.err != io.EOF || !res.torn || res.tornAt != int64(spans[k-1].end) {
				t.Fatalf("%s: ended with %v, TornTail() = %d, %t; want a torn tail at %d",
					what, res.err, res.tornAt, res.torn, spans[k-1].end)
			}
		default:
			checkRecords(t, what, res.records, records[:k])
			var ce *base.CorruptionError
			if !errors.As(res.err, &ce) || !errors.Is(res.err, base.ErrCorruption) {
				t.Fatalf("%s: ended with %v; want corruption", what, res.err)
			}
			if ce.File != testFile || ce.Offset < int64(spans[k].start) || ce.Offset >= int64(spans[k].end) {
				t.Fatalf("%s: %v; want it in %s within record %d, offsets %d to %d",
					what, res.err, testFile, k, spans[k].start, spans[k].end)
			}
		}
	}
}

// TestRandomRoundTrip writes records of random sizes up to 100 KB through a
// MemFS file and checks them against the list written (the model): read back
// whole, cut at random offsets, and with a tail of random bytes appended.
func TestRandomRoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	var records [][]byte
	for range 300 {
		var n int
		switch x := rng.IntN(10); {
		case x < 5:
			n = rng.IntN(100)
		case x < 8:
			n = rng.IntN(4 << 10)
		default:
			n = rng.IntN(100_001)
		}
		rec := make([]byte, n)
		for i := range rec {
			rec[i] = byte(rng.Uint32())
		}
		records = append(records, rec)
	}

	// writeLog checks WriteRecord's offsets and Size against the file.
	log := writeLog(t, records)
	res := read(t, bytes.NewReader(log))
	if res.err != io.EOF || res.torn {
		t.Fatalf("ended with %v, torn %t; want a clean end", res.err, res.torn)
	}
	checkRecords(t, "whole log", res.records, records)
	if fmt.Sprint(res.offsets) != fmt.Sprint(recordStarts(log)) {
		t.Fatal("Reader.Offset differs from the offsets WriteRecord returned")
	}

	spans := recordSpans(t, log)
	for range 50 {
		checkCut(t, log, records, spans, rng.IntN(len(log)+1))
	}

	garbage := make([]byte, 1+rng.IntN(3*blockSize))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	res = read(t, bytes.NewReader(append(log, garbage...)))
	checkRecords(t, "garbage tail", res.records, records)
	if res.err != io.EOF || !res.torn || res.tornAt != int64(len(log)) {
		t.Fatalf("garbage tail: ended with %v, TornTail() = %d, %t; want a torn tail at %d",
			res.err, res.tornAt, res.torn, len(log))
	}
}

type failingReaderAt struct {
	r      io.ReaderAt
	failAt int64
}

var errInjected = errors.New("injected I/O error")

func (f failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.failAt {
		return 0, errInjected
	}
	return f.r.ReadAt(p, off)
}

// TestReaderIOError checks that a read error ends the log with that error,
// not corruption and not io.EOF, after the records before it.
func TestReaderIOError(t *testing.T) {
	records := sizedRecords(10, 20, 40000)
	log := writeLog(t, records)
	res := read(t, failingReaderAt{bytes.NewReader(log), blockSize})
	checkRecords(t, "read error", res.records, records[:2])
	if !errors.Is(res.err, errInjected) || errors.Is(res.err, base.ErrCorruption) {
		t.Fatalf("ended with %v; want the injected error", res.err)
	}
}
