// Package wal frames opaque records in an append-only log file so that a
// crash in the middle of a write is recognised and cut off cleanly on
// recovery, while damage to what was synced is reported. The DB writes its
// batches to such a log (the write-ahead log) and its version edits to
// another (the MANIFEST); to this package both are just sequences of []byte.
//
// # Format
//
// A log is a sequence of 32 KiB (32768-byte) blocks; the last block may be
// short. Everything in it is stored as fragments, and a fragment never
// crosses a block boundary. A fragment is a 7-byte header and a payload:
//
//	offset  size    field
//	0       4       checksum, little-endian: the low 32 bits of xxhash64 over
//	                bytes 4 to 7+length of the fragment (length, type, payload)
//	4       2       length of the payload in bytes, little-endian
//	6       1       type
//	7       length  payload
//
// The checksum covers the length and the type as well as the payload, so a
// damaged header cannot pass as another intact fragment. It is truncated to
// 32 bits: a damaged fragment goes unnoticed with probability 2^-32, the same
// as with LevelDB's CRC-32C, at half the space of the full hash. An all-zero
// header (what a zero-filled tail reads as) never passes: type 0 is never
// written and its checksum does not match.
//
// # Version 2 (what Writer writes)
//
// Fragment types:
//
//	5   LOG     payload: version, uint32 little-endian, = 2; salt, uint64 LE
//	6   COMMIT  payload: synced offset, uint64 LE; record count, uint32 LE;
//	            seal, uint64 LE
//	7   END     payload: synced offset, uint64 LE, = the END's own offset;
//	            seal, uint64 LE
//	8   FULL    a whole record
//	9   FIRST   the first part of a record
//	10  MIDDLE  a middle part
//	11  LAST    the last part
//
// Record fragments have types of their own, distinct from version 1's, so
// that every intact fragment tells its version even when the LOG fragment is
// damaged. The log starts with a LOG fragment at offset 0 (19 bytes),
// written with the first group. Its salt is 8 random bytes (crypto/rand)
// drawn when the Writer is made, different in every log; nothing in the API
// returns it. Then come groups: a group is what one WriteGroup (or
// WriteRecord) call writes, in one write call to the file (or one store
// into its mapping, see NewMappedWriter): its records, and, when one is
// due, a COMMIT fragment (27 bytes) giving the number of records since the
// previous COMMIT and the synced offset, the log size that the
// Writer's last successful Sync covered when the group was written (0
// before any). Every byte before the synced offset is durable, so damage
// there is no torn write. A COMMIT is due at the end of the log's first
// group, of the first group after a Sync (the synced offset has moved), and
// of a group whose records reach a later 4 KiB page (claimPage, counted from
// offset 0) than the one the last COMMIT ends in; and Sync writes one,
// alone, for records written since the last COMMIT, so that a synced log
// ends in a COMMIT. So a claim is written after its Sync and again in every
// later page that a group reaches, as when every group ended with a COMMIT:
// a power loss that takes a page, and the claims in it, leaves the claim of
// the next page a group reached. (A COMMIT after every group also repeated
// the claim within a page; pages are what a power loss keeps or loses.)
// Meanwhile the groups written between two Syncs pay for about one COMMIT
// a page, not one each: with one writer and small records, a COMMIT per
// group took a sixth of the log. Logs written before this rule ended every
// group with a COMMIT; both read the same way, and the format is the same:
// the reader never required a COMMIT after every write. A COMMIT ends what
// it counts, rather than starting it, so that a log whose last write
// completed ends in whole records.
//
// The seal of a COMMIT or END is the xxhash64 of, in order: the log's salt
// (8 bytes LE), the fragment's own offset in the log (8 bytes LE), and the
// fragment's bytes from offset 4 up to the seal (length, type, synced offset
// and, for a COMMIT, record count). It makes these two fragments impossible
// to imitate: a user's value may hold bytes that look like an intact COMMIT
// (a valid checksum is easy to compute), but its seal must match a salt the
// user cannot learn and the offset where it stands, so a COMMIT of another
// log, or one copied from elsewhere in this log, does not pass either. For a
// fixed offset and fields, xxhash64 maps the salt one-to-one onto the seal
// (the input, under 32 bytes, takes its short path: the salt is the first
// 8-byte lane, and every step after it, the rounds, the mixing of later
// lanes and the final avalanche, is a bijection of the 64-bit state), so a
// guessed seal passes with probability exactly 2^-64, and a damaged salt
// fails every seal.
//
// A record that fits in what is left of the current block is one FULL
// fragment; an empty record is a FULL fragment of length 0. A longer record
// is a FIRST fragment that fills the current block, a MIDDLE fragment for
// each whole block after it, and a LAST fragment for the rest. When fewer
// than 27 bytes (a COMMIT's size) are left in a block, the writer fills them
// with zeros and the next fragment starts the next block. So every block
// starts with a fragment header, and the largest payload a fragment can
// carry is 32761 bytes.
//
// A log closed cleanly ends with an END fragment (23 bytes), written by
// MarkEnd once a Sync covers every byte before it, and synced itself: it
// claims every byte before it as durable. Nothing follows it. The DB ends
// every WAL this way before it creates the next one (EndClose), and at
// Close; version 2 logs written before that rule end a WAL only at Close.
//
// For example, a group of records of 100 and 40000 bytes written to a new
// log lays out as
//
//	offset  0      LOG     header + 12 bytes (version 2, salt)
//	offset  19     FULL    header + 100 bytes
//	offset  126    FIRST   header + 32635 bytes (the rest of block 0)
//	offset  32768  LAST    header + 7365 bytes
//	offset  40140  COMMIT  header + 20 bytes (synced offset 0, 2 records)
//
// and the log is 40167 bytes long; MarkEnd then appends an END at offset
// 40167 (synced offset 40167), and the log is 40190 bytes long.
//
// # Recovery (version 2)
//
// A crash leaves the log ending in part of the writes since the last Sync: a
// prefix of them, or, when the file system writes pages back out of order,
// some of their pages and zeros in place of others. The reader reads
// fragments in order until the first bad one (damaged, cut off, zeroed, or a
// COMMIT or END whose seal does not match) at offset o. Damage at o is
// corruption only if a COMMIT or END written later records a synced offset
// greater than o: o was durable before that fragment was written, so its
// damage is no torn write. Otherwise the log is cut at o, a torn tail, and
// the records before it are kept.
//
// To find those later fragments the reader tries every byte offset after o,
// in o's block and beyond, and takes only a COMMIT or END whose checksum and
// seal both match there. Payload bytes cannot imitate one (see the seal), so
// neither a user's value nor a torn write's last bytes can raise a false
// alarm; and damage anywhere, even in the log's last group or in a log of
// one block, is reported as soon as any later COMMIT or END that claims it
// survives. What still reads as a torn tail is damage that no surviving
// COMMIT or END claims. A record's bytes are claimed only by a COMMIT
// written after the Sync that covered them, or by the END (a COMMIT records
// the last Sync before it was written). So damage to bytes after the last
// claim that survives, synced or not, is cut off: if a Sync covered them,
// nothing written after that Sync survived to say so, and the damage looks
// like a torn write. With claims repeated once a page (see above), that is
// damage to the last page a claim reached, or to anything after it. A log
// that ends in an END has no such tail: the END claims every byte before
// it, so damage anywhere before it is corruption, and damage to the END
// itself reads as a torn tail that cuts off the END and nothing else.
//
// Random bytes at a given offset pass as a sealed COMMIT or END only if
// their type and length bytes are right (2 of 2^24 values), their checksum
// matches (2^-32) and their seal matches (2^-64): about 2^-119 per offset
// tried, and below 2^-93 for all the offsets of a 64 MiB log. A user who
// fills values with imitations, each a guess at the seal, has a 2^-64 chance
// per imitation, below 2^-42 for a 64 MiB log packed with them.
//
// When the LOG fragment itself is bad, the salt may be damaged. The reader
// takes the salt field as it stands, whatever the version field reads (a
// damaged version leaves the salt intact), and looks for sealed fragments
// as above: with a damaged salt the seal of every fragment of the log fails
// (the salt maps one-to-one onto the seal), so this finds claims only when
// the salt is intact, and never invents one (nor does the zero salt of a
// log whose first page never reached the disk). If that finds no claim, it falls back
// on the fragments the writer put at fixed places: at offset 19, just after
// the LOG fragment (whose size is fixed), and at the start of every block
// after block 0 (the writer starts every block with a fragment), it follows
// the chain of intact fragments, each one's length giving the next one's
// offset, until a bad fragment or the end of the block, and takes a COMMIT
// or END on a chain as a claim without checking its seal. That is sound
// without the salt, since a chain starts at a header the writer wrote and
// steps from header to header, never into payload bytes; a file system
// that left stale bytes of another file there, rather than zeros, could
// give a false alarm, never lost data. So damage to the salt is reported
// whenever a claim past offset 0 survives on those chains; what still
// reads as a torn tail is damage to the salt of a log never synced (which
// a torn first write could leave) or damage that also breaks the chains
// before their claims.
//
// # Version 1 (read, no longer written)
//
// Version 1 logs, written before groups existed, have no LOG fragment: they
// start with a record fragment of type 1 FULL, 2 FIRST, 3 MIDDLE or 4 LAST,
// laid out as above without LOG, COMMIT or END fragments, and with a block's
// last 1 to 6 bytes as zero padding (a record can start with 7 bytes left).
// They are read with the version 1 rule, described on Reader.
//
// A later version starts its logs with a LOG fragment giving its number. A
// log whose LOG fragment gives a version other than 2 is refused with a
// corruption error naming that version; a reader never guesses at a format
// it does not know.
package wal

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/shale-db/shale/vfs"
)

