package shale

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shale-db/shale/internal/wal"
	"github.com/shale-db/shale/vfs"
)

// The tests of this file check, through the DB on a MemFS, what the mapped
// WAL (wal.NewMappedWriter, Options.DisableWALMapping) does differently
// from the written one: the zeros allocated past the last group while the
// log is open, what a crash leaves of them, and the cut that removes them.

// walMapOptions keep every write of these tests in one memtable, and so in
// one WAL, unless a test flushes.
func walMapOptions(fs vfs.FS, wal walMode, noSync bool) *Options {
	return &Options{FS: fs, MemTableSize: 1 << 20, DisableWALMapping: wal.write, NoSync: noSync}
}

// walEnd reads the log name of fs to its end and returns the file's size,
// and where its torn tail starts and whether that tail cut bytes off (-1,
// false if the log ends in a whole record at the end of the file).
func walEnd(t *testing.T, fs vfs.FS, name string) (size, torn int64, cutOff bool) {
	t.Helper()
	size, torn, cutOff, err := readWALEnd(fs, name)
	if err != nil {
		t.Fatal(err)
	}
	return size, torn, cutOff
}

// readWALEnd is walEnd, returning its error.
func readWALEnd(fs vfs.FS, name string) (size, torn int64, cutOff bool, err error) {
	f, err := fs.Open(name)
	if err != nil {
		return 0, 0, false, err
	}
	defer f.Close()
	if size, err = f.Size(); err != nil {
		return 0, 0, false, err
	}
	r := wal.NewReader(f, name)
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, 0, false, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	off, ok := r.TornTail()
	if !ok {
		return size, -1, false, nil
	}
	return size, off, r.CutOff(), nil
}

// TestWALMappedZeroTail: while the DB is open, a mapped WAL is longer than
// the bytes committed to it, the rest zeros, and every committed byte was
// stored through the mapping; a written WAL is exactly as long as what was
// committed, none of it mapped.
func TestWALMappedZeroTail(t *testing.T) {
	for _, mode := range walModes {
		t.Run("wal="+mode.name, func(t *testing.T) {
			fs := vfs.NewMem()
			db := mustOpen(t, "db", walMapOptions(fs, mode, false))
			defer db.Close()
			putN(t, db, 0, 100, "v")
			m := db.Metrics()
			logs := filesOf(t, fs, "db", fileTypeLog)
			if len(logs) != 1 {
				t.Fatalf("%d WALs, want 1: %v", len(logs), logs)
			}
			b := readFile(t, fs, logs[0])
			size := int64(len(b))
			if m.WALBytes == 0 || m.WALBytes > size {
				t.Fatalf("WALBytes %d, the WAL %d bytes long", m.WALBytes, size)
			}
			if mode.write {
				if m.WALMappedBytes != 0 || size != m.WALBytes {
					t.Fatalf("written WAL: WALMappedBytes %d, want 0; file %d bytes, want WALBytes %d", m.WALMappedBytes, size, m.WALBytes)
				}
				return
			}
			if m.WALMappedBytes != m.WALBytes {
				t.Fatalf("mapped WAL: WALMappedBytes %d, want WALBytes %d", m.WALMappedBytes, m.WALBytes)
			}
			if size == m.WALBytes || !isZeros(b[m.WALBytes:]) {
				t.Fatalf("mapped WAL of %d bytes holding %d: want a longer file, zeros past them", size, m.WALBytes)
			}
			// The reader takes the zeros for a torn tail (it starts where
			// the last record ends, before the last COMMIT) that cuts
			// nothing.
			if _, torn, cutOff := walEnd(t, fs, logs[0]); torn < 0 || torn > m.WALBytes || cutOff {
				t.Fatalf("mapped WAL read as torn at %d (cut off: %v), want a tail by %d that cuts nothing", torn, cutOff, m.WALBytes)
			}
		})
	}
}

func isZeros(b []byte) bool { return len(bytes.Trim(b, "\x00")) == 0 }

