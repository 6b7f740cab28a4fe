package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/base"
)

// span is where a record lies in a well-formed log: from the header of its
// first fragment to the end of its last.
type span struct{ start, end int }

// sample is a well-formed log and its parse by walk.
type sample struct {
	log     []byte
	records [][]byte
	frags   []frag
	spans   []span
	ended   bool // the log ends with an END
}

func newSample(t testing.TB, log []byte, records [][]byte) sample {
	t.Helper()
	frags, stop, problem := walk(log)
	if problem != "" {
		t.Fatalf("log is not well formed: %s at offset %d", problem, stop)
	}
	s := sample{log: log, records: records, frags: frags}
	for _, f := range frags {
		switch {
		case f.padding:
		case f.isStart():
			s.spans = append(s.spans, span{f.off, f.off + f.size})
		case f.typ == typeMiddle || f.typ == typeLast || f.typ == typeMiddle1 || f.typ == typeLast1:
			s.spans[len(s.spans)-1].end = f.off + f.size
		}
	}
	if len(s.spans) != len(records) {
		t.Fatalf("the log holds %d records, %d were written", len(s.spans), len(records))
	}
	s.ended = len(frags) > 0 && frags[len(frags)-1].typ == typeEnd
	return s
}

// cut returns the sample s cut to its first c bytes, as a crash that tore
// the last write leaves it: the fragments, records and spans that end by c.
func (s sample) cut(c int) sample {
	t := sample{log: s.log[:c]}
	for _, f := range s.frags {
		if f.off+f.size <= c {
			t.frags = append(t.frags, f)
		}
	}
	for i, sp := range s.spans {
		if sp.end <= c {
			t.spans = append(t.spans, sp)
			t.records = append(t.records, s.records[i])
		}
	}
	t.ended = s.ended && c == len(s.log)
	return t
}

// v1 reports whether the sample is a version 1 log.
func (s sample) v1() bool { return len(s.frags) > 0 && s.frags[0].typ != typeLog }

// recordsBefore returns how many records end by offset o.
func (s sample) recordsBefore(o int) int {
	j := 0
	for j < len(s.spans) && s.spans[j].end <= o {
		j++
	}
	return j
}

// cleanCut reports whether the log cut to its first c bytes ends cleanly: at
// the end of a whole record (version 1), or of a whole group or the END
// (version 2), with nothing of a later fragment left but padding.
func (s sample) cleanCut(c int) bool {
	open := false // the cut is inside a record (version 1) or a group
	covered := 0  // the end of the sample's fragments before c
	for _, f := range s.frags {
		if f.off >= c {
			break
		}
		if f.off+f.size > c && !f.padding {
			return false // c cuts this fragment
		}
		covered = f.off + f.size
		switch {
		case f.padding:
		case f.typ == typeCommit || f.typ == typeEnd || f.typ == typeFull1 || f.typ == typeLast1:
			open = false
		default:
			open = true
		}
	}
	return !open && covered >= c // else c cuts a fragment a cut sample lacks
}

// claim returns the offset of a COMMIT or END that a reader finds after
// damage to the fragment at offset o and that records a sync past o, or -1
// if there is none. Every COMMIT and END after o counts: with the salt
// intact by its seal, and with the LOG fragment's salt damaged as one on
// the chain from the header after the LOG fragment or from a later block
// start (in a log damaged only there, those chains hold every fragment).
func (s sample) claim(o int) int {
	for _, f := range s.frags {
		if f.isCommit() && f.off > o && f.synced() > o {
			return f.off
		}
	}
	return -1
}

