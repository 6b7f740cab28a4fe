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

func (e *ErrIter) First() bool            { return e.move(e.InternalIterator.First()) }
func (e *ErrIter) Last() bool             { return e.move(e.InternalIterator.Last()) }
func (e *ErrIter) SeekGE(key []byte) bool { return e.move(e.InternalIterator.SeekGE(key)) }
func (e *ErrIter) SeekLT(key []byte) bool { return e.move(e.InternalIterator.SeekLT(key)) }
func (e *ErrIter) Next() bool             { return e.move(e.InternalIterator.Next()) }
func (e *ErrIter) Prev() bool             { return e.move(e.InternalIterator.Prev()) }
func (e *ErrIter) Valid() bool            { return e.err == nil && e.InternalIterator.Valid() }
func (e *ErrIter) Error() error           { return e.err }
func (e *ErrIter) Close() error           { return e.err }
