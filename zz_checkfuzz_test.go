package shale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shale-db/shale/vfs"
)

func readAll(fs vfs.FS) (err error) {
	db, err := Open("db", &Options{FS: fs})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	it := db.NewIter(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	for i := range 3000 {
		if _, err := db.Get([]byte(fmt.Sprintf("key%03d", i))); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("get: %w", err)
		}
	}
	if err := db.Compact(); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

func TestZZCheckFuzz(t *testing.T) {
	for _, crash := range []bool{false, true} {
		mem := vfs.NewMem()
		db := mustOpen(t, "db", &Options{FS: mem, MemTableSize: 32 << 10})
		putNumbered(t, db, 2000)
		for i := range 300 {
			db.Delete([]byte(fmt.Sprintf("key%03d", i*3)))
		}
		db.DeleteRange([]byte("key1500"), []byte("key1600"))
		var base *vfs.MemFS
		if crash {
			db.Flush()
			putNumbered(t, db, 100)
			base = processCrash(t, mem, "db")
			db.Close()
		} else {
			db.Close()
			base = processCrash(t, mem, "db")
		}
		if err := Check("db", &Options{FS: base}); err != nil {
			t.Fatalf("clean check: %v", err)
		}
		names, _ := base.List("db")
		rng := rand.New(rand.NewPCG(1, uint64(len(names))))
		missed, caught, total := 0, 0, 0
		want := memKeys(t, processCrash(t, base, "db"))
		defer func() { t.Logf("crash=%v: %d flips, Check caught %d", crash, total, caught) }()
		for _, name := range names {
			if name == "LOCK" {
				continue
			}
			info, _ := base.Stat("db/" + name)
			size := info.Size()
			if size == 0 {
				continue
			}
			for trial := range 40 {
				off := rng.Int64N(size)
				if trial < 8 {
					off = size - 1 - int64(trial)*int64(max(1, size/8))
					if off < 0 {
						off = 0
					}
				}
				fs := processCrash(t, base, "db")
				flipMem(t, fs, "db/"+name, off)
				cerr := Check("db", &Options{FS: fs})
				rerr := readAll(processCrash(t, fs, "db"))
				if cerr != nil {
					caught++
				} else if rerr == nil {
					if got := memKeys(t, processCrash(t, fs, "db")); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("crash=%v %s@%d: Check nil, Open fine, but data differs", crash, name, off)
					}
				}
				total++
				if cerr == nil && rerr != nil {
					missed++
					if missed < 15 {
						t.Errorf("crash=%v %s@%d/%d: Check nil, but %v", crash, name, off, size, strings.ReplaceAll(rerr.Error(), "\n", " "))
					}
				}
			}
		}
	}
}