const (
	blockSize  = 32 << 10
	headerSize = 7

	// claimPage is the span within which a Writer repeats its last claim:
	// a group that reaches a later claimPage-aligned page than the last
	// COMMIT ends with one (see the package doc). It is the page size of
	// the file systems shale runs on, the unit in which a power loss keeps
	// or loses what was written.
	claimPage = 4 << 10

	// version is the format version Writer writes, in the LOG fragment.
	version = 2

	sealSize   = 8
	logSize    = headerSize + 4 + 8            // a LOG fragment
	commitSize = headerSize + 8 + 4 + sealSize // a COMMIT fragment
	endSize    = headerSize + 8 + sealSize     // an END fragment
)

// Fragment types. 0 is never written.
const (
	// Version 1.
	typeFull1   = 1
	typeFirst1  = 2
	typeMiddle1 = 3
	typeLast1   = 4

	// Version 2.
	typeLog    = 5
	typeCommit = 6
	typeEnd    = 7
	typeFull   = 8
	typeFirst  = 9
	typeMiddle = 10
	typeLast   = 11
)

// minRoom returns the fewest bytes a block must have left for a fragment to
// start there in a log of version v; fewer are padding.
func minRoom(v int) int {
	if v == 2 {
		return commitSize
	}
	return headerSize
}

