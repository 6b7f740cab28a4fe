// Package itertest is the notation datadriven test files use for what
// iterators hold and do: internal keys and entries (ParseKey, ParseEntry,
// FormatEntry) and the operations spelled as words (first, last, next,
// prev, seek-ge K, seek-lt K), for every package whose iterators the tests
// drive; and the inputs those tests feed iterators: entries in slices
// (NewSliceIter), injected failures (ErrIter), fuzz bytes as choices
// (ByteSource).
package itertest

import "strings"

// Positioner is what Move moves: base.InternalIterator and shale.Iterator
// both are.
type Positioner interface {
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	SeekGE(key []byte) bool
	SeekLT(key []byte) bool
}

// Move runs one operation line, such as "seek-ge b", on it and returns
// whether it is now positioned. known is false for an unknown operation.
func Move(it Positioner, line string) (ok, known bool) {
	op, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch op {
	case "first":
		return it.First(), true
	case "last":
		return it.Last(), true
	case "next":
		return it.Next(), true
	case "prev":
		return it.Prev(), true
	case "seek-ge":
		return it.SeekGE([]byte(arg)), true
	case "seek-lt":
		return it.SeekLT([]byte(arg)), true
	}
	return false, false
}
