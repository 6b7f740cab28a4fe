package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemFS is an in-memory file system for tests. It remembers, for every file,
// how much of it was synced, and for the directory tree, which entries were
// synced with SyncDir, so CrashClone can show what a power loss would leave.
// Paths are slash-separated and cleaned; "" and "." are the root.
type MemFS struct {
	mu    sync.Mutex
	files map[string]*memNode // live names
	dirs  map[string]bool
	// durable is the namespace as of the last SyncDir of each directory:
	// name -> node. A node's synced bytes survive a crash only if its name
	// is durable.
	durable map[string]*memNode
	// durableDirs are the directories whose entry was there at the last
	// SyncDir of the directory holding it; the root always is. A directory
	// survives a crash only if it and every directory above it do.
	durableDirs map[string]bool
	// locks are the held locks by name: -1 for Lock's holder, else the
	// number of LockShared holders.
	locks map[string]int
}

type memNode struct {
	mu   sync.Mutex
	data []byte
	// synced is how much of data the last Sync made durable. Files are only
	// appended to, so data[:synced] is what a crash would keep. syncedLen
	// is the file's length as of that Sync, which a crash keeps too (with
	// zeros where no durable byte is): more than synced for a mapped file,
	// whose allocated zeros are durable but not the stores made into them
	// since, and more than len(data) after a Cut that no Sync followed.
	synced    int
	syncedLen int
	modTime   time.Time
	// mapped is set by the file's first StoreAt or WriteAt (a Mapper's
	// calls); end is then where they end, and data past it is the zeros
	// allocated ahead of them.
	mapped bool
	end    int
}

// memAllocStep is the step in which MemFS allocates a mapped file ahead of
// its stores (see Mapper). It is far smaller than the operating system's,
// so that crash campaigns stay fast, and not a divisor of the write-ahead
// log's 32 KiB block, so that a zero tail sometimes spans a block boundary.
const memAllocStep = 40 << 10

// NewMem returns an empty in-memory file system.
func NewMem() *MemFS {
	return &MemFS{
		files:       map[string]*memNode{},
		dirs:        map[string]bool{".": true},
		durable:     map[string]*memNode{},
		durableDirs: map[string]bool{".": true},
		locks:       map[string]int{},
	}
}

func clean(name string) string { return path.Clean("/" + name)[1:] }

func dirOf(name string) string {
	d := path.Dir(name)
	if d == "" || d == "/" {
		return "."
	}
	return d
}

func notExist(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

func (m *MemFS) checkDir(op, name string) error {
	if d := dirOf(name); !m.dirs[d] && d != "." {
		return notExist(op, name)
	}
	return nil
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkDir("create", name); err != nil {
		return nil, err
	}
	if m.dirs[name] {
		return nil, &fs.PathError{Op: "create", Path: name, Err: errors.New("is a directory")}
	}
	n := &memNode{modTime: time.Now()}
	m.files[name] = n
	return &memFile{name: name, node: n, write: true}, nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[name]
	if !ok {
		return nil, notExist("open", name)
	}
	return &memFile{name: name, node: n}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; ok {
		delete(m.files, name)
		return nil
	}
	if m.dirs[name] {
		for f := range m.files {
			if dirOf(f) == name {
				return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
			}
		}
		delete(m.dirs, name)
		return nil
	}
	return notExist("remove", name)
}

// Rename implements FS.
func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[oldname]
	if !ok {
		return notExist("rename", oldname)
	}
	if err := m.checkDir("rename", newname); err != nil {
		return err
	}
	delete(m.files, oldname)
	m.files[newname] = n
	return nil
}

// Link implements FS: newname names the same file as oldname, its bytes
// and its synced length shared, until either name is removed or renamed
// over. Only the names are separate: each survives a crash once its
// directory is synced (SyncDir).
func (m *MemFS) Link(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[oldname]
	if !ok {
		return notExist("link", oldname)
	}
	if err := m.checkDir("link", newname); err != nil {
		return err
	}
	if _, ok := m.files[newname]; ok || m.dirs[newname] {
		return &fs.PathError{Op: "link", Path: newname, Err: fs.ErrExist}
	}
	m.files[newname] = n
	return nil
}

