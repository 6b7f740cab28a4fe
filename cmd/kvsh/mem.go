package main

// A store on the in-memory file system (kvsh -mem), which kvsh can crash,
// cut the power of and damage, and the commands that do it: crash,
// powerloss, damage and ls. Only there: on a real directory they are
// refused, since kvsh cannot take back what the operating system holds,
// and must never flip bits in someone's files. nosync, which reopens the
// store with or without Options.NoSync, works on both.

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/vfs"
)

// memFlagUsage is the help of kvsh's -mem flag.
const memFlagUsage = "open the store on an in-memory file system, where crash, powerloss and damage crash the process, cut the power and flip bits, and open opens other stores (nothing is written to disk; the stores are gone when kvsh ends)"

// newMemShell opens a new store named dir on a new, empty in-memory file
// system.
func newMemShell(out io.Writer, dir string, interactive bool) (*shell, error) {
	return newShellWith(out, dir, interactive, shale.Options{FS: vfs.NewMem()})
}

// memFS returns the in-memory file system of the store, or an error that
// says why cmd needs one: the store is in a real directory.
func (sh *shell) memFS(cmd, why string) (*vfs.MemFS, error) {
	if fs, ok := sh.opts.FS.(*vfs.MemFS); ok {
		return fs, nil
	}
	return nil, fmt.Errorf("%s works only on a store in memory (start kvsh -mem): %s is a real directory, %s", cmd, sh.dir, why)
}

// crashModel is one of powerloss's crash models: a vfs.CrashMode, its
// name and what it keeps.
type crashModel struct {
	name string
	mode vfs.CrashMode
	does string
}

var crashModels = []crashModel{
	{"synced", vfs.CrashSynced, "each file keeps exactly the bytes synced to it"},
	{"torn", vfs.CrashTorn, "each file keeps the bytes synced to it and a prefix, of random length, of the rest: an append cut short"},
	{"pages", vfs.CrashPages, "each file keeps the bytes synced to it and a random subset of its unsynced 4 KiB pages, zeros in place of the others"},
}

func cmdCrash(sh *shell, _ []string, _ map[string]string) error {
	fs, err := sh.memFS("crash", "and the operating system keeps what a process wrote when it dies: kvsh cannot take it back")
	if err != nil {
		return err
	}
	return sh.pullPlug(fs.ProcessCrashClone,
		fmt.Sprintf("crash: the process died without closing %s; the operating system keeps every byte it wrote, synced or not", sh.dir))
}

func cmdPowerLoss(sh *shell, args []string, opts map[string]string) error {
	fs, err := sh.memFS("powerloss", "whose files kvsh cannot make the disk forget")
	if err != nil {
		return err
	}
	name := "synced"
	if len(args) == 1 {
		name = args[0]
	}
	i := slices.IndexFunc(crashModels, func(m crashModel) bool { return m.name == name })
	if i < 0 {
		return errors.New("usage: powerloss [synced|torn|pages] [seed=N]")
	}
	m := crashModels[i]
	seed := sh.rng.Uint64()
	if s, ok := opts["seed"]; ok {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			return fmt.Errorf("seed: want a non-negative integer, not %s", shale.FormatKey([]byte(s)))
		}
	}
	what := fmt.Sprintf("power loss (%s): %s; each directory keeps the entries of its last sync", m.name, m.does)
	if m.mode != vfs.CrashSynced {
		what = fmt.Sprintf("power loss (%s, seed=%d): %s; each directory keeps the entries of its last sync", m.name, seed, m.does)
	}
	return sh.pullPlug(func() *vfs.MemFS { return fs.CrashCloneWith(vfs.CrashOptions{Mode: m.mode, Seed: seed}) }, what)
}

// pullPlug ends the session's store as a crash does: crashed returns the
// file system the crash leaves, which replaces the store's, and the store
// is opened again on it. It prints what (what happened), what the crash
// did to each file, and what recovery found.
func (sh *shell) pullPlug(crashed func() *vfs.MemFS, what string) error {
	if sh.db == nil {
		return errors.New("no store is open to crash")
	}
	before := sh.db.Metrics().LastSeqNum
	was, err := sh.memFiles()
	if err != nil {
		return err
	}
	fs := crashed()
	// The process is gone: its batch and snapshot with it. Closing the old
	// store writes only to the file system the crash replaced.
	if sh.batch != nil {
		what += fmt.Sprintf("; the uncommitted batch of %s died with it", plural(sh.batch.Count(), "write"))
		sh.batch = nil
	}
	if sh.snap != nil {
		what += "; the snapshot died with it"
		sh.releaseSnapshot()
	}
	sh.closeStore() // its error, if any, went with the file system
	fmt.Fprintln(sh.out, what)
	if err := sh.printCrashed(was, fs); err != nil {
		return err
	}
	sh.opts.FS = fs
	return sh.reopenMem(before)
}

