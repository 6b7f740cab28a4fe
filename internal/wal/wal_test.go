package wal

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/vfs"
)

const testFile = "000001.log"

// testSalt is the salt of the logs the tests write with writeSteps, so that
// their bytes are the same in every run.
const testSalt = 0x5a175a175a175a17

// TestDataDriven runs the worked examples in testdata/. The commands:
//
//	write                 write a new log with a Writer, one input line a
//	                      step: "sync" (Writer.Sync), "end" (Writer.MarkEnd)
//	                      or a group of records separated by spaces, each a
//	                      decimal size (filled with a pattern) or a quoted
//	                      string without spaces; a group of one is written
//	                      with WriteRecord, a larger one with WriteGroup.
//	                      Prints the fragment layout: offset, type, payload
//	                      length, and what a LOG, COMMIT or END says.
//	                      The log's salt is testSalt
//	write-v1              write a version 1 log, as the previous Writer did:
//	                      one record per line
//	hexdump               the log's bytes, 16 to a line
//	truncate size=N       keep the first N bytes
//	flip offset=N bit=B   flip one bit
//	zero offset=N len=L   overwrite L bytes with zeros
//	extend zeros=N        append N zero bytes
//	append-fragment type=T payload=S
//	                      append an intact fragment of type T (a name or a
//	                      number) at the end of the file, as no Writer would;
//	                      payload is a string, or hex:... bytes; a FULL or
//	                      FULL1 one counts as a written record
//	append-commit synced=N records=K [salt=S]
//	                      append a COMMIT at the end of the file, sealed
//	                      with salt S (default testSalt), as no Writer would
//	read                  read the log back: each record's index, offset and
//	                      size, then how the log ended
//
// read fails the test if a record differs from the one written at its index.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var log []byte
		var records [][]byte
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "write":
				var steps []step
				for _, line := range lines(d.Input) {
					steps = append(steps, parseStep(t, line, len(steps)))
				}
				log, records = writeSteps(t, steps)
				return dump(log)
			case "write-v1":
				records = records[:0]
				for _, line := range lines(d.Input) {
					records = append(records, parseRecord(t, line, len(records)))
				}
				log = writeV1(records)
				return dump(log)
			case "hexdump":
				var b strings.Builder
				for i := 0; i < len(log); i += 16 {
					fmt.Fprintf(&b, "%04x  % x\n", i, log[i:min(i+16, len(log))])
				}
				return b.String()
			case "truncate":
				var size int
				d.ScanArgs(t, "size", &size)
				log = log[:size]
			case "flip":
				var off, bit int
				d.ScanArgs(t, "offset", &off)
				d.ScanArgs(t, "bit", &bit)
				log[off] ^= 1 << bit
			case "zero":
				var off, n int
				d.ScanArgs(t, "offset", &off)
				d.ScanArgs(t, "len", &n)
				clear(log[off : off+n])
			case "extend":
				var n int
				d.ScanArgs(t, "zeros", &n)
				log = append(log, make([]byte, n)...)
			case "append-fragment":
				var typ, payload string
				d.ScanArgs(t, "type", &typ)
				d.ScanArgs(t, "payload", &payload)
				p := []byte(payload)
				if h, ok := strings.CutPrefix(payload, "hex:"); ok {
					var err error
					if p, err = hex.DecodeString(h); err != nil {
						t.Fatal(err)
					}
				}
				log = appendFragment(log, parseType(t, typ), p)
				if tp := parseType(t, typ); tp == typeFull || tp == typeFull1 {
					records = append(records, p)
				}
			case "append-commit":
				var synced, n int
				d.ScanArgs(t, "synced", &synced)
				d.ScanArgs(t, "records", &n)
				salt := uint64(testSalt)
				if d.HasArg("salt") {
					d.ScanArgs(t, "salt", &salt)
				}
				log = appendCommit(log, salt, int64(synced), n)
			case "read":
				return readAll(t, log, records)
			default:
				t.Fatalf("unknown command %q", d.Cmd)
			}
			return fmt.Sprintf("size %d\n", len(log))
		})
	})
}

func lines(input string) []string {
	if input == "" {
		return nil
	}
	return strings.Split(input, "\n")
}

// step is one call to a Writer: a group of records, a Sync or a MarkEnd.
type step struct {
	group [][]byte
	sync  bool
	end   bool
}

// parseStep parses a line of the write command; index is the line's number,
// which seeds the patterns of its records.
func parseStep(t *testing.T, line string, index int) step {
	switch line {
	case "sync":
		return step{sync: true}
	case "end":
		return step{end: true}
	}
	var s step
	for j, item := range strings.Fields(line) {
		s.group = append(s.group, parseRecord(t, item, 100*index+j))
	}
	return s
}