// result is everything a Reader makes of a log.
type result struct {
	records [][]byte
	offsets []int64
	err     error // what ended the log: io.EOF or another error
	torn    bool
	tornAt  int64
	cut     bool // CutOff
	ended   bool
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
	res.cut = rd.CutOff()
	res.ended = rd.Ended()
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

// checkTorn fails the test unless res ended in a torn tail after the first
// j records.
func (s sample) checkTorn(t *testing.T, what string, res result, j int) {
	t.Helper()
	checkRecords(t, what, res.records, s.records[:j])
	var wantAt int64
	if j > 0 {
		wantAt = int64(s.spans[j-1].end)
	}
	if res.err != io.EOF || !res.torn || res.tornAt != wantAt || res.ended {
		t.Fatalf("%s: ended with %v, TornTail() = %d, %t, Ended() = %t; want a torn tail at %d",
			what, res.err, res.tornAt, res.torn, res.ended, wantAt)
	}
}

// checkCut checks the log cut to its first c bytes: it must read back every
// record that ends by c and then end with io.EOF, torn unless the cut is
// clean.
func (s sample) checkCut(t *testing.T, c int) {
	t.Helper()
	res := read(t, bytes.NewReader(s.log[:c]))
	j := s.recordsBefore(c)
	what := fmt.Sprintf("cut at %d", c)
	if !s.cleanCut(c) {
		s.checkTorn(t, what, res, j)
		// CutOff says whether the tail dropped anything but zero padding
		// (or the LOG fragment of a version 2 log that holds no record).
		from := res.tornAt
		if from == 0 && c >= logSize && s.log[6] == typeLog {
			from = logSize
		}
		if wantCut := slices.ContainsFunc(s.log[from:c], func(b byte) bool { return b != 0 }); res.cut != wantCut {
			t.Fatalf("%s: CutOff() = %t, want %t (bytes %d to %d dropped)", what, res.cut, wantCut, from, c)
		}
		return
	}
	checkRecords(t, what, res.records, s.records[:j])
	if wantEnded := s.ended && c == len(s.log); res.err != io.EOF || res.torn || res.ended != wantEnded {
		t.Fatalf("%s: ended with %v, torn %t, Ended() = %t; want a clean end, Ended() = %t",
			what, res.err, res.torn, res.ended, wantEnded)
	}
}

func sizedRecords(sizes ...int) [][]byte {
	records := make([][]byte, len(sizes))
	for i, n := range sizes {
		records[i] = pattern(i, n)
	}
	return records
}

// groupedLog writes records in groups of the given sizes, syncing after each
// group if synced, and ending with MarkEnd if ended.
func groupedLog(t testing.TB, records [][]byte, groups []int, synced, ended bool) []byte {
	t.Helper()
	var steps []step
	for _, n := range groups {
		steps = append(steps, step{group: records[:n]})
		records = records[n:]
		if synced {
			steps = append(steps, step{sync: true})
		}
	}
	if ended {
		steps = append(steps, step{end: true})
	}
	log, _ := writeSteps(t, steps)
	return log
}

// TestTruncateEveryOffset cuts small logs of both versions at every byte,
// and logs whose last record crosses a block boundary at every byte of that
// record.
func TestTruncateEveryOffset(t *testing.T) {
	small := sizedRecords(0, 1, 50, 7, 0, 200, 3)
	spanning := sizedRecords(0, 10, 300, 31930, 2000)
	for _, tc := range []struct {
		name    string
		log     []byte
		records [][]byte
		from    func(sample) int // the first cut
	}{
		{"v1 small", writeV1(small), small, nil},
		{"v2 small", groupedLog(t, small, []int{1, 3, 2, 1}, true, false), small, nil},
		{"v2 small ended", groupedLog(t, small, []int{2, 1, 4}, false, true), small, nil},
		{"v1 last record spans blocks", writeV1(spanning), spanning, lastRecord},
		{"v2 last record spans blocks", groupedLog(t, spanning, []int{3, 1, 1}, true, true), spanning, lastRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSample(t, tc.log, tc.records)
			from := 0
			if tc.from != nil {
				from = tc.from(s)
			}
			for c := from; c <= len(s.log); c++ {
				s.checkCut(t, c)
			}
		})
	}
}

// lastRecord returns where the last record of s starts, checking that it
// crosses the end of block 0.
func lastRecord(s sample) int {
	last := s.spans[len(s.spans)-1]
	if last.start >= blockSize || last.end <= blockSize {
		panic(fmt.Sprintf("last record at %v, want it to cross offset %d", last, blockSize))
	}
	return last.start
}

