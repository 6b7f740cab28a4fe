package vfs

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
)

// ErrInjected is the error an ErrorFS returns where it was told to fail.
var ErrInjected = errors.New("vfs: injected error")

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
)

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

// Lock implements FS (never injected).
func (e *ErrorFS) Lock(name string) (io.Closer, error) { return e.FS.Lock(name) }

// MkdirAll implements FS (never injected).
func (e *ErrorFS) MkdirAll(dir string, perm os.FileMode) error { return e.FS.MkdirAll(dir, perm) }

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