// MkdirAll implements FS. A new directory is durable once its parent is
// synced (SyncDir), as a new file is.
func (m *MemFS) MkdirAll(dir string, _ os.FileMode) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := dir; d != "." && d != ""; d = dirOf(d) {
		if _, ok := m.files[d]; ok {
			return &fs.PathError{Op: "mkdir", Path: d, Err: errors.New("not a directory")}
		}
		m.dirs[d] = true
	}
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	dir = clean(dir)
	if dir == "" {
		dir = "."
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return nil, notExist("list", dir)
	}
	var names []string
	for f := range m.files {
		if dirOf(f) == dir {
			names = append(names, path.Base(f))
		}
	}
	for d := range m.dirs {
		if d != dir && d != "." && dirOf(d) == dir {
			names = append(names, path.Base(d))
		}
	}
	slices.Sort(names)
	return names, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.files[name]; ok {
		n.mu.Lock()
		defer n.mu.Unlock()
		return memInfo{name: path.Base(name), size: int64(len(n.data)), mod: n.modTime}, nil
	}
	if m.dirs[name] || name == "" {
		return memInfo{name: path.Base(name), dir: true}, nil
	}
	return nil, notExist("stat", name)
}

// Lock implements FS. Locks are held in this MemFS only.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkDir("lock", name); err != nil {
		return nil, err
	}
	if m.locks[name] != 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrLocked)
	}
	m.locks[name] = -1
	if _, ok := m.files[name]; !ok {
		m.files[name] = &memNode{modTime: time.Now()}
	}
	return &memLock{fs: m, name: name}, nil
}

// LockShared implements FS. Locks are held in this MemFS only.
func (m *MemFS) LockShared(name string) (io.Closer, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; !ok {
		return nil, notExist("lock", name)
	}
	if m.locks[name] < 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrLocked)
	}
	m.locks[name]++
	return &memLock{fs: m, name: name, shared: true}, nil
}

type memLock struct {
	fs     *MemFS
	name   string
	shared bool
	once   sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.fs.mu.Lock()
		if l.shared && l.fs.locks[l.name] > 1 {
			l.fs.locks[l.name]--
		} else {
			delete(l.fs.locks, l.name)
		}
		l.fs.mu.Unlock()
	})
	return nil
}

// SyncDir implements FS: the entries of dir become durable as they are now.
func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	if dir == "" {
		dir = "."
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.durable {
		if dirOf(name) == dir {
			delete(m.durable, name)
		}
	}
	for name, n := range m.files {
		if dirOf(name) == dir {
			m.durable[name] = n
		}
	}
	for d := range m.durableDirs {
		if d != "." && dirOf(d) == dir && !m.dirs[d] {
			delete(m.durableDirs, d)
		}
	}
	for d := range m.dirs {
		if d != "." && dirOf(d) == dir {
			m.durableDirs[d] = true
		}
	}
	return nil
}

// survives reports whether directory d would be there after a crash: it and
// every directory above it are durable.
func (m *MemFS) survives(d string) bool {
	for ; d != "." && d != ""; d = dirOf(d) {
		if !m.durableDirs[d] {
			return false
		}
	}
	return true
}

// PathJoin implements FS.
func (m *MemFS) PathJoin(elem ...string) string { return path.Join(elem...) }

// CrashMode chooses what a simulated power loss keeps of the bytes a file
// received since its last Sync. Whatever the mode, the synced bytes survive.
type CrashMode int

// The crash models.
const (
	// CrashSynced keeps exactly the synced bytes of each file.
	CrashSynced CrashMode = iota
	// CrashPages keeps the synced bytes plus a random subset of the file's
	// unsynced pages (PageSize bytes, aligned on multiples of PageSize in
	// the file), in any order: the disk wrote some pages back and not
	// others. A dropped page inside the kept length reads as zeros (a hole);
	// the file ends with the last kept page or at the synced length. A page
	// that straddles the synced length keeps its synced part either way.
	CrashPages
	// CrashTorn keeps the synced bytes plus a prefix, of random length
	// (possibly empty or whole), of the unsynced ones: an append cut short.
	CrashTorn
)

// PageSize is the unit in which CrashPages keeps or drops unsynced bytes.
const PageSize = 4096

// CrashOptions configure CrashCloneWith.
type CrashOptions struct {
	// Mode is the crash model.
	Mode CrashMode
	// Seed makes the random choices of CrashPages and CrashTorn; the same
	// seed on the same file system gives the same clone.
	Seed uint64
}

// CrashClone returns the file system a power loss would leave now, keeping
// exactly the synced bytes: CrashCloneWith(CrashOptions{Mode: CrashSynced}).
func (m *MemFS) CrashClone() *MemFS { return m.CrashCloneWith(CrashOptions{}) }