// TestBitFlips flips bits in every fragment header, in the padding and in a
// sample of payload bytes of logs with records of many shapes: version 1,
// and version 2 synced after every group, written without syncs, and ended
// with MarkEnd. A flip in the padding changes nothing. In a version 1 log a
// flip in the last record is a torn tail and anywhere else corruption at the
// damaged record. In a version 2 log a flip in the fragment at offset o is
// corruption at o if a COMMIT or END anywhere after o records a sync past o
// (found by its seal, or, if the flip hit the LOG fragment's salt, on the
// chains of fragments from fixed headers), and a torn tail otherwise: every flip in synced bytes that a later
// COMMIT or END claims is reported, wherever it lies. In every case the
// records read before the end are exactly the records written before the
// damage.
func TestBitFlips(t *testing.T) {
	// Each log has padding: in version 1 after the 25384-byte record, in
	// version 2 after the 25308-byte one.
	v1 := sizedRecords(0, 100, 40000, 7, 25384, 70000, 0, 33, 50000)
	v2 := sizedRecords(0, 100, 40000, 25308, 25384, 70000, 0, 33, 50000, 20, 10)
	groups := []int{2, 1, 2, 1, 3, 1, 1}
	// Small logs, every bit of which is flipped.
	small := sizedRecords(0, 1, 50, 7, 0, 200, 3)
	smallGroups := []int{1, 3, 2, 1}
	for _, tc := range []struct {
		name    string
		log     []byte
		records [][]byte
		stride  int // see checkFlips; negative: of the log cut in its last group
	}{
		{"v1", writeV1(v1), v1, 101},
		{"v2 synced", groupedLog(t, v2, groups, true, false), v2, 101},
		{"v2 not synced", groupedLog(t, v2, groups, false, false), v2, 101},
		{"v2 ended", groupedLog(t, v2, groups, false, true), v2, 101},
		{"v2 synced, last write torn", groupedLog(t, v2, groups, true, false), v2, -101},
		{"v1 small", writeV1(small), small, 0},
		{"v2 small synced", groupedLog(t, small, smallGroups, true, false), small, 0},
		{"v2 small ended", groupedLog(t, small, smallGroups, false, true), small, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSample(t, tc.log, tc.records)
			if tc.stride < 0 {
				// Cut in the middle of the last group's second-last record:
				// the reader must find the claims on the chains from block
				// starts, as no COMMIT ends the file.
				last := s.spans[len(s.spans)-2]
				s, tc.stride = s.cut((last.start+last.end)/2), -tc.stride
			}
			s.checkFlips(t, tc.stride)
		})
	}
}

