//go:build !linux

package vfs

// mapping is empty where the operating system's files are not Mappers: the
// write-ahead log uses write(2) there.
type mapping struct{}

func (*mapping) unmap() error { return nil }