// endsWithEnd reports whether the log b ends with an END fragment
// (internal/wal/writer.go): a header whose length field is its payload's
// (16), then the fragment's own offset (the synced offset an END records),
// then an 8-byte seal. Zeros after it would fail the check.
func endsWithEnd(b []byte) bool {
	off := len(b) - walEndSize
	if off < 0 {
		return false
	}
	f := b[off:]
	return binary.LittleEndian.Uint16(f[4:]) == walEndSize-7 && binary.LittleEndian.Uint64(f[7:]) == uint64(off)
}

// TestWALMappedCrash crashes a store while the DB is open, in each WAL mode:
// a power loss (each crash model) must keep every synced write, and a
// process crash, which keeps every byte the process stored, every
// acknowledged one, synced or not. The process crash of a mapped WAL leaves
// its zero tail, which recovery must take for the end of the log.
func TestWALMappedCrash(t *testing.T) {
	for _, mode := range walModes {
		for _, noSync := range []bool{false, true} {
			t.Run(fmt.Sprintf("wal=%s/nosync=%v", mode.name, noSync), func(t *testing.T) {
				fs := vfs.NewMem()
				db := mustOpen(t, "db", walMapOptions(fs, mode, noSync))
				want := putN(t, db, 0, 100, "v")
				walBytes := db.Metrics().WALBytes
				var crashed []*vfs.MemFS
				var names []string
				if !noSync {
					for _, model := range crashModels {
						for seed := range uint64(4) {
							crashed = append(crashed, fs.CrashCloneWith(vfs.CrashOptions{Mode: model.mode, Seed: seed}))
							names = append(names, fmt.Sprintf("power loss, model %s, seed %d", model.name, seed))
						}
					}
				}
				process := processCrash(t, fs, "db")
				crashed = append(crashed, process)
				names = append(names, "process crash")
				db.Close() // the crashed process's DB; its Close does not reach the copies
				logs := filesOf(t, process, "db", fileTypeLog)
				if len(logs) != 1 {
					t.Fatalf("%d WALs after the process crash, want 1: %v", len(logs), logs)
				}
				if size, _, _ := walEnd(t, process, logs[0]); !mode.write && size <= walBytes {
					t.Fatalf("the mapped WAL a process crash left is %d bytes long, holding %d: no zero tail to recover from", size, walBytes)
				}
				for i, c := range crashed {
					t.Run(names[i], func(t *testing.T) {
						db := mustOpen(t, "db", walMapOptions(c, mode, noSync))
						wantData(t, db, want)
						if err := db.Close(); err != nil {
							t.Fatal(err)
						}
					})
				}
			})
		}
	}
}