// CrashCloneWith returns the file system a power loss would leave now, under
// the crash model o.Mode.
//
// Names follow one rule in every mode: each directory keeps its entries as
// of its last SyncDir. A creation, rename or removal not followed by a
// SyncDir of its directory is undone (a removed file comes back with the
// synced bytes it had; a renamed one is found under its old name only), and
// a file whose name was never made durable is gone with all its bytes.
// Directories follow the same rule: one made with MkdirAll survives once
// its parent was synced after it was made (one removed, until then), and a
// directory that does not survive takes everything under it. The bytes a
// name keeps are those of the file it named at that SyncDir, as of the
// crash, chosen by o.Mode. Locks are not carried over (the process died).
//
// In the clone every byte is synced, so cloning the clone keeps it whole.
func (m *MemFS) CrashCloneWith(o CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	for d := range m.durableDirs {
		if m.survives(d) {
			c.dirs[d] = true
			c.durableDirs[d] = true
		}
	}
	defer m.lockNodes()()
	// Sorted, so the random choices do not depend on map order.
	names := slices.Sorted(maps.Keys(m.durable))
	rng := rand.New(rand.NewPCG(o.Seed, 0x5ba1e))
	for _, name := range names {
		if !c.dirs[dirOf(name)] {
			continue // its directory is gone
		}
		n := m.durable[name]
		data := crashData(n.data, n.synced, n.syncedLen, o.Mode, rng)
		cn := &memNode{data: data, synced: len(data), syncedLen: len(data), modTime: n.modTime}
		c.files[name] = cn
		c.durable[name] = cn
	}
	return c
}

// ProcessCrashClone returns the file system a crash of the process would
// leave now, the machine running on: every directory, and every file under
// its present name with every byte written or stored into it, synced or
// not, since the kernel holds them (a mapped file keeps the zeros allocated
// ahead of its stores). Locks are not carried over (the process died). In
// the clone every byte and name is durable.
func (m *MemFS) ProcessCrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.lockNodes()()
	c := NewMem()
	for d := range m.dirs {
		c.dirs[d] = true
		c.durableDirs[d] = true
	}
	for name, n := range m.files {
		data := bytes.Clone(n.data)
		cn := &memNode{data: data, synced: len(data), syncedLen: len(data), modTime: n.modTime}
		c.files[name] = cn
		c.durable[name] = cn
	}
	return c
}

// lockNodes locks every file's node, live or durable, and returns the
// function that unlocks them, so that a clone copies every file as of one
// instant: writes take only their node's lock, and without this a clone
// could copy a table before the end of its write and the MANIFEST that
// names it after. m.mu must be held (it is taken before a node's lock
// everywhere).
func (m *MemFS) lockNodes() (unlock func()) {
	nodes := map[*memNode]bool{}
	for _, n := range m.files {
		nodes[n] = true
	}
	for _, n := range m.durable {
		nodes[n] = true
	}
	for n := range nodes {
		n.mu.Lock()
	}
	return func() {
		for n := range nodes {
			n.mu.Unlock()
		}
	}
}

// crashData returns a fresh copy of what a crash under mode keeps of a file
// holding data, of which the first synced bytes were synced, and whose length
// was syncedLen at that Sync: a shorter result is padded with zeros to it.
func crashData(data []byte, synced, syncedLen int, mode CrashMode, rng *rand.Rand) []byte {
	out := crashBytes(data, synced, mode, rng)
	if len(out) < syncedLen {
		out = append(out, make([]byte, syncedLen-len(out))...)
	}
	return out
}

// crashBytes is crashData's choice among the bytes of data.
func crashBytes(data []byte, synced int, mode CrashMode, rng *rand.Rand) []byte {
	unsynced := len(data) - synced
	switch {
	case unsynced == 0 || mode == CrashSynced:
		return bytes.Clone(data[:synced])
	case mode == CrashTorn:
		return bytes.Clone(data[:synced+rng.IntN(unsynced+1)])
	case mode == CrashPages:
		out := bytes.Clone(data)
		end := synced
		for p := synced / PageSize * PageSize; p < len(data); p += PageSize {
			lo, hi := max(p, synced), min(p+PageSize, len(data))
			if rng.IntN(2) == 0 {
				clear(out[lo:hi]) // not written back: a hole, unless past the end
			} else {
				end = hi
			}
		}
		return out[:end]
	}
	panic(fmt.Sprintf("vfs: unknown CrashMode %d", mode))
}

// MemFileState is what a crash would find of one file of a MemFS.
type MemFileState struct {
	// Size is the file's length now. Written is how much of it was
	// written or stored: Size, but for a mapped file (see Mapper), whose
	// zeros allocated ahead of its stores follow.
	Size, Written int64
	// Synced is how much of it the last Sync made durable: what a power
	// loss keeps of it under CrashSynced, if its name survives.
	Synced int64
	// NameDurable says that the name was there, naming this file, at its
	// directory's last SyncDir: a power loss keeps the name.
	NameDurable bool
}

