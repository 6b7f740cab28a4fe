// Package vfs is the file-system interface every part of shale uses for its
// files. Going through an interface lets tests run on an in-memory file
// system, simulate a crash by dropping what was never synced, and inject I/O
// errors, without touching the code under test.
package vfs

import (
	"errors"
	"io"
	"os"
)

// File is an open file. Files opened with Create are written with Write and
// made durable with Sync; files opened with Open are read with ReadAt.
type File interface {
	io.Writer
	io.ReaderAt
	io.Closer
	// Sync makes everything written so far durable.
	Sync() error
	// Size returns the file's current length in bytes.
	Size() (int64, error)
}

// WritebackStarter is implemented by files that can start writing data back
// to the device without waiting for it, as the operating system's files do
// on Linux. A writer of a large file calls it as it goes so that the
// device takes the data as it comes, rather than all at once at the final
// Sync; durability still comes from Sync alone.
type WritebackStarter interface {
	// StartWriteback starts the writeback of [off, off+n) and returns
	// without waiting for it.
	StartWriteback(off, n int64) error
}

// Mapper is implemented by files that can be appended to through a shared
// memory mapping instead of write(2): the operating system's files on Linux,
// and MemFS's (which model it), and ErrorFS's around them. A store costs no
// system call once its pages are mapped, and, as with write(2), the bytes
// belong to the kernel when it returns: a process crash keeps them, and only
// Sync makes them durable. The write-ahead log uses it to save a system call
// per commit.
//
// The file is allocated ahead of the stores, in steps, so that a full disk
// fails a store with an error instead of faulting when a page is first
// touched; until Cut, the file is longer than what was stored and reads as
// zeros past it. Stores append: each starts at or after the end of the one
// before, and Write must not be mixed with them. Not safe for concurrent use.
type Mapper interface {
	// StoreAt copies p into the file at offset off. A file system that
	// cannot allocate ahead (fallocate) or map the file fails the first
	// store with an error matching ErrNotMappable, having stored nothing;
	// the caller then uses Write. A store whose window the kernel refuses
	// to map fails with an error matching ErrMappingRefused, having stored
	// nothing; the caller then writes it and every later byte with WriteAt.
	StoreAt(p []byte, off int64) error
	// WriteAt writes p at offset off with pwrite(2): how the bytes a
	// refused mapping (ErrMappingRefused) leaves are written, appending
	// as stores do, into the zeros allocated ahead or past them.
	WriteAt(p []byte, off int64) (int, error)
	// Cut releases the mapping and truncates the file to size, the end of
	// the last store or WriteAt, removing the zeros allocated past it. It
	// makes nothing durable: a Sync after it does. A Sync before it may
	// also write pages of zeros past the last store, which a Mapper may
	// dirty ahead of the stores (the operating system's does): cut first
	// to write only what was stored.
	Cut(size int64) error
}

// ReadMapper is implemented by files opened for reading that can be read
// in place through a read-only shared memory mapping instead of with
// pread(2): the operating system's files on Linux, MemFS's (which model
// it), and ErrorFS's around them. Once the kernel holds a mapped page,
// reading it costs no system call and no copy into a buffer of the
// caller's; the pages the process has touched count in its resident set
// while mapped. Close releases the mapping.
type ReadMapper interface {
	// MapForReads maps the file as long as it is now. It is called once,
	// before any ViewAt, and not concurrently with anything else on the
	// file. A file system that cannot map the file fails with an error
	// matching ErrNotMappable, a kernel that refuses the mapping (the
	// process is at vm.max_map_count) with one matching
	// ErrMappingRefused; the caller then reads with ReadAt.
	MapForReads() error
	// ViewAt calls fn with the n bytes at off as mapped and returns fn's
	// error. fn must neither modify b nor keep it after it returns. A range
	// not within the mapped length is an error matching io.ErrUnexpectedEOF.
	// If an access to b faults (the file was cut short under the mapping,
	// or the device could not read a page), fn stops there and ViewAt
	// returns an error matching ErrReadFault, instead of the process
	// crashing. Safe for concurrent use.
	ViewAt(off int64, n int, fn func(b []byte) error) error
}

// ErrReadFault is returned (wrapped, with the file's name and the offset)
// by a ReadMapper.ViewAt whose access to the mapping faulted: the file was
// cut short while mapped, or the device could not read a page. It is an
// I/O error: what the bytes were is unknown.
var ErrReadFault = errors.New("vfs: a read through a memory mapping faulted (the file was cut short under the mapping, or the device could not read a page)")

// ErrNotMappable is returned (wrapped) by the first Mapper.StoreAt of a file
// the file system cannot allocate ahead or map, and by a wrapping file
// system (ErrorFS) whose file is no Mapper.
var ErrNotMappable = errors.New("vfs: file system cannot allocate a file ahead of a mapping")

// ErrMappingRefused is returned (wrapped) by a Mapper.StoreAt, the first
// or a later one, whose window the kernel refused to map for want of
// room among the process's mappings (ENOMEM: the process is at
// vm.max_map_count). Nothing was stored, and the file keeps what was
// allocated ahead: the caller writes that store and the rest of the file
// with WriteAt at their offsets, and Cut still removes the zeros past
// them. It does not match ErrNotMappable.
var ErrMappingRefused = errors.New("vfs: the kernel refused to map a window of the file (at the process's limit of mappings)")

// ErrLinkUnsupported is returned (wrapped) by Link when the file system
// cannot make newname a hard link to oldname: they are on different
// devices, or the file system has no hard links.
var ErrLinkUnsupported = errors.New("vfs: cannot hard-link these names (another device, or no hard links)")

// FS is a file system.
type FS interface {
	// Create creates name, truncating it if it exists, open for writing.
	Create(name string) (File, error)
	// Open opens name for reading.
	Open(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// Link makes newname a hard link to oldname: a second name for the same
	// file, which stays when oldname is removed. newname must not exist.
	// Like a creation, the new name is durable once its directory is synced
	// (SyncDir). A file system that cannot link these two names (they are
	// on different devices, or it has no hard links) fails with an error
	// matching ErrLinkUnsupported, having made nothing; the caller copies.
	Link(oldname, newname string) error
	// MkdirAll creates dir and any missing parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries in dir, sorted.
	List(dir string) ([]string, error)
	// Stat describes name.
	Stat(name string) (os.FileInfo, error)
	// Lock takes an exclusive lock on name, creating it if needed. It fails
	// at once, without waiting, if the lock is held, exclusively or shared,
	// in this process or another. Closing the returned Closer releases the
	// lock.
	Lock(name string) (io.Closer, error)
	// LockShared takes a shared lock on name, which must exist: it is not
	// created, so that a reader writes nothing (an absent name is an error
	// matching fs.ErrNotExist). Any number of shared holders coexist; it
	// fails at once, without waiting, while Lock's holder has the lock, and
	// Lock fails while any shared holder has it. Closing the returned
	// Closer releases this holder's share.
	LockShared(name string) (io.Closer, error)
	// SyncDir makes the directory's entries (creations, renames, removals)
	// durable.
	SyncDir(dir string) error
	// PathJoin joins path elements the way this FS spells paths.
	PathJoin(elem ...string) string
}
