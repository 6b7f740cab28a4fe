package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
)

// ErrInjected is the error an ErrorFS returns where it was told to fail.
var ErrInjected = errors.New("vfs: injected error")

// ErrNoSpace is an injected "no space left on device": it matches both
// ErrInjected and syscall.ENOSPC with errors.Is.
var ErrNoSpace error = noSpaceError{}

type noSpaceError struct{}

func (noSpaceError) Error() string { return "vfs: injected error: " + syscall.ENOSPC.Error() }

func (noSpaceError) Is(target error) bool { return target == ErrInjected || target == syscall.ENOSPC }

// Op names a file-system operation, for choosing where to inject errors.
type Op int

// The operations an ErrorFS can fail.
const (
	OpCreate Op = iota
	OpOpen
	OpRemove
	OpRename
	OpList
	OpWrite
	OpRead
	OpSync
	OpSyncDir
	OpLock
	OpMkdirAll
	OpStat
	OpClose
	OpTruncate
	OpLink
)

var opNames = [...]string{"create", "open", "remove", "rename", "list", "write", "read", "sync", "syncdir", "lock", "mkdirall", "stat", "close", "truncate", "link"}

// String names the operation.
func (op Op) String() string {
	if op >= 0 && int(op) < len(opNames) {
		return opNames[op]
	}
	return fmt.Sprintf("Op(%d)", int(op))
}

// Injector decides whether an operation on a path fails: it returns nil to
// let it through or the error to return.
type Injector func(op Op, path string) error

// ErrorFS wraps an FS and fails the operations its Injector picks, so tests
// can check what the DB does when the disk says no.
type ErrorFS struct {
	FS
	inject atomic.Pointer[Injector]
}

// NewErrorFS wraps fs. It injects nothing until SetInjector.
func NewErrorFS(fs FS) *ErrorFS { return &ErrorFS{FS: fs} }

// SetInjector replaces the injector; nil injects nothing.
func (e *ErrorFS) SetInjector(in Injector) {
	if in == nil {
		e.inject.Store(nil)
		return
	}
	e.inject.Store(&in)
}

func (e *ErrorFS) check(op Op, path string) error {
	if in := e.inject.Load(); in != nil {
		return (*in)(op, path)
	}
	return nil
}

// Create implements FS.
func (e *ErrorFS) Create(name string) (File, error) {
	if err := e.check(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := e.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, fs: e, name: name}, nil
}

// Open implements FS.
func (e *ErrorFS) Open(name string) (File, error) {
	if err := e.check(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, fs: e, name: name}, nil
}

// Remove implements FS.
func (e *ErrorFS) Remove(name string) error {
	if err := e.check(OpRemove, name); err != nil {
		return err
	}
	return e.FS.Remove(name)
}

// Rename implements FS.
func (e *ErrorFS) Rename(oldname, newname string) error {
	if err := e.check(OpRename, newname); err != nil {
		return err
	}
	return e.FS.Rename(oldname, newname)
}

// Link implements FS; the path an Injector sees is newname. An Injector
// that returns an error matching ErrLinkUnsupported makes the file system
// look like one that cannot link, so that a caller's fallback runs.
func (e *ErrorFS) Link(oldname, newname string) error {
	if err := e.check(OpLink, newname); err != nil {
		return err
	}
	return e.FS.Link(oldname, newname)
}

// List implements FS.
func (e *ErrorFS) List(dir string) ([]string, error) {
	if err := e.check(OpList, dir); err != nil {
		return nil, err
	}
	return e.FS.List(dir)
}

// SyncDir implements FS.
func (e *ErrorFS) SyncDir(dir string) error {
	if err := e.check(OpSyncDir, dir); err != nil {
		return err
	}
	return e.FS.SyncDir(dir)
}

// Lock implements FS. Releasing the lock is not injected: a process that
// ends releases its locks whatever the disk says.
func (e *ErrorFS) Lock(name string) (io.Closer, error) {
	if err := e.check(OpLock, name); err != nil {
		return nil, err
	}
	return e.FS.Lock(name)
}