// checksum returns the checksum of a fragment given its bytes from offset 4
// (length, type and payload).
func checksum(b []byte) uint32 { return uint32(xxhash.Sum64(b)) }

// sealOf returns the seal of the COMMIT or END fragment at log offset off in
// a log salted with salt, given the fragment's bytes from offset 4 up to the
// seal. It does not allocate.
func sealOf(salt uint64, off int64, b []byte) uint64 {
	var in [8 + 8 + 3 + commitSize - headerSize - sealSize]byte
	binary.LittleEndian.PutUint64(in[0:], salt)
	binary.LittleEndian.PutUint64(in[8:], uint64(off))
	n := copy(in[16:], b)
	return xxhash.Sum64(in[:16+n])
}

// maxRetainedBuf caps the buffer a Writer keeps between groups, so that one
// huge group does not pin its size in memory for the life of the log.
const maxRetainedBuf = 1 << 20

var (
	errClosed = errors.New("wal: writer is closed")
	errEnded  = errors.New("wal: log ended: nothing may follow its end marker")
)

// Writer appends records to a log. It is not safe for concurrent use: the
// DB's commit leader is its only user at a time.
//
// Each group of records, with its COMMIT if one is due and any padding,
// goes to the file in one f.Write call (or one store into the file's
// mapping, or one WriteAt once the mapping was refused; see
// NewMappedWriter), so a group commit costs one write and one
// Sync (tell WriteGroup a Sync follows, or Sync writes the group's COMMIT
// in a second call). After a write, store or Sync of the file fails, the
// Writer refuses all further writes and returns that error: the file may
// end in part of a group, and appending more after it would turn a torn
// tail into corruption in the middle of the log.
type Writer struct {
	f vfs.File
	// m is set by NewMappedWriter: groups are stored through f's mapping,
	// and Close cuts the zeros allocated past them. Once the kernel has
	// refused a window (refused), groups are written with m.WriteAt; once
	// MarkEnd has cut those zeros (cut), the end marker is too, and Close
	// cuts nothing.
	m       vfs.Mapper
	refused bool
	cut     bool
	salt    uint64     // in the LOG fragment; seals the COMMIT and END fragments
	buf     []byte     // the group being framed; reused
	size    int64      // bytes written to f
	stored  int64      // the part of size stored through the mapping
	synced  int64      // bytes the last successful Sync made durable
	err     error      // sticky
	wb      *writeback // nil if f cannot start a writeback

	// The last COMMIT written: the synced offset it recorded (-1 before
	// any) and the log offset where it ends; and the records written
	// since, which the next COMMIT counts (see commitDue).
	committedSynced int64
	committedEnd    int64
	uncommitted     int
}

