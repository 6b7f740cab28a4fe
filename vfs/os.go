package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// Default is the operating system's file system.
var Default FS = osFS{}

type osFS struct{}

// osFile is an operating-system file. m is its state as a Mapper, nil for
// files opened for reading; r its state as a ReadMapper, nil for files
// opened for writing (Linux only; see mapped_linux.go).
type osFile struct {
	*os.File
	m *mapping
	r *readMapping
}

// Close implements File; it releases the file's mapping, if any.
func (f osFile) Close() error {
	err := errors.Join(f.m.unmap(), f.r.unmap())
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f osFile) Size() (int64, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{File: f, m: &mapping{}}, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{File: f, r: &readMapping{}}, nil
}

func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }
func (osFS) PathJoin(elem ...string) string              { return filepath.Join(elem...) }

// Link uses link(2). The errors by which Linux says that the file system
// cannot link the names (EXDEV: another device; EPERM, EOPNOTSUPP: no hard
// links there; EMLINK: the file has as many links as it may) match
// ErrLinkUnsupported.
func (osFS) Link(oldname, newname string) error {
	err := os.Link(oldname, newname)
	for _, errno := range []syscall.Errno{syscall.EXDEV, syscall.EPERM, syscall.EOPNOTSUPP, syscall.EMLINK} {
		if errors.Is(err, errno) {
			return fmt.Errorf("%w: %w", ErrLinkUnsupported, err)
		}
	}
	return err
}

func (osFS) List(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// ErrLocked is returned (wrapped) by Lock when another holder has the lock.
var ErrLocked = errors.New("vfs: lock is held by another process or another open DB")

// Lock uses flock(2). flock locks belong to an open file description, so a
// second Lock of the same file fails even from the same process.
func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return flock(f, name, syscall.LOCK_EX)
}

// LockShared uses flock(2) with LOCK_SH on the file opened for reading
// only, which also works on a read-only file system.
func (osFS) LockShared(name string) (io.Closer, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return flock(f, name, syscall.LOCK_SH)
}

// flock locks f (named name) in mode (LOCK_EX or LOCK_SH) without waiting
// and returns it as the lock's Closer; on failure it closes f.
func flock(f *os.File, name string, mode int) (io.Closer, error) {
	if err := syscall.Flock(int(f.Fd()), mode|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", name, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return f, nil
}

func (osFS) SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