// LockShared implements FS as an OpLock, like Lock.
func (e *ErrorFS) LockShared(name string) (io.Closer, error) {
	if err := e.check(OpLock, name); err != nil {
		return nil, err
	}
	return e.FS.LockShared(name)
}

// MkdirAll implements FS.
func (e *ErrorFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := e.check(OpMkdirAll, dir); err != nil {
		return err
	}
	return e.FS.MkdirAll(dir, perm)
}

// Stat implements FS.
func (e *ErrorFS) Stat(name string) (os.FileInfo, error) {
	if err := e.check(OpStat, name); err != nil {
		return nil, err
	}
	return e.FS.Stat(name)
}

type errorFile struct {
	File
	fs   *ErrorFS
	name string
}

func (f *errorFile) Write(p []byte) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

// StoreAt implements Mapper as an OpWrite: it stores through the wrapped
// file, or fails with ErrNotMappable if that is not a Mapper.
func (f *errorFile) StoreAt(p []byte, off int64) error {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		return err
	}
	m, ok := f.File.(Mapper)
	if !ok {
		return fmt.Errorf("%s: %w", f.name, ErrNotMappable)
	}
	return m.StoreAt(p, off)
}

// WriteAt implements Mapper as an OpWrite: it writes through the wrapped
// file, or fails with ErrNotMappable if that is not a Mapper.
func (f *errorFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		return 0, err
	}
	m, ok := f.File.(Mapper)
	if !ok {
		return 0, fmt.Errorf("%s: %w", f.name, ErrNotMappable)
	}
	return m.WriteAt(p, off)
}

// Cut implements Mapper as an OpTruncate.
func (f *errorFile) Cut(size int64) error {
	if err := f.fs.check(OpTruncate, f.name); err != nil {
		return err
	}
	m, ok := f.File.(Mapper)
	if !ok {
		return fmt.Errorf("%s: %w", f.name, ErrNotMappable)
	}
	return m.Cut(size)
}

// MapForReads implements ReadMapper as an OpOpen: it maps the wrapped
// file, or fails with ErrNotMappable if that is not a ReadMapper.
func (f *errorFile) MapForReads() error {
	if err := f.fs.check(OpOpen, f.name); err != nil {
		return err
	}
	m, ok := f.File.(ReadMapper)
	if !ok {
		return fmt.Errorf("%s: %w", f.name, ErrNotMappable)
	}
	return m.MapForReads()
}

// ViewAt implements ReadMapper as an OpRead: it fails as a read through
// the wrapped file's mapping would, or views through it.
func (f *errorFile) ViewAt(off int64, n int, fn func(b []byte) error) error {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return err
	}
	m, ok := f.File.(ReadMapper)
	if !ok {
		return &fs.PathError{Op: "view", Path: f.name, Err: ErrNotMappable}
	}
	return m.ViewAt(off, n, fn)
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *errorFile) Sync() error {
	if err := f.fs.check(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

// Close implements File. An injected failure still closes the file, as
// close(2) does: the descriptor is gone whatever it returns.
func (f *errorFile) Close() error {
	err := f.fs.check(OpClose, f.name)
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

// IndexInjector counts the operations it sees, from 0, and fails the one
// at Index with Err; if Persistent, it fails every operation after it too
// (a disk that stays broken). Its Inject method is an Injector. It is safe
// for concurrent use.
type IndexInjector struct {
	// Index is the operation that fails first.
	Index int64
	// Err is the error returned; nil means ErrInjected.
	Err error
	// Persistent keeps failing every operation after Index.
	Persistent bool

	count atomic.Int64
}

// Inject is the Injector: pass ii.Inject to ErrorFS.SetInjector.
func (ii *IndexInjector) Inject(Op, string) error {
	i := ii.count.Add(1) - 1
	if i == ii.Index || (ii.Persistent && i > ii.Index) {
		if ii.Err == nil {
			return ErrInjected
		}
		return ii.Err
	}
	return nil
}

// Count returns the number of operations seen so far.
func (ii *IndexInjector) Count() int64 { return ii.count.Load() }

// Fired reports whether an operation has been failed.
func (ii *IndexInjector) Fired() bool { return ii.count.Load() > ii.Index }