// NewWriter returns a Writer that appends to f, which must be empty: block
// boundaries are counted from offset 0. It draws the log's random salt.
func NewWriter(f vfs.File) *Writer {
	var b [8]byte
	rand.Read(b[:]) // never fails: the runtime aborts rather than return an error
	return newWriter(f, binary.LittleEndian.Uint64(b[:]))
}

// NewMappedWriter returns a Writer like NewWriter's that stores each group
// through a shared mapping of f when f is a vfs.Mapper (and the file system
// can allocate ahead of the stores), rather than writing it with write(2):
// no system call per group, the same bytes in the file, and the same
// promise, since a stored group is the kernel's as a written one is (a
// process crash keeps it; Sync makes it durable). Until Close the file ends
// in zeros allocated past the last group, which a Reader takes for a torn
// tail that cuts nothing (see Reader.CutOff); Close cuts them off.
//
// If the kernel refuses to map a window (vfs.ErrMappingRefused: the
// process is at its limit of mappings), that group and the rest of the log
// are written with pwrite(2) at their offsets instead, the same bytes, and
// Close still cuts the zeros; a new log tries the mapping again.
// MappingRefusals counts such logs.
func NewMappedWriter(f vfs.File) *Writer {
	w := NewWriter(f)
	w.m, _ = f.(vfs.Mapper)
	return w
}

// newWriter returns a Writer that appends to f with the given salt.
func newWriter(f vfs.File, salt uint64) *Writer {
	w := &Writer{f: f, salt: salt, committedSynced: -1}
	if ws, ok := f.(vfs.WritebackStarter); ok {
		w.wb = &writeback{ws: ws}
	}
	return w
}

// WriteRecord appends p as a group of one record and returns the offset at
// which the record starts (the offset Reader.Offset reports for it). The
// record is passed to the file but is not durable until Sync returns.
func (w *Writer) WriteRecord(p []byte) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	b, start := w.appendRecord(w.begin(w.buf[:0]), p)
	w.uncommitted++
	if err := w.writeGroup(b, false); err != nil {
		return 0, err
	}
	return start, nil
}

// WriteGroup appends recs as one group, in one write call to the file (or
// one store into its mapping). The records are not durable until Sync
// returns. With syncNext set (the caller calls Sync next) the group ends
// with a COMMIT even if none is due, so that Sync has none to write and the
// group costs one write call either way. An empty group writes nothing.
func (w *Writer) WriteGroup(recs [][]byte, syncNext bool) error {
	if w.err != nil || len(recs) == 0 {
		return w.err
	}
	b := w.begin(w.buf[:0])
	for _, p := range recs {
		b, _ = w.appendRecord(b, p)
	}
	w.uncommitted += len(recs)
	return w.writeGroup(b, syncNext)
}

