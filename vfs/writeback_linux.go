package vfs

import "golang.org/x/sys/unix"

// StartWriteback starts writing the file's dirty pages in [off, off+n) to
// the device and returns without waiting for them (sync_file_range with
// SYNC_FILE_RANGE_WRITE). It makes nothing durable: Sync does.
func (f osFile) StartWriteback(off, n int64) error {
	return unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
