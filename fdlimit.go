package shale

import "syscall"

// defaultMaxOpenFiles is Options.MaxOpenFiles' default: 10,000, or half the
// process's soft limit on open descriptors when that is less, and at least
// 64 (see MaxOpenFiles). vfs's file locking ties the package to Unix
// systems, all of which have the limit.
func defaultMaxOpenFiles() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 1_000
	}
	return maxOpenFilesFor(uint64(l.Cur)) // int64 on some BSDs
}

// maxOpenFilesFor is the default bound under a descriptor limit.
func maxOpenFilesFor(limit uint64) int { return int(min(10_000, max(limit/2, 64))) }
