//go:build !linux

package vfs

import (
	"fmt"
	"os"
)

// mapping and readMapping are empty where the operating system's files
// are neither Mappers nor ReadMappers: the write-ahead log uses write(2)
// there, and tables are read with pread(2).
type mapping struct{}

func (*mapping) unmap() error { return nil }

type readMapping struct{}

func (*readMapping) unmap() error { return nil }

// MapForReads implements ReadMapper: it fails with ErrNotMappable.
func (f osFile) MapForReads() error {
	return fmt.Errorf("%s: %w: read mappings are used on Linux only", f.Name(), ErrNotMappable)
}

// ViewAt implements ReadMapper: nothing is mapped.
func (f osFile) ViewAt(off int64, n int, fn func(b []byte) error) error {
	return &os.PathError{Op: "view", Path: f.Name(), Err: ErrNotMappable}
}