func parseRecord(t *testing.T, item string, index int) []byte {
	if strings.HasPrefix(item, `"`) {
		s, err := strconv.Unquote(item)
		if err != nil {
			t.Fatalf("record %s: %v", item, err)
		}
		return []byte(s)
	}
	n, err := strconv.Atoi(item)
	if err != nil {
		t.Fatalf("record %q: want a size or a quoted string", item)
	}
	return pattern(index, n)
}

// pattern returns the n-byte content of record i: different for every record
// and every offset in it, so that a record spliced from the wrong bytes shows.
func pattern(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*131 + j*7 + j>>8)
	}
	return b
}

func parseType(t *testing.T, s string) byte {
	for typ := byte(1); typ <= typeLast; typ++ {
		if typeName(typ) == s {
			return typ
		}
	}
	n, err := strconv.ParseUint(s, 10, 8)
	if err != nil {
		t.Fatalf("bad fragment type %q", s)
	}
	return byte(n)
}

// writeLog writes each record as a group of its own, synced, to a new log
// and returns the log's bytes.
func writeLog(t testing.TB, records [][]byte) []byte {
	t.Helper()
	var steps []step
	for _, rec := range records {
		steps = append(steps, step{group: [][]byte{rec}}, step{sync: true})
	}
	log, _ := writeSteps(t, steps)
	return log
}

// writeSteps runs steps with a Writer on a file in a MemFS and returns the
// file's bytes and the records written. It checks the offsets WriteRecord
// returns against walk's view, and Size against the file.
func writeSteps(t testing.TB, steps []step) (log []byte, records [][]byte) {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.Create(testFile)
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(f, testSalt)
	var offsets []int64
	for _, s := range steps {
		switch {
		case s.sync:
			err = w.Sync()
		case s.end:
			err = w.MarkEnd()
		case len(s.group) == 1:
			var off int64
			off, err = w.WriteRecord(s.group[0])
			offsets = append(offsets, off)
		default:
			err = w.WriteGroup(s.group, false)
			offsets = append(offsets, -1)
		}
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, s.group...)
	}
	size := w.Size()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if f, err = fs.Open(testFile); err != nil {
		t.Fatal(err)
	}
	log = make([]byte, size+1)
	n, err := f.ReadAt(log, 0)
	if int64(n) != size || err != io.EOF {
		t.Fatalf("Size() = %d, but the file holds %d bytes (%v)", size, n, err)
	}
	log = log[:n]
	starts := recordStarts(log)
	if len(starts) != len(records) {
		t.Fatalf("wrote %d records; the log holds %d", len(records), len(starts))
	}
	k := 0
	for _, s := range steps {
		if len(s.group) == 1 && offsets[0] != starts[k] {
			t.Fatalf("WriteRecord returned offset %d; the record starts at %d", offsets[0], starts[k])
		}
		if len(s.group) > 0 {
			offsets = offsets[1:]
		}
		k += len(s.group)
	}
	return log, records
}

// writeV1 returns a version 1 log of records, framed as the previous Writer
// framed them (the hexdump in testdata/v1_framing shows its bytes).
func writeV1(records [][]byte) []byte {
	var log []byte
	for _, p := range records {
		for first := true; ; first = false {
			if left := blockSize - len(log)%blockSize; left < headerSize {
				log = append(log, make([]byte, left)...)
			}
			n := min(len(p), blockSize-len(log)%blockSize-headerSize)
			last := n == len(p)
			typ := fragmentType(first, last) - (typeFull - typeFull1)
			log = appendFragment(log, typ, p[:n])
			p = p[n:]
			if last {
				break
			}
		}
	}
	return log
}

// appendFragment appends an intact fragment to log, ignoring block
// boundaries.
func appendFragment(log []byte, typ byte, payload []byte) []byte {
	h := len(log)
	log = binary.LittleEndian.AppendUint32(log, 0)
	log = binary.LittleEndian.AppendUint16(log, uint16(len(payload)))
	log = append(log, typ)
	log = append(log, payload...)
	binary.LittleEndian.PutUint32(log[h:], checksum(log[h+4:]))
	return log
}

// appendCommit appends to log a COMMIT of n records and synced offset
// synced, sealed with salt for the offset where it lands, ignoring block
// boundaries.
func appendCommit(log []byte, salt uint64, synced int64, n int) []byte {
	return append(log, commitFragment(salt, int64(len(log)), synced, n)...)
}

// commitFragment returns an intact COMMIT of n records and synced offset
// synced, sealed with salt for log offset off.
func commitFragment(salt uint64, off, synced int64, n int) []byte {
	p := binary.LittleEndian.AppendUint64(nil, uint64(synced))
	p = binary.LittleEndian.AppendUint32(p, uint32(n))
	var head [3]byte
	binary.LittleEndian.PutUint16(head[:], commitSize-headerSize)
	head[2] = typeCommit
	p = binary.LittleEndian.AppendUint64(p, sealOf(salt, off, append(head[:], p...)))
	return appendFragment(nil, typeCommit, p)
}

