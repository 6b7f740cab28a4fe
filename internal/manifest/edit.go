package manifest

// A VersionEdit is one record of the MANIFEST log: the change from one
// version to the next. The MANIFEST is a log file in the wal package's
// framing whose records are encoded edits and commit records; replaying the
// edits in order from an empty version rebuilds the current one. The first
// record of every MANIFEST is a snapshot: an edit that adds every live file.
//
// Encoding of a record: a sequence of fields, each a tag varint followed by
// the tag's payload. The first field is always the MANIFEST format version.
// Unknown tags are corruption, so a newer format must use a new version.
//
//	tag 1  format version   uvarint: 1, 2 or 3 (this code writes 2 and 3)
//	tag 2  next file number uvarint
//	tag 3  last seqnum      uvarint
//	tag 4  log number       uvarint: WALs numbered below it are obsolete
//	tag 5  deleted file     uvarint level, uvarint file number
//	tag 6  new file         uvarint level, uvarint file number,
//	                        uvarint size,
//	                        uvarint smallest seqnum, uvarint largest seqnum,
//	                        uvarint len + bytes: smallest internal key (encoded),
//	                        uvarint len + bytes: largest internal key (encoded);
//	                        in version 3 either key may be of kind
//	                        RANGEDEL (2): a table's bounds that come from
//	                        its range tombstones, the largest one then
//	                        being base.RangeDelSentinel, an exclusive bound
//	tag 7  commit           no payload; version 2 only, and then the only
//	                        field after the version: a commit record
//
// A commit record follows every edit after the first once the edit is
// durable, and the DB deletes nothing the edit made obsolete before the
// commit record is durable too. So when a MANIFEST ends in damage, whatever
// it cut off was either an edit that never took effect on disk, or a commit
// record (with perhaps its edit) after which obsolete files may be gone: the
// DB then checks that the files the surviving version needs are all present.
// Version 1 MANIFESTs (from before commit records) are still read; their
// edits count as committed.
//
// Version 3 is version 2 plus range-tombstone bounds. An edit is written in
// version 3 exactly when it adds a table with such a bound, and every other
// record in version 2. So a binary from before range deletions refuses, as
// an unknown format version, exactly the MANIFEST records whose bounds it
// would misread as inclusive.
//
// Varints are encoding/binary's unsigned LEB128. Lengths are checked against
// the bytes remaining before anything is sliced.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/shale-db/shale/internal/base"
)

// MANIFEST format versions. This code writes formatVersion and
// formatVersionRangeDels, and reads all three.
const (
	formatVersion1         = 1 // edits only, no commit records
	formatVersion          = 2 // commit records after edits
	formatVersionRangeDels = 3 // table bounds may be of kind RANGEDEL
)

const (
	tagFormatVersion = 1
	tagNextFileNum   = 2
	tagLastSeqNum    = 3
	tagLogNum        = 4
	tagDeletedFile   = 5
	tagNewFile       = 6
	tagCommit        = 7
)

// DeletedFile names a file removed from a level.
type DeletedFile struct {
	Level   int
	FileNum uint64
}

// NewFile is a file added to a level.
type NewFile struct {
	Level int
	Meta  *FileMeta
}

// VersionEdit is a change to the set of live files plus the counters the DB
// recovers from the MANIFEST. Zero counters are not written.
type VersionEdit struct {
	NextFileNum uint64
	LastSeqNum  base.SeqNum
	LogNum      uint64
	Deleted     []DeletedFile
	Added       []NewFile
}

