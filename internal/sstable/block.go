package sstable

import (
	"encoding/binary"

	"github.com/shale-db/shale/internal/base"
)

// blockWriter builds one block in the format described in writer.go: entries
// with keys prefix-compressed against the previous key, a full key at every
// restartInterval-th entry, and the restart offsets at the end.
type blockWriter struct {
	restartInterval int
	buf             []byte
	restarts        []uint32
	counter         int // entries since the last restart
	lastKey         []byte
	entries         int
}

func (w *blockWriter) add(key, value []byte) {
	shared := 0
	if w.counter == w.restartInterval || len(w.restarts) == 0 {
		w.restarts = append(w.restarts, uint32(len(w.buf)))
		w.counter = 0
	} else {
		n := min(len(key), len(w.lastKey))
		for shared < n && key[shared] == w.lastKey[shared] {
			shared++
		}
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(key)-shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(value)))
	w.buf = append(w.buf, key[shared:]...)
	w.buf = append(w.buf, value...)
	w.lastKey = append(w.lastKey[:0], key...)
	w.counter++
	w.entries++
}

// estimatedSize is the length finish would return now.
func (w *blockWriter) estimatedSize() int {
	return len(w.buf) + 4*max(len(w.restarts), 1) + 4
}

// finish appends the restart array and returns the block. The result aliases
// the writer's buffer, valid until reset.
func (w *blockWriter) finish() []byte {
	if len(w.restarts) == 0 {
		w.restarts = append(w.restarts, 0)
	}
	for _, r := range w.restarts {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, r)
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(w.restarts)))
	return w.buf
}

func (w *blockWriter) reset() {
	w.buf = w.buf[:0]
	w.restarts = w.restarts[:0]
	w.counter = 0
	w.lastKey = w.lastKey[:0]
	w.entries = 0
}

// blockIter walks the entries of one block in either direction. It trusts
// nothing in the block: every varint, length and restart offset is checked
// before use, and a bad one makes the iterator invalid with a corruption
// error naming the file and the block's offset.
//
// Keys are whatever bytes the block holds; SeekGE, used on data and index
// blocks only, decodes them as internal keys.
type blockIter struct {
	file     string // for errors
	blockOff int64  // offset of the block in the file, for errors

	data        []byte
	restarts    int // offset of the restart array in data
	numRestarts int

	// offset is where the current entry starts and next where the one after
	// it starts; offset == restarts when the iterator is exhausted.
	offset, next int
	key          []byte // the current key, assembled in a buffer we own
	val          []byte // the current value, aliasing data
	valid        bool
	err          error
}

// init points the iterator at block data; it checks the restart array's
// framing. Iterators are reused across blocks, keeping the key buffer.
func (i *blockIter) init(file string, blockOff int64, data []byte) error {
	*i = blockIter{file: file, blockOff: blockOff, key: i.key[:0]}
	if len(data) < 4 {
		return i.corrupt("block of %d bytes is too short", len(data))
	}
	n := binary.LittleEndian.Uint32(data[len(data)-4:])
	if n == 0 || uint64(n) > uint64(len(data)-4)/4 {
		return i.corrupt("restart count %d does not fit a block of %d bytes", n, len(data))
	}
	i.data = data
	i.numRestarts = int(n)
	i.restarts = len(data) - 4 - 4*int(n)
	if r0 := binary.LittleEndian.Uint32(data[i.restarts:]); r0 != 0 {
		return i.corrupt("first restart is at %d, not 0", r0)
	}
	return nil
}

func (i *blockIter) corrupt(format string, args ...any) error {
	i.err = base.CorruptionErrorf(i.file, i.blockOff, format, args...)
	i.valid = false
	return i.err
}

// restart returns the offset of the r-th restart point.
func (i *blockIter) restart(r int) (int, bool) {
	off := int(binary.LittleEndian.Uint32(i.data[i.restarts+4*r:]))
	if off >= i.restarts {
		i.corrupt("restart %d at offset %d is past the entries (%d bytes)", r, off, i.restarts)
		return 0, false
	}
	return off, true
}