// TestWALMappedCut: the WAL a memtable rotation leaves behind, and every
// WAL once the DB is closed, is exactly as long as its log and its END: a
// mapped WAL's zero tail is cut off. Each WAL is read as it
// is closed (it may be removed after).
func TestWALMappedCut(t *testing.T) {
	for _, mode := range walModes {
		t.Run("wal="+mode.name, func(t *testing.T) {
			mem := vfs.NewMem()
			efs := vfs.NewErrorFS(mem)
			type closedLog struct {
				name       string
				size, torn int64
				cutOff     bool
				err        error
			}
			var (
				mu     sync.Mutex
				closed []closedLog
			)
			efs.SetInjector(func(op vfs.Op, name string) error {
				if op == vfs.OpClose && strings.HasSuffix(name, ".log") {
					mu.Lock()
					defer mu.Unlock()
					size, torn, cutOff, err := readWALEnd(mem, name)
					closed = append(closed, closedLog{name, size, torn, cutOff, err})
				}
				return nil
			})
			db := mustOpen(t, "db", walMapOptions(efs, mode, false))
			want := putN(t, db, 0, 100, "v")
			firstLog := db.Metrics().WALBytes
			if err := db.Flush(); err != nil { // rotates the memtable, and the WAL
				t.Fatal(err)
			}
			maps.Copy(want, putN(t, db, 100, 150, "w"))
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(closed) < 2 {
				t.Fatalf("%d WALs closed, want the rotated one and the last one", len(closed))
			}
			// The rotation ended the WAL it left behind with an END.
			if closed[0].size != firstLog+walEndSize {
				t.Errorf("the WAL rotated out (%s) is %d bytes long, its log %d and its END %d", closed[0].name, closed[0].size, firstLog, walEndSize)
			}
			for _, c := range closed {
				if c.err != nil {
					t.Fatal(c.err)
				}
				if c.torn >= 0 {
					t.Errorf("%s, closed, ends in a tail at %d of %d bytes (cut off: %v), want a whole record at its end", c.name, c.torn, c.size, c.cutOff)
				}
			}
			for _, name := range filesOf(t, mem, "db", fileTypeLog) {
				if size, torn, _ := walEnd(t, mem, name); torn >= 0 {
					t.Errorf("after Close, %s ends in a tail at %d of %d bytes", name, torn, size)
				}
			}
			// The reader stops at an END marker, so it sees no tail past
			// one: the newest WAL, closed by DB.Close, must end with its END.
			last := newestOf(t, mem, "db", fileTypeLog)
			if b := readFile(t, mem, last); !endsWithEnd(b) {
				t.Errorf("after Close, %s (%d bytes) does not end with its END marker; its last bytes: %x", last, len(b), b[max(0, len(b)-32):])
			}
			efs.SetInjector(nil)
			db = mustOpen(t, "db", walMapOptions(mem, mode, false))
			wantData(t, db, want)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWALMappedCheckRepair: Check finds nothing wrong in a store crashed
// while its mapped WAL ended in zeros, and Repair keeps that WAL as used,
// not damaged (it would move it to lost/): zeros past the last group cut
// nothing off. Both must then leave a store that holds every write.
func TestWALMappedCheckRepair(t *testing.T) {
	for _, mode := range walModes {
		t.Run("wal="+mode.name, func(t *testing.T) {
			fs := vfs.NewMem()
			db := mustOpen(t, "db", walMapOptions(fs, mode, false))
			want := putN(t, db, 0, 100, "v")
			crashes := map[string]*vfs.MemFS{"process crash": processCrash(t, fs, "db")}
			for _, model := range crashModels {
				crashes["power loss, model "+model.name] = fs.CrashCloneWith(vfs.CrashOptions{Mode: model.mode, Seed: 1})
			}
			db.Close()
			for name, c := range crashes {
				t.Run(name, func(t *testing.T) {
					if err := Check("db", walMapOptions(c, mode, false)); err != nil {
						t.Errorf("Check: %v", err)
					}
					if err := Repair("db", walMapOptions(c, mode, false)); err != nil {
						t.Fatalf("Repair: %v", err)
					}
					if lost, err := c.List("db/" + lostDir); err == nil && len(lost) > 0 {
						t.Errorf("Repair moved %v to lost/; nothing was damaged", lost)
					}
					db := mustOpen(t, "db", walMapOptions(c, mode, false))
					wantData(t, db, want)
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}

// mapRefusingFS hands out files whose stores through a mapping fail with
// vfs.ErrMappingRefused from offset refuseFrom on, storing nothing, as the
// operating system's do when the kernel refuses to map a window (the
// process at vm.max_map_count). It notes the offset of each refused store.
type mapRefusingFS struct {
	vfs.FS
	refuseFrom int64

	mu      sync.Mutex
	refused []int64
}

// mapRefusingFile is a file of a mapRefusingFS.
type mapRefusingFile struct {
	vfs.File
	vfs.Mapper
	fs *mapRefusingFS
}

func (fs *mapRefusingFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	m, ok := f.(vfs.Mapper)
	if !ok {
		return f, nil
	}
	return &mapRefusingFile{File: f, Mapper: m, fs: fs}, nil
}

func (f *mapRefusingFile) StoreAt(p []byte, off int64) error {
	if off+int64(len(p)) > f.fs.refuseFrom {
		f.fs.mu.Lock()
		f.fs.refused = append(f.fs.refused, off)
		f.fs.mu.Unlock()
		return fmt.Errorf("%w: mmap: cannot allocate memory", vfs.ErrMappingRefused)
	}
	return f.Mapper.StoreAt(p, off)
}

// refusals returns the offsets of the stores refused so far.
func (fs *mapRefusingFS) refusals() []int64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return slices.Clone(fs.refused)
}

// TestWALMappingRefused: a store whose mapped WAL the kernel refuses a
// window of (at vm.max_map_count) goes on taking writes, synced or not:
// the rest of that WAL is written at its offsets, with no further store
// tried, and the next WAL is mapped again. WALMappedBytes counts only the
// bytes stored through the mapping, and MappingRefusals the refusal. Every
// acknowledged write is there after a process crash, after a power loss
// (the synced ones), and after Close and a reopen.
func TestWALMappingRefused(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("nosync=%v", noSync), func(t *testing.T) {
			mem := vfs.NewMem()
			fs := &mapRefusingFS{FS: mem, refuseFrom: 16 << 10}
			db := mustOpen(t, "db", walMapOptions(fs, walModes[0], noSync))
			before := db.Metrics()
			long := strings.Repeat("v", 100)
			want := putN(t, db, 0, 500, long) // about 60 KiB of WAL
			m := db.Metrics()
			refused := fs.refusals()
			if len(refused) != 1 {
				t.Fatalf("stores refused at offsets %v, want one refusal and no store tried after it", refused)
			}
			if walBytes := m.WALBytes - before.WALBytes; walBytes < 2*fs.refuseFrom {
				t.Fatalf("the WAL took %d bytes, too few to test writes past the refusal at %d", walBytes, refused[0])
			}
			if mapped := m.WALMappedBytes - before.WALMappedBytes; mapped != refused[0] {
				t.Fatalf("WALMappedBytes grew by %d of %d WAL bytes, want %d: the bytes stored before the refusal", mapped, m.WALBytes-before.WALBytes, refused[0])
			}
			if got := m.MappingRefusals - before.MappingRefusals; got != 1 {
				t.Fatalf("MappingRefusals grew by %d, want 1", got)
			}
			if !m.BackgroundOK {
				t.Fatal("the store failed")
			}

			// A flush rotates the WAL: the new one is mapped again.
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			before = db.Metrics()
			maps.Copy(want, putN(t, db, 500, 520, long))
			m = db.Metrics()
			if walBytes, mapped := m.WALBytes-before.WALBytes, m.WALMappedBytes-before.WALMappedBytes; walBytes == 0 || mapped != walBytes {
				t.Fatalf("the WAL after the rotation took %d bytes, %d of them mapped; want all mapped", walBytes, mapped)
			}
			maps.Copy(want, putN(t, db, 520, 700, long)) // and refused again, past refuseFrom
			if refused := fs.refusals(); len(refused) != 2 {
				t.Fatalf("stores refused at offsets %v, want one for each WAL", refused)
			}

			crashes := map[string]*vfs.MemFS{"process crash": processCrash(t, mem, "db")}
			if !noSync {
				crashes["power loss"] = mem.CrashClone()
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			for _, name := range filesOf(t, mem, "db", fileTypeLog) {
				if size, torn, _ := walEnd(t, mem, name); torn >= 0 {
					t.Errorf("after Close, %s ends in a tail at %d of %d bytes: its zeros were not cut", name, torn, size)
				}
			}
			crashes["reopen after Close"] = mem
			for name, c := range crashes {
				t.Run(name, func(t *testing.T) {
					db := mustOpen(t, "db", walMapOptions(c, walModes[0], noSync))
					wantData(t, db, want)
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}