// checkFlips flips a bit of every byte of the fragment headers and of the
// padding, and of one byte every stride bytes of the payloads; with stride
// 0, every bit of the log. It checks how the Reader classifies each. A
// sample with a stride must have padding.
func (s sample) checkFlips(t *testing.T, stride int) {
	type flip struct{ off, bit int }
	var flips []flip
	padding, corrupt := 0, 0
	for _, f := range s.frags {
		n := headerSize
		if f.padding || stride == 0 {
			n = f.size
		}
		if f.padding {
			padding += n
		}
		for i := f.off; i < f.off+n; i++ {
			for bit := range 8 {
				if stride == 0 || bit == i%8 {
					flips = append(flips, flip{i, bit})
				}
			}
		}
		for i := f.off + n; i < f.off+f.size; i += stride {
			flips = append(flips, flip{i, i % 8})
		}
	}
	if padding == 0 && stride > 0 {
		t.Fatal("the log has no padding to flip")
	}

	damaged := bytes.Clone(s.log)
	for _, fl := range flips {
		damaged[fl.off] ^= 1 << fl.bit
		res := read(t, bytes.NewReader(damaged))
		damaged[fl.off] ^= 1 << fl.bit

		var hit frag // the fragment hit
		for _, f := range s.frags {
			if f.off <= fl.off && fl.off < f.off+f.size {
				hit = f
			}
		}
		k := s.recordsBefore(hit.off) // the records before the damage
		what := fmt.Sprintf("flip bit %d at offset %d (%s at %d)", fl.bit, fl.off, typeName(hit.typ), hit.off)
		var ce *base.CorruptionError
		isCorrupt := errors.As(res.err, &ce) && errors.Is(res.err, base.ErrCorruption)
		switch {
		case hit.padding && !s.cleanCut(len(s.log)):
			s.checkTorn(t, what, res, len(s.records))
		case hit.padding:
			checkRecords(t, what, res.records, s.records)
			if res.err != io.EOF || res.torn || res.ended != s.ended {
				t.Fatalf("%s: ended with %v, torn %t; want a clean end", what, res.err, res.torn)
			}
		case s.v1() && k == len(s.spans)-1:
			s.checkTorn(t, what, res, k)
		case s.v1():
			checkRecords(t, what, res.records, s.records[:k])
			if !isCorrupt || ce.File != testFile || ce.Offset < int64(s.spans[k].start) || ce.Offset >= int64(s.spans[k].end) {
				t.Fatalf("%s: ended with %v; want corruption in %s within record %d, offsets %d to %d",
					what, res.err, testFile, k, s.spans[k].start, s.spans[k].end)
			}
			corrupt++
		case s.claim(hit.off) >= 0:
			checkRecords(t, what, res.records, s.records[:k])
			if !isCorrupt || ce.File != testFile || ce.Offset != int64(hit.off) {
				t.Fatalf("%s: ended with %v; want corruption in %s at offset %d (the COMMIT or END at %d claims it synced)",
					what, res.err, testFile, hit.off, s.claim(hit.off))
			}
			corrupt++
		default:
			s.checkTorn(t, what, res, k)
		}
	}
	t.Logf("%d flips, %d of them corruption", len(flips), corrupt)
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

	s := newSample(t, log, records)
	for range 50 {
		s.checkCut(t, rng.IntN(len(log)+1))
	}

	garbage := make([]byte, 1+rng.IntN(3*blockSize))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	res = read(t, bytes.NewReader(append(log, garbage...)))
	s.checkTorn(t, "garbage tail", res, len(records))
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

// TestLostUnsyncedPages is the page-reorder crash model: logs of random
// groups, synced after some of them (or never, as with NoSync), lose a random
// subset of the 4 KiB pages written since the last sync (zeroed, in any
// order, never the synced bytes of a page that straddles the sync), and may
// end at any offset after the sync. The Reader must never call that
// corruption: it returns a prefix of the records written that holds every
// synced record.
//
// In half the trials with synced bytes after the LOG fragment, a bit of one
// of them is flipped as well (never in padding, which is not read). That
// damage must be reported, as corruption at the damaged fragment, exactly
// when a COMMIT or END that survived the crash intact, wherever it lies
// after the damage, records a sync past the fragment; otherwise the log is
// cut there. Either way the records before the damage are read.
func TestLostUnsyncedPages(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	const page = 4096
	flipped, reported := 0, 0
	for trial := range 300 {
		f := &memFile{}
		w := NewWriter(f)
		noSync := trial%4 == 0
		var records [][]byte
		syncedRecords := 0 // records that end by the last sync
		for range 1 + rng.IntN(12) {
			group := make([][]byte, 1+rng.IntN(4))
			for i := range group {
				group[i] = pattern(len(records)+i, rng.IntN(12_000))
			}
			if err := w.WriteGroup(group, false); err != nil {
				t.Fatal(err)
			}
			records = append(records, group...)
			if !noSync && rng.IntN(2) == 0 {
				if err := w.Sync(); err != nil {
					t.Fatal(err)
				}
				syncedRecords = len(records)
			}
		}
		written := f.data.Bytes()
		log := bytes.Clone(written)
		synced := int(w.synced)
		for p := synced / page * page; p < len(log); p += page {
			if rng.IntN(2) == 0 {
				clear(log[max(p, synced):min(p+page, len(log))])
			}
		}
		if rng.IntN(2) == 0 {
			log = log[:synced+rng.IntN(len(log)-synced+1)]
		}

		what := fmt.Sprintf("trial %d (synced %d of %d bytes)", trial, synced, len(written))
		if synced > logSize && rng.IntN(2) == 0 {
			if checkSyncedFlip(t, what, newSample(t, written, records), log, logSize+rng.IntN(synced-logSize), rng.IntN(8)) {
				reported++
			}
			flipped++
			continue
		}

		res := read(t, bytes.NewReader(log))
		if res.err != io.EOF {
			t.Fatalf("%s: ended with %v; want io.EOF", what, res.err)
		}
		if len(res.records) < syncedRecords {
			t.Fatalf("%s: read %d records; %d were synced", what, len(res.records), syncedRecords)
		}
		checkRecords(t, what, res.records, records[:len(res.records)])
	}
	t.Logf("%d trials flipped a synced bit, %d of them reported", flipped, reported)
}

// checkSyncedFlip flips bit bit of byte b of log, what a crash left of the
// log in s, b being a synced byte, and checks what the Reader makes of it:
// corruption at the damaged fragment if a COMMIT or END of s that survived
// intact records a sync past it, else a torn tail there. It reports whether
// the damage was corruption.
func checkSyncedFlip(t *testing.T, what string, s sample, log []byte, b, bit int) bool {
	t.Helper()
	var hit frag
	for _, f := range s.frags {
		if f.off <= b && b < f.off+f.size {
			hit = f
		}
	}
	if hit.padding {
		b, hit = hit.off-1, frag{} // the padding follows a fragment: hit its last byte
		for _, f := range s.frags {
			if f.off <= b && b < f.off+f.size {
				hit = f
			}
		}
	}
	claimed := false
	for _, f := range s.frags {
		if f.isCommit() && f.off > hit.off && f.synced() > hit.off && f.off+f.size <= len(log) &&
			bytes.Equal(log[f.off:f.off+f.size], s.log[f.off:f.off+f.size]) {
			claimed = true
		}
	}
	damaged := bytes.Clone(log)
	damaged[b] ^= 1 << bit
	res := read(t, bytes.NewReader(damaged))
	what = fmt.Sprintf("%s, bit %d of byte %d (%s at %d) flipped", what, bit, b, typeName(hit.typ), hit.off)
	k := s.recordsBefore(hit.off)
	checkRecords(t, what, res.records, s.records[:k])
	if !claimed {
		s.checkTorn(t, what, res, k)
		return false
	}
	var ce *base.CorruptionError
	if !errors.As(res.err, &ce) || !errors.Is(res.err, base.ErrCorruption) || ce.File != testFile || ce.Offset != int64(hit.off) {
		t.Fatalf("%s: ended with %v; want corruption at offset %d", what, res.err, hit.off)
	}
	return true
}

// TestSyncedDamageBeforeTornWrite is issue 9's defect 5 where framing v2
// before seals failed: in a log of one block, a record synced and claimed
// by a later COMMIT is damaged, and the last write is torn, so no COMMIT
// ends the file. The claim lies in the damaged record's own block, after
// the damage; the reader must find it and report corruption, not cut the
// log and silently drop the synced records.
func TestSyncedDamageBeforeTornWrite(t *testing.T) {
	f := &memFile{}
	w := NewWriter(f)
	var offsets []int64
	for i, rec := range sizedRecords(100, 200, 300) {
		off, err := w.WriteRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, off)
		if i < 2 {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Tear the last write in the middle of its record, and flip a bit in
	// the payload of the first record: the second group's COMMIT claims it.
	log := bytes.Clone(f.data.Bytes()[:offsets[2]+150])
	log[offsets[0]+50] ^= 0x08
	res := read(t, bytes.NewReader(log))
	var ce *base.CorruptionError
	if len(res.records) != 0 || !errors.As(res.err, &ce) || !errors.Is(res.err, base.ErrCorruption) ||
		ce.File != testFile || ce.Offset != offsets[0] {
		t.Fatalf("read %d records, ended with %v; want corruption in %s at offset %d",
			len(res.records), res.err, testFile, offsets[0])
	}
}

// TestImitatedCommitIsNoClaim writes a record whose value holds intact
// COMMIT fragments that claim the whole log as synced, as a user's value
// can: one of framing v2 before seals, one sealed with another log's salt,
// and one sealed with this log's salt for another offset. None may pass as
// a claim: after a torn write that ends right after them, and after damage
// to unsynced bytes before them, the log must end in a torn tail that keeps
// the synced records. A fourth imitation, sealed with this log's salt for
// the offset where it stands (which no user can make), must pass: it shows
// that the other three are well formed but for their seal.
func TestImitatedCommitIsNoClaim(t *testing.T) {
	const salt, huge = 0x0123456789abcdef, 1 << 40
	old := binary.LittleEndian.AppendUint64(nil, huge)
	old = appendFragment(nil, typeCommit, binary.LittleEndian.AppendUint32(old, 1))
	for _, tc := range []struct {
		name      string
		imitation func(off int64) []byte // the imitation that lands at log offset off
		claims    bool
	}{
		{"unsealed", func(int64) []byte { return old }, false},
		{"another log's salt", func(off int64) []byte { return commitFragment(salt+1, off, huge, 1) }, false},
		{"another offset", func(off int64) []byte { return commitFragment(salt, off-1000, huge, 1) }, false},
		{"this log's seal", func(off int64) []byte { return commitFragment(salt, off, huge, 1) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &memFile{}
			w := newWriter(f, salt)
			synced := sizedRecords(100, 200)
			for _, rec := range synced {
				if _, err := w.WriteRecord(rec); err != nil {
					t.Fatal(err)
				}
				if err := w.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			// The value's payload starts after the 50-byte record's FULL
			// fragment and its own header.
			first := w.Size()
			at := first + headerSize + 50 + headerSize + 30
			value := append(pattern(7, 30), tc.imitation(at)...)
			end := at + int64(len(value)) - 30 // just after the imitation
			value = append(value, pattern(8, 100)...)
			if err := w.WriteGroup([][]byte{pattern(6, 50), value}, false); err != nil {
				t.Fatal(err)
			}
			written := f.data.Bytes()
			if !bytes.Equal(written[at-30:at+int64(len(value))-30-100], value[:len(value)-100]) {
				t.Fatal("the imitation is not where the test expects it")
			}
			damaged := bytes.Clone(written)
			damaged[first+headerSize+10] ^= 1 // in the unsynced 50-byte record
			for _, c := range []struct {
				what string
				log  []byte
				keep int // records before the damage
			}{
				{"torn after the imitation", written[:end], 3}, // the 50-byte record is whole
				{"unsynced record damaged", damaged, 2},
			} {
				res := read(t, bytes.NewReader(c.log))
				if tc.claims {
					if !errors.Is(res.err, base.ErrCorruption) {
						t.Fatalf("%s: ended with %v; want corruption", c.what, res.err)
					}
					continue
				}
				checkRecords(t, c.what, res.records, append(synced, pattern(6, 50))[:c.keep])
				if res.err != io.EOF || !res.torn {
					t.Fatalf("%s: ended with %v, torn %t; want a torn tail", c.what, res.err, res.torn)
				}
			}
		})
	}
}

// TestEndedLogFlips: in a log ended with MarkEnd after synced groups, as
// the DB ends a WAL at a memtable rotation, every single-bit flip before
// the END is corruption, at or before the flipped byte, since the END
// claims every byte before it; a flip in the END is a torn tail that keeps
// every record. Nothing reads as a torn tail that loses a record. The log
// spans two blocks, with a record in two fragments; every bit of its first
// 64 and last 160 bytes (the last group, of two records, and the END) is
// flipped, and one bit of every 97th byte between.
func TestEndedLogFlips(t *testing.T) {
	records := sizedRecords(100, 40000, 10, 0, 30)
	log := groupedLog(t, records, []int{1, 1, 1, 2}, true, true)
	end := len(log) - endSize
	for i := range len(log) * 8 {
		if i/8 >= 64 && i/8 < len(log)-160 && (i/8%97 != 0 || i%8 != i/8/97%8) {
			continue
		}
		b := bytes.Clone(log)
		b[i/8] ^= 1 << (i % 8)
		res := read(t, bytes.NewReader(b))
		var ce *base.CorruptionError
		switch {
		case i/8 >= end:
			if res.err != io.EOF || !res.torn || res.ended {
				t.Fatalf("bit %d of the END flipped: ended with %v, torn %v, Ended %v; want a torn tail", i, res.err, res.torn, res.ended)
			}
			checkRecords(t, fmt.Sprintf("bit %d of the END flipped", i), res.records, records)
		case !errors.As(res.err, &ce):
			t.Fatalf("bit %d of byte %d (before the END at %d) flipped: ended with %v after %d records, want corruption", i%8, i/8, end, res.err, len(res.records))
		case ce.Offset > int64(i/8):
			t.Fatalf("bit %d of byte %d flipped: corruption at offset %d, after it", i%8, i/8, ce.Offset)
		}
	}
}