// MarkEnd syncs the log (unless the last Sync covered all of it), appends
// an end marker that claims every byte before it as durable, and syncs
// again. A mapped log's allocated tail is cut first, so that the first
// fsync writes no page past the log's end (the mapping may have dirtied
// pages ahead of the stores, see vfs.Mapper) and the last one makes the
// log's final length durable; the end marker is then written with
// WriteAt. A reader then knows the log was closed cleanly, and that damage
// anywhere in it is no torn write. Nothing may be written after it; Close
// still closes the file.
func (w *Writer) MarkEnd() error {
	if w.err == nil && w.m != nil && !w.cut {
		if err := w.m.Cut(w.size); err != nil {
			w.err = fmt.Errorf("wal: cutting the log's allocated tail failed, log unusable: %w", err)
			return w.err
		}
		w.cut = true
	}
	if w.err == nil && w.synced < w.size {
		if err := w.Sync(); err != nil {
			return err
		}
	}
	if w.err != nil {
		return w.err
	}
	b, off := w.appendFragment(w.begin(w.buf[:0]), typeEnd, endSize-headerSize)
	b = binary.LittleEndian.AppendUint64(b, uint64(off))
	b = w.appendSeal(b, off)
	w.sum(b, off)
	if err := w.write(b); err != nil {
		return err
	}
	if err := w.Sync(); err != nil {
		return err
	}
	w.err = errEnded
	return nil
}

// begin appends the LOG fragment to b if nothing has been written yet.
func (w *Writer) begin(b []byte) []byte {
	if w.size > 0 || len(b) > 0 {
		return b
	}
	b, off := w.appendFragment(b, typeLog, logSize-headerSize)
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint64(b, w.salt)
	w.sum(b, off)
	return b
}

// commitDue reports whether a group whose records end at log offset end
// must end with a COMMIT (see the package doc): the log's first one, one
// after a Sync (the synced offset it records has moved), or one that
// reaches a later page than the last COMMIT's end.
func (w *Writer) commitDue(end int64) bool {
	return w.committedSynced != w.synced || (end-1)/claimPage > (w.committedEnd-1)/claimPage
}

// writeGroup writes b, a group of records, with a COMMIT if one is due or
// commit is set.
func (w *Writer) writeGroup(b []byte, commit bool) error {
	if !commit && !w.commitDue(w.size+int64(len(b))) {
		return w.write(b)
	}
	return w.writeCommitted(w.appendCommit(b))
}

// writeCommitted writes b, which ends with a COMMIT, and takes note of it.
func (w *Writer) writeCommitted(b []byte) error {
	if err := w.write(b); err != nil {
		return err
	}
	w.committedSynced, w.committedEnd, w.uncommitted = w.synced, w.size, 0
	return nil
}

// appendCommit appends a COMMIT fragment that records the synced offset and
// counts the records written since the last COMMIT (w.uncommitted).
func (w *Writer) appendCommit(b []byte) []byte {
	b, off := w.appendFragment(b, typeCommit, commitSize-headerSize)
	b = binary.LittleEndian.AppendUint64(b, uint64(w.synced))
	b = binary.LittleEndian.AppendUint32(b, uint32(w.uncommitted))
	b = w.appendSeal(b, off)
	w.sum(b, off)
	return b
}

// appendSeal appends the seal of the COMMIT or END fragment at log offset
// off, the last one in b (which starts at log offset w.size), whose fields
// are all in b.
func (w *Writer) appendSeal(b []byte, off int64) []byte {
	h := int(off - w.size)
	return binary.LittleEndian.AppendUint64(b, sealOf(w.salt, off, b[h+4:]))
}

// appendRecord appends the fragments of record p and returns the log offset
// of its first one.
func (w *Writer) appendRecord(b []byte, p []byte) ([]byte, int64) {
	var start int64
	for first := true; ; first = false {
		left := blockSize - int((w.size+int64(len(b)))%blockSize)
		if left < commitSize {
			left = blockSize // appendFragment pads to the next block
		}
		n := min(len(p), left-headerSize)
		last := n == len(p)
		var off int64
		b, off = w.appendFragment(b, fragmentType(first, last), n)
		b = append(b, p[:n]...)
		w.sum(b, off)
		if first {
			start = off
		}
		p = p[n:]
		if last {
			return b, start
		}
	}
}