// memFile is a file of the store as it was before a crash: the bytes
// written to it.
type memFile struct {
	name    string
	written []byte
}

// memFiles returns the files of the store's directory as they are now.
func (sh *shell) memFiles() ([]memFile, error) {
	fs := sh.opts.FS.(*vfs.MemFS)
	now := fs.ProcessCrashClone() // every file as of one instant
	names, err := now.List(sh.dir)
	if err != nil {
		return nil, err
	}
	var files []memFile
	for _, name := range names {
		path := now.PathJoin(sh.dir, name)
		data, err := readAll(now, path)
		if err != nil || name == "LOCK" {
			continue // a directory, or the lock
		}
		st, err := fs.FileState(path)
		if err != nil {
			return nil, err
		}
		files = append(files, memFile{name, data[:min(st.Written, int64(len(data)))]})
	}
	return files, nil
}

// printCrashed prints, for each file of the store before the crash (was),
// what the crash took from it: fs is the file system after.
func (sh *shell) printCrashed(was []memFile, fs vfs.FS) error {
	after, err := fs.List(sh.dir)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return err
	}
	changed := false
	for _, f := range was {
		if !slices.Contains(after, f.name) {
			fmt.Fprintf(sh.out, "  %s: gone, with the %s written to it (its name was never synced into the directory)\n", f.name, plural(len(f.written), "byte"))
			changed = true
			continue
		}
		is, err := readAll(fs, fs.PathJoin(sh.dir, f.name))
		if err != nil {
			return err
		}
		switch intact := intactPrefix(f.written, is); {
		case intact == 0 && len(f.written) > 0:
			fmt.Fprintf(sh.out, "  %s: lost all %s written to it\n", f.name, plural(len(f.written), "byte"))
			changed = true
		case intact < len(f.written):
			fmt.Fprintf(sh.out, "  %s: intact up to byte %d of the %d written to it\n", f.name, intact, len(f.written))
			changed = true
		}
	}
	var back []string
	for _, name := range after {
		if name != "LOCK" && !slices.ContainsFunc(was, func(f memFile) bool { return f.name == name }) {
			back = append(back, name)
		}
	}
	if len(back) > 0 {
		fmt.Fprintf(sh.out, "  back, their removal never synced into the directory (Open removes them again): %s\n", strings.Join(back, ", "))
		changed = true
	}
	if !changed {
		fmt.Fprintln(sh.out, "  every file kept every byte written to it")
	}
	return nil
}

// intactPrefix returns how many bytes of was is holds unchanged from the
// start: where the crash cut the file short, or its first page that was
// not written back. (Not the count of all the bytes that differ: a byte
// the crash zeroed may have been zero already, and in a WAL, whose COMMITs
// are sealed with a random salt, that varies from run to run.)
func intactPrefix(was, is []byte) int {
	n := min(len(was), len(is))
	for i := range n {
		if was[i] != is[i] {
			return i
		}
	}
	return n
}