// Encode appends the edit's encoding to dst.
func (e *VersionEdit) Encode(dst []byte) []byte {
	version := uint64(formatVersion)
	for _, a := range e.Added {
		if a.Meta.Smallest.Kind() == base.KindRangeDelete || a.Meta.Largest.Kind() == base.KindRangeDelete {
			version = formatVersionRangeDels
		}
	}
	dst = binary.AppendUvarint(dst, tagFormatVersion)
	dst = binary.AppendUvarint(dst, version)
	if e.NextFileNum != 0 {
		dst = binary.AppendUvarint(dst, tagNextFileNum)
		dst = binary.AppendUvarint(dst, e.NextFileNum)
	}
	if e.LastSeqNum != 0 {
		dst = binary.AppendUvarint(dst, tagLastSeqNum)
		dst = binary.AppendUvarint(dst, uint64(e.LastSeqNum))
	}
	if e.LogNum != 0 {
		dst = binary.AppendUvarint(dst, tagLogNum)
		dst = binary.AppendUvarint(dst, e.LogNum)
	}
	for _, d := range e.Deleted {
		dst = binary.AppendUvarint(dst, tagDeletedFile)
		dst = binary.AppendUvarint(dst, uint64(d.Level))
		dst = binary.AppendUvarint(dst, d.FileNum)
	}
	for _, a := range e.Added {
		m := a.Meta
		dst = binary.AppendUvarint(dst, tagNewFile)
		dst = binary.AppendUvarint(dst, uint64(a.Level))
		dst = binary.AppendUvarint(dst, m.FileNum)
		dst = binary.AppendUvarint(dst, m.Size)
		dst = binary.AppendUvarint(dst, uint64(m.SmallestSeq))
		dst = binary.AppendUvarint(dst, uint64(m.LargestSeq))
		dst = binary.AppendUvarint(dst, uint64(m.Smallest.EncodedLen()))
		dst = m.Smallest.Append(dst)
		dst = binary.AppendUvarint(dst, uint64(m.Largest.EncodedLen()))
		dst = m.Largest.Append(dst)
	}
	return dst
}

// commitRecord is the one encoding of a commit record.
var commitRecord = []byte{tagFormatVersion, formatVersion, tagCommit}

// AppendCommit appends the encoding of a commit record to dst.
func AppendCommit(dst []byte) []byte { return append(dst, commitRecord...) }

var errEdit = errors.New("malformed version edit")

type editDecoder struct{ b []byte }

func (d *editDecoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		return 0, errEdit
	}
	d.b = d.b[n:]
	return v, nil
}

func (d *editDecoder) level() (int, error) {
	v, err := d.uvarint()
	if err != nil || v >= NumLevels {
		return 0, fmt.Errorf("%w: level %d", errEdit, v)
	}
	return int(v), nil
}

func (d *editDecoder) key() (base.InternalKey, error) {
	n, err := d.uvarint()
	if err != nil || n > uint64(len(d.b)) {
		return base.InternalKey{}, errEdit
	}
	k, ok := base.DecodeInternalKey(d.b[:n])
	if !ok {
		return base.InternalKey{}, errEdit
	}
	d.b = d.b[n:]
	return k.Clone(), nil
}

// Record is one decoded MANIFEST record: an edit or a commit record.
type Record struct {
	// Version is the format version the record was written in.
	Version int
	// Edit is the version edit, or nil for a commit record.
	Edit *VersionEdit
}