// FileState returns what a crash would find of the file name.
func (m *MemFS) FileState(name string) (MemFileState, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[name]
	if !ok {
		return MemFileState{}, notExist("state", name)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	st := MemFileState{Size: int64(len(n.data)), Written: int64(len(n.data)), Synced: int64(n.synced), NameDurable: m.durable[name] == n}
	if n.mapped {
		st.Written = int64(n.end)
	}
	return st, nil
}

// String lists the files and their sizes, for debugging tests.
func (m *MemFS) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for name := range m.files {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		n := m.files[name]
		n.mu.Lock()
		fmt.Fprintf(&b, "%s %d\n", name, len(n.data))
		n.mu.Unlock()
	}
	return b.String()
}

type memFile struct {
	name   string
	node   *memNode
	write  bool
	closed bool
	// mapped is the file's length when MapForReads mapped it; 0: not
	// mapped.
	mapped int
}

// MapForReads implements ReadMapper, modelling the operating system's
// mapping: ViewAt then shows the file's bytes in place.
func (f *memFile) MapForReads() error {
	if f.write {
		return &fs.PathError{Op: "map", Path: f.name, Err: errors.New("file opened for writing")}
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if len(f.node.data) == 0 {
		return fmt.Errorf("%s: %w: an empty file", f.name, ErrNotMappable)
	}
	f.mapped = len(f.node.data)
	return nil
}

// ViewAt implements ReadMapper. A range the file no longer holds (it was
// cut short since it was mapped) is a read fault, as it would raise SIGBUS
// in a mapping of the operating system's.
func (f *memFile) ViewAt(off int64, n int, fn func(b []byte) error) error {
	if f.closed {
		return errClosed
	}
	if f.mapped == 0 {
		return &fs.PathError{Op: "view", Path: f.name, Err: ErrNotMappable}
	}
	if off < 0 || n < 0 || off > int64(f.mapped) || int64(n) > int64(f.mapped)-off {
		return fmt.Errorf("%s: viewing %d bytes at offset %d of a mapping of %d: %w", f.name, n, off, f.mapped, io.ErrUnexpectedEOF)
	}
	f.node.mu.Lock()
	data := f.node.data
	f.node.mu.Unlock()
	if off+int64(n) > int64(len(data)) {
		return fmt.Errorf("%s: reading %d bytes at offset %d: %w", f.name, n, off, ErrReadFault)
	}
	return fn(data[off : off+int64(n) : off+int64(n)])
}

var errClosed = errors.New("vfs: file already closed")

func (f *memFile) Write(p []byte) (int, error) {
	if f.closed {
		return 0, errClosed
	}
	if !f.write {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: errors.New("file opened for reading")}
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if f.node.mapped {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: errors.New("file is written through a mapping")}
	}
	f.node.data = append(f.node.data, p...)
	f.node.modTime = time.Now()
	return len(p), nil
}

// StoreAt implements Mapper. The stored bytes are the file's at once, as
// written ones are (a simulated process crash keeps them), and unsynced
// until Sync. Stores must append: one before the end of the last fails.
func (f *memFile) StoreAt(p []byte, off int64) error {
	return f.putAt("store", p, off, memAllocStep)
}

// WriteAt implements Mapper: a store that allocates nothing ahead, as
// pwrite(2) extends a file only as far as it writes.
func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.putAt("writeat", p, off, 1); err != nil {
		return 0, err
	}
	return len(p), nil
}

// putAt copies p into the file at off, which must append to the file's
// earlier stores, extending the file in steps of step bytes.
func (f *memFile) putAt(op string, p []byte, off int64, step int) error {
	if f.closed {
		return errClosed
	}
	if !f.write {
		return &fs.PathError{Op: op, Path: f.name, Err: errors.New("file opened for reading")}
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.mapped && len(n.data) > 0 || n.mapped && off < int64(n.end) {
		return &fs.PathError{Op: op, Path: f.name, Err: fmt.Errorf("%s at offset %d does not append", op, off)}
	}
	end := int(off) + len(p)
	if end > len(n.data) {
		alloc := (end + step - 1) / step * step
		n.data = append(n.data, make([]byte, alloc-len(n.data))...)
	}
	copy(n.data[off:], p)
	n.mapped, n.end = true, end
	n.modTime = time.Now()
	return nil
}

// Cut implements Mapper.
func (f *memFile) Cut(size int64) error {
	if f.closed {
		return errClosed
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if int(size) < len(n.data) {
		n.data = n.data[:size]
	}
	n.synced = min(n.synced, len(n.data)) // syncedLen stays until a Sync
	n.end = len(n.data)
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, errClosed
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errors.New("negative offset")}
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Sync() error {
	if f.closed {
		return errClosed
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	f.node.synced, f.node.syncedLen = len(f.node.data), len(f.node.data)
	if f.node.mapped {
		f.node.synced = f.node.end
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	return int64(len(f.node.data)), nil
}

func (f *memFile) Close() error {
	if f.closed {
		return errClosed
	}
	f.closed = true
	return nil
}

type memInfo struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
