// Package procstat reads what Linux's /proc says of this process, for the
// benchmarks (cmd/kvbench, and the peers module's runner): its I/O
// counters, its peak and current resident set (Status) and its open file
// descriptors; and its CPU time. Other systems have no /proc, and every
// function but CPUTime then returns an error.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// IO holds the counters of /proc/self/io that the benchmarks report: read
// and write syscalls (syscr, syscw) and the bytes they moved (rchar, wchar,
// page cache hits included). WriteBytes (write_bytes) is the bytes of the
// pages the process dirtied for storage, a page each time a clean page
// becomes dirty, whether by write(2) or by a store through a shared memory
// mapping, which wchar does not see. They count the whole process.
type IO struct {
	RChar, WChar, SyscR, SyscW, WriteBytes int64
}

// Sub returns the counts from b to a.
func (a IO) Sub(b IO) IO {
	return IO{a.RChar - b.RChar, a.WChar - b.WChar, a.SyscR - b.SyscR, a.SyscW - b.SyscW, a.WriteBytes - b.WriteBytes}
}

// ReadIO reads the process's I/O counters.
func ReadIO() (IO, error) {
	var io IO
	fields := map[string]*int64{"rchar": &io.RChar, "wchar": &io.WChar, "syscr": &io.SyscR, "syscw": &io.SyscW, "write_bytes": &io.WriteBytes}
	seen := 0
	err := procFields("/proc/self/io", func(name, value string) error {
		p := fields[name]
		if p == nil {
			return nil
		}
		seen++
		v, err := strconv.ParseInt(value, 10, 64)
		*p = v
		return err
	})
	if err == nil && seen < len(fields) {
		err = fmt.Errorf("/proc/self/io lacks some of rchar, wchar, syscr, syscw, write_bytes")
	}
	return io, err
}

// PeakRSS is VmHWM from /proc/self/status, in bytes: the process's peak
// resident set so far.
func PeakRSS() (int64, error) {
	v, err := Status("VmHWM")
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// Status returns the named sizes of /proc/self/status ("VmRSS",
// "RssAnon", ...), in bytes, in the order named.
func Status(names ...string) ([]int64, error) {
	out := make([]int64, len(names))
	seen := 0
	err := procFields("/proc/self/status", func(name, value string) error {
		i := slices.Index(names, name)
		if i < 0 {
			return nil
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(value, " kB"), 10, 64)
		out[i] = kb << 10
		seen++
		return err
	})
	if err == nil && seen < len(names) {
		err = fmt.Errorf("/proc/self/status lacks some of %s", strings.Join(names, ", "))
	}
	return out, err
}

// OpenFiles counts the process's open file descriptors.
func OpenFiles() (int, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	return len(fds), err
}

// procFields calls f with each "name: value" line of a /proc file.
func procFields(path string, f func(name, value string) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for line := range bytes.Lines(data) {
		name, value, ok := strings.Cut(strings.TrimSpace(string(line)), ":")
		if !ok {
			continue
		}
		if err := f(name, strings.TrimSpace(value)); err != nil {
			return fmt.Errorf("%s: %s: %w", path, name, err)
		}
	}
	return nil
}

// CPUTime is the CPU time the process has used so far, user and system,
// all of its threads (getrusage(2) of RUSAGE_SELF, which every Unix has).
func CPUTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
