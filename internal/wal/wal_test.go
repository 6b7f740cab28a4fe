package wal

import (
	"bytes"
	"encoding/binary"
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

// TestDataDriven runs the worked examples in testdata/. The commands:
//
//	write                 write a new log: one record per input line, either
//	                      a decimal size (filled with a pattern) or a quoted
//	                      string; prints the fragment layout: offset, type,
//	                      payload length
//	hexdump               the log's bytes, 16 to a line
//	truncate size=N       keep the first N bytes
//	flip offset=N bit=B   flip one bit
//	zero offset=N len=L   overwrite L bytes with zeros
//	extend zeros=N        append N zero bytes
//	append-fragment type=T payload=S
//	                      append an intact fragment of type T (a name or a
//	                      number) at the end of the file, as no Writer would;
//	                      a FULL one counts as a written record
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
				records = records[:0]
				if d.Input != "" {
					for _, line := range strings.Split(d.Input, "\n") {
						records = append(records, parseRecord(t, line, len(records)))
					}
				}
				log = writeLog(t, records)
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
				log = appendFragment(log, parseType(t, typ), []byte(payload))
				if parseType(t, typ) == typeFull {
					records = append(records, []byte(payload))
				}
			case "read":
				return readAll(t, log, records)
			default:
				t.Fatalf("unknown command %q", d.Cmd)
			}
			return fmt.Sprintf("size %d\n", len(log))
		})
	})
}

func parseRecord(t *testing.T, line string, index int) []byte {
	if strings.HasPrefix(line, `"`) {
		s, err := strconv.Unquote(line)
		if err != nil {
			t.Fatalf("record %s: %v", line, err)
		}
		return []byte(s)
	}
	n, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("record %q: want a size or a quoted string", line)
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
	for typ := byte(typeFull); typ <= typeLast; typ++ {
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

// writeLog writes records with a Writer to a file in a MemFS and returns the
// file's bytes. It checks the offsets WriteRecord returns against dump's view.
func writeLog(t testing.TB, records [][]byte) []byte {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.Create(testFile)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f)
	var offsets []int64
	for _, rec := range records {
		off, err := w.WriteRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, off)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	size := w.Size()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if f, err = fs.Open(testFile); err != nil {
		t.Fatal(err)
	}
	log := make([]byte, size+1)
	n, err := f.ReadAt(log, 0)
	if int64(n) != size || err != io.EOF {
		t.Fatalf("Size() = %d, but the file holds %d bytes (%v)", size, n, err)
	}
	log = log[:n]
	if got := recordStarts(log); fmt.Sprint(got) != fmt.Sprint(offsets) {
		t.Fatalf("WriteRecord returned offsets %v; the records start at %v", offsets, got)
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

// frag is one fragment, or one run of padding, of a well-formed log, as
// parsed by walk independently of Reader.
type frag struct {
	off, size int // size includes the header
	typ       byte
	padding   bool
}

// walk splits a log written by a Writer into its fragments and padding. It
// stops at the first bytes that are not an intact fragment and returns their
// offset and what is wrong there ("" if none).
func walk(log []byte) (frags []frag, stop int, problem string) {
	pos := 0
	for pos < len(log) {
		if left := blockSize - pos%blockSize; left < headerSize {
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
		frags = append(frags, frag{off: pos, size: end - pos, typ: log[pos+6]})
		pos = end
	}
	return frags, pos, ""
}

// recordStarts returns the offsets of the FULL and FIRST fragments of log.
func recordStarts(log []byte) []int64 {
	frags, _, _ := walk(log)
	var starts []int64
	for _, f := range frags {
		if f.typ == typeFull || f.typ == typeFirst {
			starts = append(starts, int64(f.off))
		}
	}
	return starts
}

// dump prints the layout of log: offset, type and payload length of each
// fragment, the padding, and where the bytes stop making sense.
func dump(log []byte) string {
	var b strings.Builder
	frags, stop, problem := walk(log)
	for _, f := range frags {
		if f.padding {
			fmt.Fprintf(&b, "%6d  padding  %d\n", f.off, f.size)
		} else {
			fmt.Fprintf(&b, "%6d  %-7s  %d\n", f.off, typeName(f.typ), f.size-headerSize)
		}
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
			if off, ok := r.TornTail(); ok {
				fmt.Fprintf(&b, "EOF: torn tail, the intact log ends at offset %d\n", off)
			} else {
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