// appendFragment appends the padding the block needs, if any, and the header
// of a fragment of type typ with an n-byte payload, which must fit in what
// is left of the block. It returns the log offset of the header; the caller
// appends the payload and then calls sum.
func (w *Writer) appendFragment(b []byte, typ byte, n int) ([]byte, int64) {
	if pos := int((w.size + int64(len(b))) % blockSize); blockSize-pos < commitSize {
		b = append(b, make([]byte, blockSize-pos)...)
	}
	off := w.size + int64(len(b))
	return append(b, 0, 0, 0, 0, byte(n), byte(n>>8), typ), off
}

// sum writes the checksum of the fragment at log offset off, the last one
// in b (which starts at log offset w.size).
func (w *Writer) sum(b []byte, off int64) {
	h := int(off - w.size)
	binary.LittleEndian.PutUint32(b[h:], checksum(b[h+4:]))
}

// write writes b, a whole group, to the file in one call.
func (w *Writer) write(b []byte) error {
	err := w.put(b)
	if cap(b) <= maxRetainedBuf {
		w.buf = b
	}
	if err != nil {
		w.err = fmt.Errorf("wal: write failed, log unusable: %w", err)
		return w.err
	}
	w.size += int64(len(b))
	w.startWriteback()
	return nil
}

// writebackStep is how far a log may run ahead of the writeback it has
// asked for (see startWriteback). Table writers push their files out at
// the same step, from the flush or compaction itself (the DB's
// outputSyncBytes); measured for the WAL on its own (see startWriteback).
const writebackStep = 1 << 20

// writeback starts the writeback of a log's bytes from a goroutine of its
// own, started with the first request and stopped by Close.
type writeback struct {
	ws      vfs.WritebackStarter
	started int64         // the offset writeback has been asked for up to
	ranges  chan [2]int64 // requests, [from, to); holds one
	done    chan struct{} // closed when the goroutine returns
}

// startWriteback, once writebackStep more bytes have been written (or
// stored through the mapping), asks for them to be written to the device
// without waiting (vfs.WritebackStarter), so that the device takes the log
// as it grows and the Sync that ends it (EndClose, at every memtable
// rotation, even under NoSync) finds less left to write. The request goes
// to the writeback's goroutine, since starting a writeback blocks while the
// device is busy; it waits there in a queue of one, and while that is full
// later writes ask again, for more. Whole pages only: the writer is still
// filling the last one. A writeback makes nothing durable and changes no
// byte, so its failure is ignored: Sync reports what went wrong.
//
// Measured on 1M-key fills (kvbench, one writer, ext4): the closing Syncs
// took 245-345 ms of a 3 s fill without it, 5-7 ms a log, all on the
// commit leader, and 140-180 ms with it. Started on the leader itself, the
// calls took about as long as they saved (at 256 KiB steps, 1.7 ms each
// on average, 13 ms at worst); from the goroutine, fills alternated with
// and without it ran 1.08x the ops/s (the median of eight pairs' ratios)
// with one writer and 1.02x (four pairs) with four. A step of 256 KiB ran
// at 0.82x (four pairs), slower than none; why was not measured. (A
// guess: a mapped log's first store to each page waits on the file
// system's journal, which the more frequent writebacks keep busier.)
func (w *Writer) startWriteback() {
	wb := w.wb
	if wb == nil {
		return
	}
	end := w.size / claimPage * claimPage
	if end-wb.started < writebackStep {
		return
	}
	if wb.ranges == nil {
		wb.ranges, wb.done = make(chan [2]int64, 1), make(chan struct{})
		go wb.run()
	}
	select {
	case wb.ranges <- [2]int64{wb.started, end}:
		wb.started = end
	default:
	}
}

func (wb *writeback) run() {
	defer close(wb.done)
	for r := range wb.ranges {
		wb.ws.StartWriteback(r[0], r[1]-r[0])
	}
}