// DecodeRecord decodes one MANIFEST record. file names the MANIFEST in
// errors, which match base.ErrCorruption. The edit shares no memory with b.
func DecodeRecord(b []byte, file string) (Record, error) {
	e := &VersionEdit{}
	d := &editDecoder{b: b}
	corrupt := func(err error) (Record, error) {
		return Record{}, base.CorruptionErrorf(file, -1, "version edit byte %d: %v", len(b)-len(d.b), err)
	}
	version := 0
	for len(d.b) > 0 {
		tag, err := d.uvarint()
		if err != nil {
			return corrupt(err)
		}
		if (version == 0) != (tag == tagFormatVersion) {
			return corrupt(fmt.Errorf("%w: format version must come first, once", errEdit))
		}
		switch tag {
		case tagFormatVersion:
			v, err := d.uvarint()
			if err != nil {
				return corrupt(err)
			}
			if v != formatVersion1 && v != formatVersion && v != formatVersionRangeDels {
				return corrupt(fmt.Errorf("unknown MANIFEST format version %d", v))
			}
			version = int(v)
		case tagCommit:
			if !bytes.Equal(b, commitRecord) {
				return corrupt(fmt.Errorf("%w: a commit record is exactly %x", errEdit, commitRecord))
			}
			return Record{Version: version}, nil
		case tagNextFileNum:
			if e.NextFileNum, err = d.uvarint(); err != nil {
				return corrupt(err)
			}
		case tagLastSeqNum:
			v, err := d.uvarint()
			if err != nil || base.SeqNum(v) > base.MaxSeqNum {
				return corrupt(errEdit)
			}
			e.LastSeqNum = base.SeqNum(v)
		case tagLogNum:
			if e.LogNum, err = d.uvarint(); err != nil {
				return corrupt(err)
			}
		case tagDeletedFile:
			var df DeletedFile
			if df.Level, err = d.level(); err != nil {
				return corrupt(err)
			}
			if df.FileNum, err = d.uvarint(); err != nil {
				return corrupt(err)
			}
			e.Deleted = append(e.Deleted, df)
		case tagNewFile:
			var nf NewFile
			m := &FileMeta{}
			if nf.Level, err = d.level(); err != nil {
				return corrupt(err)
			}
			var s1, s2 uint64
			for _, p := range []*uint64{&m.FileNum, &m.Size, &s1, &s2} {
				if *p, err = d.uvarint(); err != nil {
					return corrupt(err)
				}
			}
			m.SmallestSeq, m.LargestSeq = base.SeqNum(s1), base.SeqNum(s2)
			if m.Smallest, err = d.key(); err != nil {
				return corrupt(err)
			}
			if m.Largest, err = d.key(); err != nil {
				return corrupt(err)
			}
			for _, k := range []base.InternalKey{m.Smallest, m.Largest} {
				if k.Kind() > base.KindRangeDelete || k.Kind() == base.KindRangeDelete && version < formatVersionRangeDels {
					return corrupt(fmt.Errorf("%w: file %06d bound %s of a kind format version %d does not have", errEdit, m.FileNum, k, version))
				}
			}
			if base.Compare(m.Smallest, m.Largest) > 0 {
				return corrupt(fmt.Errorf("%w: file %06d smallest key after largest", errEdit, m.FileNum))
			}
			nf.Meta = m
			e.Added = append(e.Added, nf)
		default:
			return corrupt(fmt.Errorf("%w: unknown tag %d", errEdit, tag))
		}
	}
	if version == 0 {
		return corrupt(fmt.Errorf("%w: empty", errEdit))
	}
	return Record{Version: version, Edit: e}, nil
}

// Apply returns the version that results from applying e to v; v is not
// changed. L0 stays sorted newest first (by largest seqnum, then file
// number), deeper levels by smallest key. Deleting a file that is not there
// or adding one twice is an error: the edit does not fit this version.
func (v *Version) Apply(e *VersionEdit) (*Version, error) {
	nv := &Version{}
	for level := range v.Levels {
		nv.Levels[level] = slices.Clone(v.Levels[level])
	}
	for _, d := range e.Deleted {
		files := nv.Levels[d.Level]
		i := slices.IndexFunc(files, func(f *FileMeta) bool { return f.FileNum == d.FileNum })
		if i < 0 {
			return nil, fmt.Errorf("version edit deletes file %06d, which is not in L%d", d.FileNum, d.Level)
		}
		nv.Levels[d.Level] = slices.Delete(files, i, i+1)
	}
	for _, a := range e.Added {
		for _, files := range nv.Levels {
			if slices.ContainsFunc(files, func(f *FileMeta) bool { return f.FileNum == a.Meta.FileNum }) {
				return nil, fmt.Errorf("version edit adds file %06d twice", a.Meta.FileNum)
			}
		}
		nv.Levels[a.Level] = append(nv.Levels[a.Level], a.Meta)
	}
	slices.SortFunc(nv.Levels[0], func(a, b *FileMeta) int {
		if a.LargestSeq != b.LargestSeq {
			return cmpDesc(uint64(a.LargestSeq), uint64(b.LargestSeq))
		}
		return cmpDesc(a.FileNum, b.FileNum)
	})
	for level := 1; level < NumLevels; level++ {
		files := nv.Levels[level]
		slices.SortFunc(files, func(a, b *FileMeta) int { return base.Compare(a.Smallest, b.Smallest) })
		for i := 1; i < len(files); i++ {
			if !files[i-1].EndsBefore(files[i].Smallest.UserKey) {
				return nil, fmt.Errorf("L%d files %06d and %06d overlap", level, files[i-1].FileNum, files[i].FileNum)
			}
		}
	}
	return nv, nil
}

func cmpDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// Snapshot returns an edit that adds every file of v: the first record of a
// new MANIFEST.
func (v *Version) Snapshot() *VersionEdit {
	e := &VersionEdit{}
	for level, files := range v.Levels {
		for _, f := range files {
			e.Added = append(e.Added, NewFile{Level: level, Meta: f})
		}
	}
	return e
}
