package shale

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/wal"
	"github.com/shale-db/shale/vfs"
)

// appendRecords frames MANIFEST records for FuzzReplayManifest: each is
// its length (uvarint) and its bytes; a length that overruns the input
// takes what is left.
func appendRecords(dst []byte, records ...[]byte) []byte {
	for _, r := range records {
		dst = binary.AppendUvarint(dst, uint64(len(r)))
		dst = append(dst, r...)
	}
	return dst
}

func splitRecords(data []byte) [][]byte {
	var records [][]byte
	for len(data) > 0 {
		n, k := binary.Uvarint(data)
		if k <= 0 {
			return append(records, data)
		}
		data = data[k:]
		n = min(n, uint64(len(data)))
		records = append(records, data[:n])
		data = data[n:]
	}
	return records
}

// writeManifestRecords writes records as MANIFEST-num of db in fs, each a record
// of the log synced, as the DB writes them.
func writeManifestRecords(t testing.TB, db *DB, num uint64, records [][]byte) {
	f, err := db.fs.Create(db.fileName(fileTypeManifest, num))
	if err != nil {
		t.Fatal(err)
	}
	w := wal.NewWriter(f)
	for _, r := range records {
		if _, err := w.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// manifestRecords returns the records of a real store's MANIFEST, after
// flushes, range deletions and compactions.
func manifestRecords(t testing.TB) [][]byte {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, MemTableSize: 16 << 10, TargetFileSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		for i := range 300 {
			if err := db.Put(fmt.Appendf(nil, "k%04d", i*7%1000), fmt.Appendf(nil, "v%d-%d", round, i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.DeleteRange(fmt.Appendf(nil, "k%04d", round*100), fmt.Appendf(nil, "k%04d", round*100+50)); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = &DB{dir: "db", fs: fs}
	num, err := db.readCurrent()
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open(db.fileName(fileTypeManifest, num))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := wal.NewReader(f, "MANIFEST")
	var records [][]byte
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return records
		}
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, append([]byte(nil), rec...))
	}
}

// FuzzReplayManifest replays a MANIFEST of arbitrary records (version
// edits and commit records), written as the DB writes them, with Open's
// own replayManifest. It must give a corruption error naming the MANIFEST,
// or a version; a version must survive the round Open makes when it
// rotates the MANIFEST (a snapshot of it written with the counters, then
// replayed) unchanged, counters included. The seeds are the records of a
// real store's MANIFEST, in order, without their commit records, with one
// first, and cut short.
//
//	go test -run '^$' -fuzz '^FuzzReplayManifest$' .
func FuzzReplayManifest(f *testing.F) {
	records := manifestRecords(f)
	commit := manifest.AppendCommit(nil)
	var edits [][]byte
	for _, r := range records {
		if string(r) != string(commit) {
			edits = append(edits, r)
		}
	}
	f.Add(appendRecords(nil, records...))
	f.Add(appendRecords(nil, edits...))
	f.Add(appendRecords(nil, append([][]byte{commit}, records...)...))
	f.Add(appendRecords(nil, records[:len(records)/2]...))
	f.Add(appendRecords(nil, records[0], records[len(records)-2], records[len(records)-1]))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("db", 0o755); err != nil {
			t.Fatal(err)
		}
		db := &DB{dir: "db", fs: fs}
		writeManifestRecords(t, db, 1, splitRecords(data))
		v, cutOff, err := db.replayManifest(1)
		if err != nil {
			var ce *base.CorruptionError
			if !errors.Is(err, ErrCorruption) || !errors.As(err, &ce) || ce.File != db.fileName(fileTypeManifest, 1) {
				t.Fatalf("replay: %v; want a corruption error naming the MANIFEST", err)
			}
			return
		}
		if cutOff != "" {
			t.Fatalf("an intact log read as cut off: %s", cutOff)
		}

		lastSeq, logNum := db.lastSeq, db.logNum
		db.nextFileNum = max(db.nextFileNum, 2)
		num := db.nextFileNum
		if err := db.createManifest(v, &manifest.VersionEdit{LastSeqNum: lastSeq, LogNum: logNum}); err != nil {
			t.Fatal(err)
		}
		db.manifest.Close()
		again := &DB{dir: "db", fs: fs}
		if n, err := again.readCurrent(); err != nil || n != num {
			t.Fatalf("CURRENT names %d (%v); want %d", n, err, num)
		}
		v2, cutOff, err := again.replayManifest(num)
		if err != nil || cutOff != "" {
			t.Fatalf("replaying the snapshot: %v %s", err, cutOff)
		}
		for level := range v.Levels {
			if len(v.Levels[level]) != len(v2.Levels[level]) ||
				len(v.Levels[level]) > 0 && !reflect.DeepEqual(v.Levels[level], v2.Levels[level]) {
				t.Fatalf("L%d: %v; replayed from its snapshot: %v", level, v.Levels[level], v2.Levels[level])
			}
		}
		if again.lastSeq != lastSeq || again.logNum != logNum || again.nextFileNum != num+1 {
			t.Fatalf("counters %d, %d, %d; replayed from the snapshot %d, %d, %d",
				lastSeq, logNum, num+1, again.lastSeq, again.logNum, again.nextFileNum)
		}
	})
}