func readAll(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// reopenMem opens the session's store again after a crash or damage and
// prints what recovery found. before is the last sequence number before the
// crash, or 0 if unknown.
func (sh *shell) reopenMem(before uint64) error {
	db, err := shale.Open(sh.dir, &sh.opts)
	if err != nil {
		return fmt.Errorf("reopening %s: %w (the store stays closed: check and repair work on it; the next command tries again)", sh.dir, err)
	}
	sh.setStore(db, sh.dir)
	r := db.Recovery()
	fmt.Fprintf(sh.out, "reopened %s: replayed %s (%s) from %s",
		sh.dir, plural(r.Batches, "WAL record"), plural(r.Entries, "write"), plural(r.WALs, "WAL"))
	if r.TornTail {
		fmt.Fprintf(sh.out, ", cut off a torn record at offset %d of the newest", r.TornTailAt)
	}
	fmt.Fprintf(sh.out, "; sequence number %d", r.LastSeqNum)
	switch {
	case before == 0:
	case r.LastSeqNum == before:
		fmt.Fprint(sh.out, ", as before: no write lost")
	case r.LastSeqNum < before:
		fmt.Fprintf(sh.out, ", %d before: the last %s lost", before, plural(int(before-r.LastSeqNum), "write"))
	}
	fmt.Fprintf(sh.out, "; %s\n", db.Metrics().Shape())
	return nil
}

// reopenClosed opens the session's in-memory store if a damage left it
// closed; a store in a real directory is opened with open.
func (sh *shell) reopenClosed() error {
	if _, ok := sh.opts.FS.(*vfs.MemFS); !ok {
		return errors.New("no store is open: open DIR")
	}
	return sh.reopenMem(0)
}

func cmdDamage(sh *shell, args []string, _ map[string]string) error {
	fs, err := sh.memFS("damage", "and kvsh never flips bits in files on disk")
	if err != nil {
		return err
	}
	off, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		return fmt.Errorf("OFFSET: want an integer (negative: from the end), not %s", shale.FormatKey([]byte(args[1])))
	}
	bit := 0
	if len(args) == 3 {
		if bit, err = strconv.Atoi(args[2]); err != nil || bit < 0 || bit > 7 {
			return fmt.Errorf("BIT: want 0 to 7, not %s", shale.FormatKey([]byte(args[2])))
		}
	}
	if sh.batch != nil || sh.snap != nil {
		return errors.New("damage closes the store, which would end the batch or snapshot: commit, abort or snapshot off first")
	}
	name, err := matchFile(fs, sh.dir, args[0])
	if err != nil {
		return err
	}
	// Closed first: Close writes to the files (the WAL's END, for one),
	// and the damage is to the closed store's bytes.
	if sh.db != nil {
		if err := sh.closeStore(); err != nil {
			return fmt.Errorf("closing %s: %w", sh.dir, err)
		}
	}
	path := fs.PathJoin(sh.dir, name)
	data, err := readAll(fs, path)
	if err != nil {
		return fmt.Errorf("%s is not a file", name)
	}
	if off < 0 {
		off += int64(len(data))
	}
	if len(data) == 0 {
		return fmt.Errorf("%s is empty: no byte to damage (%s is closed; the next command opens it)", name, sh.dir)
	}
	if off < 0 || off >= int64(len(data)) {
		return fmt.Errorf("OFFSET: %s holds %s, from offset 0 to %d (%s is closed; the next command opens it)", name, plural(len(data), "byte"), len(data)-1, sh.dir)
	}
	was := data[off]
	data[off] ^= 1 << bit
	if err := rewrite(fs, path, data); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "closed %s and flipped bit %d of byte %d of %s (0x%02x -> 0x%02x), durably; check and repair see it as it is, and the next command that reads the store opens it\n",
		sh.dir, bit, off, name, was, data[off])
	return nil
}

// matchFile returns the one name in dir that pattern (path.Match's
// syntax, as MANIFEST-* or *.log) matches.
func matchFile(fs vfs.FS, dir, pattern string) (string, error) {
	names, err := fs.List(dir)
	if err != nil {
		return "", err
	}
	var matched []string
	for _, name := range names {
		ok, err := path.Match(pattern, name)
		if err != nil {
			return "", fmt.Errorf("FILE: %w", err)
		}
		if ok {
			matched = append(matched, name)
		}
	}
	switch len(matched) {
	case 0:
		return "", fmt.Errorf("no file %s in %s (ls lists them)", pattern, dir)
	case 1:
		return matched[0], nil
	}
	return "", fmt.Errorf("%s names %d files (%s): name one", pattern, len(matched), strings.Join(matched, ", "))
}

// rewrite replaces the file path of fs with data, durably, as damage on
// the disk leaves it.
func rewrite(fs vfs.FS, path string, data []byte) error {
	f, err := fs.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.SyncDir(dirOf(path))
	}
	return err
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return "."
}

func cmdLs(sh *shell, _ []string, _ map[string]string) error {
	fs, err := sh.memFS("ls", "whose files your own ls lists")
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(sh.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "file\tsize\twritten\tsynced\tname synced\t")
	if err := listMem(tw, fs, sh.dir, ""); err != nil {
		return err
	}
	return tw.Flush()
}

// listMem lists the files of dir, and of the directories in it, with
// prefix before their names.
func listMem(w io.Writer, fs *vfs.MemFS, dir, prefix string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		path := fs.PathJoin(dir, name)
		st, err := fs.FileState(path)
		if err != nil { // a directory
			if err := listMem(w, fs, path, prefix+name+"/"); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(w, "%s%s\t%d\t%d\t%d\t%s\t\n", prefix, name, st.Size, st.Written, st.Synced, yesNo(st.NameDurable))
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func cmdNoSync(sh *shell, args []string, _ map[string]string) error {
	if len(args) == 0 {
		fmt.Fprintf(sh.out, "writes are %s\n", describeSync(sh.opts.NoSync))
		return nil
	}
	if args[0] != "on" && args[0] != "off" {
		return errors.New("usage: nosync [on|off]")
	}
	opts := sh.opts
	opts.NoSync = args[0] == "on"
	if err := sh.reopen(opts); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "closed and reopened %s: writes are %s\n", sh.dir, describeSync(opts.NoSync))
	return nil
}

func describeSync(noSync bool) string {
	if noSync {
		return "not synced (NoSync): a write survives a crash of the process, not a power loss"
	}
	return "synced before they return: a write survives a crash and a power loss"
}
