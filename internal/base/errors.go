package base

import (
	"errors"
	"fmt"
)

// ErrCorruption is the sentinel every corruption error matches with
// errors.Is. The root package exports it as shale.ErrCorruption.
var ErrCorruption = errors.New("shale: corruption")

// CorruptionError says which file, and where in it, holds bytes that cannot
// be what the format says they are.
type CorruptionError struct {
	File   string // file name as given to the reader
	Offset int64  // byte offset of the bad record or block; -1 if unknown
	Reason string
}

// Error names the file, the offset when known, and the reason.
func (e *CorruptionError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("shale: corruption in %s: %s", e.File, e.Reason)
	}
	return fmt.Sprintf("shale: corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorruption) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorruption }

// CorruptionErrorf returns a *CorruptionError for file at offset (-1 when not
// known) with a formatted reason.
func CorruptionErrorf(file string, offset int64, format string, args ...any) error {
	return &CorruptionError{File: file, Offset: offset, Reason: fmt.Sprintf(format, args...)}
}