// stop waits for the writeback's goroutine, if it runs, to finish its
// last request and return: the file must not be closed under it.
func (wb *writeback) stop() {
	if wb == nil || wb.ranges == nil {
		return
	}
	close(wb.ranges)
	<-wb.done
	wb.ranges = nil
}

// put hands b to the file at offset w.size: stored through the mapping, or
// written.
func (w *Writer) put(b []byte) error {
	if w.Mapped() {
		err := w.m.StoreAt(b, w.size)
		switch {
		case err == nil:
			w.stored += int64(len(b))
			return nil
		case errors.Is(err, vfs.ErrMappingRefused):
			w.refused = true // nothing stored: write it, and the rest, into the allocated file
			mappingRefusals.Add(1)
		case w.size == 0 && errors.Is(err, vfs.ErrNotMappable):
			w.m = nil // nothing stored yet: write the log with write(2)
		default:
			return err
		}
	}
	var n int
	var err error
	if w.m != nil {
		n, err = w.m.WriteAt(b, w.size)
	} else {
		n, err = w.f.Write(b)
	}
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// mappingRefusals counts the logs of this process whose mapping the kernel
// refused (see MappingRefusals).
var mappingRefusals atomic.Int64

// MappingRefusals returns how many logs, in this process, a mapped Writer
// (NewMappedWriter) went on writing with pwrite(2) because the kernel
// refused to map a window of their file (vfs.ErrMappingRefused).
func MappingRefusals() int64 { return mappingRefusals.Load() }

func fragmentType(first, last bool) byte {
	switch {
	case first && last:
		return typeFull
	case first:
		return typeFirst
	case last:
		return typeLast
	}
	return typeMiddle
}

// Sync makes every record written so far durable. If records follow the
// last COMMIT, it first writes a COMMIT for them, so that a synced log ends
// in a COMMIT: recovery takes a log that ends inside a group for one whose
// last write was torn, which only the newest log with bytes may be.
func (w *Writer) Sync() error {
	if w.err != nil {
		return w.err
	}
	if w.uncommitted > 0 {
		if err := w.writeCommitted(w.appendCommit(w.buf[:0])); err != nil {
			return err
		}
	}
	if err := w.f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages;
		// what the file holds is unknown, so nothing more may follow.
		w.err = fmt.Errorf("wal: sync failed, log unusable: %w", err)
		return w.err
	}
	w.synced = w.size
	return nil
}

// Mapped reports whether groups are stored through a mapping of the file
// (see NewMappedWriter) rather than written.
func (w *Writer) Mapped() bool { return w.m != nil && !w.refused && !w.cut }

// StoredSize returns the part of Size stored through the file's mapping
// rather than written: all of it for a mapped log, none for a written one,
// and the bytes before the refusal for a log whose mapping the kernel
// refused.
func (w *Writer) StoredSize() int64 { return w.stored }

// Size returns the log's length: the bytes of every group written
// successfully, with their headers and padding.
func (w *Writer) Size() int64 { return w.size }

// Close closes the file without syncing it: call Sync first to make the
// records durable, or MarkEnd to also mark a clean end. (A log being
// abandoned, or one written with NoSync, should not pay for an fsync.) It
// first waits for the writebacks it asked for to have been started (see
// startWriteback). Close returns the file's Close error; afterwards every
// method returns an error.
//
// A mapped log is first cut to its end, so that the file holds the log and
// nothing more. The cut is not synced either: a power loss can undo it,
// bringing back zeros. A log that a newer one will follow must be closed
// with EndClose, whose MarkEnd syncs the cut with the end marker. (MarkEnd
// has already cut the log.)
func (w *Writer) Close() error {
	if w.err == errClosed {
		return errClosed
	}
	w.wb.stop()
	var err error
	if w.m != nil && !w.cut {
		err = w.m.Cut(w.size)
	}
	w.err = errClosed
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// EndClose marks the log's end (MarkEnd) and closes it: the way to close a
// log that a newer one will follow. Once a newer log exists, a reader can
// no longer tell a torn tail from damage by the log's place (only the
// newest log with bytes may end torn, and a power loss can leave a newer
// log empty): the end marker tells it.
func (w *Writer) EndClose() error {
	if err := w.MarkEnd(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