// frag is one fragment, or one run of padding, of a well-formed log, as
// parsed by walk independently of Reader.
type frag struct {
	off, size int // size includes the header
	typ       byte
	padding   bool
	payload   []byte
}

// isStart reports whether f is the first fragment of a record.
func (f frag) isStart() bool {
	switch f.typ {
	case typeFull, typeFirst, typeFull1, typeFirst1:
		return !f.padding
	}
	return false
}

// isCommit reports whether f is a COMMIT or an END.
func (f frag) isCommit() bool { return !f.padding && (f.typ == typeCommit || f.typ == typeEnd) }

// synced returns the synced offset of a COMMIT or END.
func (f frag) synced() int { return int(binary.LittleEndian.Uint64(f.payload)) }

// walk splits a log written by a Writer (of either version, told by its
// first fragment) into its fragments and padding. It stops at the first
// bytes that are not an intact fragment and returns their offset and what is
// wrong there ("" if none).
func walk(log []byte) (frags []frag, stop int, problem string) {
	room := commitSize
	if len(log) > headerSize && log[6] >= typeFull1 && log[6] <= typeLast1 {
		room = headerSize
	}
	pos := 0
	for pos < len(log) {
		if left := blockSize - pos%blockSize; left < room {
			n := min(left, len(log)-pos)
			frags = append(frags, frag{off: pos, size: n, padding: true})
			pos += n
			continue
		}
		if len(log)-pos < headerSize {
			return frags, pos, "header cut off"
		}
		n := headerSize + int(binary.LittleEndian.Uint16(log[pos+4:]))
		if pos%blockSize+n > blockSize || pos+n > len(log) {
			return frags, pos, "bad length"
		}
		end := pos + n
		if checksum(log[pos+4:end]) != binary.LittleEndian.Uint32(log[pos:]) {
			return frags, pos, "bad checksum"
		}
		frags = append(frags, frag{off: pos, size: n, typ: log[pos+6], payload: log[pos+headerSize : end]})
		pos = end
	}
	return frags, pos, ""
}

// recordStarts returns the offsets of the FULL and FIRST fragments of log.
func recordStarts(log []byte) []int64 {
	frags, _, _ := walk(log)
	var starts []int64
	for _, f := range frags {
		if f.isStart() {
			starts = append(starts, int64(f.off))
		}
	}
	return starts
}

// dump prints the layout of log: offset, type and payload length of each
// fragment (with what a LOG, COMMIT or END says),
// the padding, and where the bytes stop making sense.
func dump(log []byte) string {
	var b strings.Builder
	frags, stop, problem := walk(log)
	for _, f := range frags {
		if f.padding {
			fmt.Fprintf(&b, "%6d  padding  %d\n", f.off, f.size)
			continue
		}
		fmt.Fprintf(&b, "%6d  %-7s  %d", f.off, typeName(f.typ), f.size-headerSize)
		switch {
		case f.typ == typeLog && len(f.payload) == logSize-headerSize:
			fmt.Fprintf(&b, "  version %d, salt %#x", binary.LittleEndian.Uint32(f.payload), binary.LittleEndian.Uint64(f.payload[4:]))
		case f.typ == typeCommit && len(f.payload) == commitSize-headerSize:
			fmt.Fprintf(&b, "  synced %d, %d records", f.synced(), binary.LittleEndian.Uint32(f.payload[8:]))
		case f.typ == typeEnd && len(f.payload) == endSize-headerSize:
			fmt.Fprintf(&b, "  synced %d", f.synced())
		}
		b.WriteString("\n")
	}
	if problem != "" {
		fmt.Fprintf(&b, "%6d  %s\n", stop, problem)
	}
	fmt.Fprintf(&b, "size %d\n", len(log))
	return b.String()
}

// readAll reads log with a Reader and prints what it returns. Records must
// be the ones written, in order.
func readAll(t *testing.T, log []byte, written [][]byte) string {
	var b strings.Builder
	r := NewReader(bytes.NewReader(log), testFile)
	for i := 0; ; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			off, torn := r.TornTail()
			switch {
			case torn:
				cut := ""
				if !r.CutOff() {
					cut = ", nothing cut off"
				}
				fmt.Fprintf(&b, "EOF: torn tail, the intact log ends at offset %d%s\n", off, cut)
			case r.Ended():
				b.WriteString("EOF: end marker\n")
			default:
				b.WriteString("EOF\n")
			}
			break
		}
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error is not corruption: %v", err)
			}
			fmt.Fprintf(&b, "error: %v\n", err)
			break
		}
		if i >= len(written) || !bytes.Equal(rec, written[i]) {
			t.Errorf("record %d at offset %d (%d bytes) is not the record written", i, r.Offset(), len(rec))
		}
		fmt.Fprintf(&b, "record %d: offset %d, %d bytes\n", i, r.Offset(), len(rec))
	}
	return b.String()
}