// decodeAt decodes the entry at off, whose key shares a prefix with the
// current i.key (empty at a restart point), and makes it current.
func (i *blockIter) decodeAt(off int) bool {
	entries := i.data[:i.restarts]
	var shared, unshared uint64
	p := off + 2
	if p <= len(entries) && entries[off]|entries[off+1] < 0x80 {
		// The usual header: one byte each for the shared and unshared
		// lengths, decoded inline.
		shared, unshared = uint64(entries[off]), uint64(entries[off+1])
	} else {
		var n1, n2 int
		shared, n1 = uvarintAt(entries, off)
		unshared, n2 = uvarintAt(entries, off+max(n1, 0))
		if n1 <= 0 || n2 <= 0 {
			i.corrupt("bad entry header at block offset %d", off)
			return false
		}
		p = off + n1 + n2
	}
	vlen, n3 := uvarintAt(entries, p)
	if n3 <= 0 {
		i.corrupt("bad entry header at block offset %d", off)
		return false
	}
	p += n3
	rest := uint64(i.restarts - p)
	if shared > uint64(len(i.key)) || unshared > rest || vlen > rest-unshared {
		i.corrupt("entry at block offset %d: lengths %d/%d/%d do not fit", off, shared, unshared, vlen)
		return false
	}
	k := p + int(unshared)
	i.key = append(i.key[:shared], i.data[p:k]...)
	i.val = i.data[k : k+int(vlen) : k+int(vlen)]
	i.offset, i.next = off, k+int(vlen)
	i.valid = true
	return true
}

// uvarintAt decodes a uvarint at b[off:]; n <= 0 when off is past the end or
// the varint is bad.
func uvarintAt(b []byte, off int) (uint64, int) {
	if off >= len(b) {
		return 0, 0
	}
	return binary.Uvarint(b[off:])
}

// seekRestart makes the entry at restart point r current.
func (i *blockIter) seekRestart(r int) bool {
	off, ok := i.restart(r)
	if !ok {
		return false
	}
	i.key = i.key[:0]
	return i.decodeAt(off)
}

// exhaust leaves the iterator past the last entry.
func (i *blockIter) exhaust() bool {
	i.valid = false
	i.offset = i.restarts
	return false
}

// First moves to the first entry.
func (i *blockIter) First() bool {
	if i.err != nil {
		return false
	}
	if i.restarts == 0 {
		return i.exhaust()
	}
	return i.seekRestart(0)
}

// Next moves to the next entry.
func (i *blockIter) Next() bool {
	if !i.valid {
		return false
	}
	if i.next >= i.restarts {
		return i.exhaust()
	}
	return i.decodeAt(i.next)
}

// Last moves to the last entry.
func (i *blockIter) Last() bool {
	if i.err != nil {
		return false
	}
	if i.restarts == 0 {
		return i.exhaust()
	}
	return i.scanTo(i.numRestarts-1, i.restarts)
}

// Prev moves to the entry before the current one: back to the restart point
// before it, then forward to the entry that ends where the current begins.
func (i *blockIter) Prev() bool {
	if !i.valid {
		return false
	}
	if i.offset == 0 {
		i.valid = false
		return false
	}
	// Find the last restart point before the current entry.
	lo, hi := 0, i.numRestarts
	for lo+1 < hi {
		mid := (lo + hi) / 2
		off, ok := i.restart(mid)
		if !ok {
			return false
		}
		if off < i.offset {
			lo = mid
		} else {
			hi = mid
		}
	}
	return i.scanTo(lo, i.offset)
}

// scanTo decodes forward from restart point r and stops on the entry that
// ends at end.
func (i *blockIter) scanTo(r, end int) bool {
	if !i.seekRestart(r) {
		return false
	}
	for i.next < end {
		if !i.decodeAt(i.next) {
			return false
		}
	}
	if i.next != end {
		i.corrupt("entries do not end at block offset %d", end)
		return false
	}
	return true
}

// SeekGE moves to the first entry whose key, decoded as an internal key, is
// >= target: a binary search over the restart points, then a linear scan.
func (i *blockIter) SeekGE(target base.InternalKey) bool {
	if i.err != nil {
		return false
	}
	if i.restarts == 0 {
		return i.exhaust()
	}
	// Find the last restart point whose key is < target (or 0).
	lo, hi := 0, i.numRestarts
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if !i.seekRestart(mid) {
			return false
		}
		c, ok := i.compare(target)
		if !ok {
			return false
		}
		if c < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	if !i.seekRestart(lo) {
		return false
	}
	for {
		c, ok := i.compare(target)
		if !ok {
			return false
		}
		if c >= 0 {
			return true
		}
		if !i.Next() {
			return false
		}
	}
}

// compare compares the current key, as an internal key, with k.
func (i *blockIter) compare(k base.InternalKey) (int, bool) {
	ik, ok := i.internalKey()
	if !ok {
		return 0, false
	}
	return base.Compare(ik, k), true
}

// internalKey decodes the current key, which must be an internal key.
func (i *blockIter) internalKey() (base.InternalKey, bool) {
	ik, ok := base.DecodeInternalKey(i.key)
	if !ok {
		i.corrupt("key of %d bytes at block offset %d is not an internal key", len(i.key), i.offset)
	}
	return ik, ok
}
