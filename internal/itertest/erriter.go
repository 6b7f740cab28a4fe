package itertest

import (
	"errors"

	"github.com/shale-db/shale/internal/base"
)

// ErrIter wraps an iterator and fails, with ErrInjected, on its move number
// FailAt (counting from 1) and every move after.
type ErrIter struct {
	base.InternalIterator
	FailAt int
	moves  int
	err    error
}

// ErrInjected is the error ErrIter fails with.
var ErrInjected = errors.New("injected error")

func (e *ErrIter) move(ok bool) bool {
	e.moves++
	if e.moves >= e.FailAt {
		e.err = ErrInjected
	}
	return ok && e.err == nil
}

// First is the wrapped iterator's First, counted as a move (see ErrIter).
func (e *ErrIter) First() bool { return e.move(e.InternalIterator.First()) }

// Last is the wrapped iterator's Last, counted as a move (see ErrIter).
func (e *ErrIter) Last() bool { return e.move(e.InternalIterator.Last()) }

// SeekGE is the wrapped iterator's SeekGE, counted as a move (see ErrIter).
func (e *ErrIter) SeekGE(key []byte) bool { return e.move(e.InternalIterator.SeekGE(key)) }

// SeekLT is the wrapped iterator's SeekLT, counted as a move (see ErrIter).
func (e *ErrIter) SeekLT(key []byte) bool { return e.move(e.InternalIterator.SeekLT(key)) }

// Next is the wrapped iterator's Next, counted as a move (see ErrIter).
func (e *ErrIter) Next() bool { return e.move(e.InternalIterator.Next()) }

// Prev is the wrapped iterator's Prev, counted as a move (see ErrIter).
func (e *ErrIter) Prev() bool { return e.move(e.InternalIterator.Prev()) }

// Valid reports whether the wrapped iterator is at an entry and no error
// was injected.
func (e *ErrIter) Valid() bool { return e.err == nil && e.InternalIterator.Valid() }

// Error returns ErrInjected once a move has failed, else nil.
func (e *ErrIter) Error() error { return e.err }

// Close returns what Error returns; the wrapped iterator is left open.
func (e *ErrIter) Close() error { return e.err }
