package shale

// Files in a store's directory:
//
//	NNNNNN.log        a write-ahead log (wal framing; records are batches)
//	NNNNNN.sst        an SSTable (format: internal/sstable/writer.go)
//	MANIFEST-NNNNNN   a log (wal framing) of version edits
//	                  (format: internal/manifest/edit.go)
//	CURRENT           the name of the live MANIFEST and a newline; replaced by
//	                  writing CURRENT.NNNNNN.dbtmp, fsync, rename, fsync dir
//	LOCK              flock'd while the store is open
//
// All numbers come from one counter, the next file number, which every
// version edit records.

import (
	"fmt"
	"strconv"
	"strings"
)

type fileType int

const (
	fileTypeLog fileType = iota
	fileTypeTable
	fileTypeManifest
	fileTypeCurrent
	fileTypeLock
	fileTypeTemp
)

func (db *DB) fileName(t fileType, num uint64) string {
	return db.fs.PathJoin(db.dir, baseFileName(t, num))
}

func baseFileName(t fileType, num uint64) string {
	switch t {
	case fileTypeLog:
		return fmt.Sprintf("%06d.log", num)
	case fileTypeTable:
		return fmt.Sprintf("%06d.sst", num)
	case fileTypeManifest:
		return fmt.Sprintf("MANIFEST-%06d", num)
	case fileTypeCurrent:
		return "CURRENT"
	case fileTypeLock:
		return "LOCK"
	case fileTypeTemp:
		return fmt.Sprintf("CURRENT.%06d.dbtmp", num)
	}
	panic("unknown file type")
}

// parseFileName recognises the names baseFileName makes.
func parseFileName(name string) (fileType, uint64, bool) {
	num := func(s string) (uint64, bool) {
		n, err := strconv.ParseUint(s, 10, 64)
		return n, err == nil && len(s) >= 6
	}
	switch {
	case name == "CURRENT":
		return fileTypeCurrent, 0, true
	case name == "LOCK":
		return fileTypeLock, 0, true
	case strings.HasPrefix(name, "MANIFEST-"):
		n, ok := num(name[len("MANIFEST-"):])
		return fileTypeManifest, n, ok
	case strings.HasSuffix(name, ".log"):
		n, ok := num(strings.TrimSuffix(name, ".log"))
		return fileTypeLog, n, ok
	case strings.HasSuffix(name, ".sst"):
		n, ok := num(strings.TrimSuffix(name, ".sst"))
		return fileTypeTable, n, ok
	case strings.HasPrefix(name, "CURRENT.") && strings.HasSuffix(name, ".dbtmp"):
		n, ok := num(strings.TrimSuffix(strings.TrimPrefix(name, "CURRENT."), ".dbtmp"))
		return fileTypeTemp, n, ok
	}
	return 0, 0, false
}
