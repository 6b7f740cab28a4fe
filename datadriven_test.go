package shale

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/shale-db/shale/internal/itertest"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/rangefilter"
	"github.com/shale-db/shale/vfs"
)

// ddState is one datadriven test file's store: an in-memory FS so that
// "crash" can keep exactly what was synced.
type ddState struct {
	t         *testing.T
	fs        *vfs.MemFS
	db        *DB
	opts      Options
	snapshots map[string]*Snapshot
	// loaded is the last "load": its key count and prefix, so "gets" can
	// generate lookups of keys that are there and keys that are not.
	loaded       int
	loadedPrefix string
	groups       int // the number of groups of the last load-groups
	// multiples and step are the last load-multiples' (see empty-scans).
	multiples, step int
}

// flushBatch applies b and flushes it into a table of its own, then, when
// d has the settle argument, waits for the compactions the picker wants.
func (s *ddState) flushBatch(d *datadriven.TestData, b *Batch) error {
	if err := s.db.Apply(b); err != nil {
		return err
	}
	if err := s.db.Flush(); err != nil {
		return err
	}
	if d.HasArg("settle") {
		return s.settle()
	}
	return nil
}

// TestDataDriven runs the cases in testdata/. Commands:
//
//	open [bloom=N|none] [filter=bloomN|monkeyN|ribbonN|fuse|none] [memtable=BYTES] [cache=BYTES|off] [compactions=off] [block=BYTES]
//	     [l0-threshold=N] [lbase=BYTES] [target-file-size=BYTES] [rowcache=BYTES] [rangefilter=BITS]
//	put KEY VALUE | del KEY | delrange FROM TO | get KEY [snapshot=NAME]
//	batch            (input: "put K V" / "del K" / "delrange FROM TO" lines,
//	                  applied atomically)
//	tombstones       (the range tombstones, fragmented, of each memtable and
//	                  table)
//	load n=N files=F [prefix=P] [value=V] [settle]
//	                 (keys P%06d for i < N, striped over F flushed L0 files:
//	                  file j holds the keys with i%F == j, so every file
//	                  spans the whole key range; settle: compact as the
//	                  picker wants after each flush)
//	gets [present=N] [absent=N] [span=N]
//	                 (input: one key per line, and/or N generated keys that
//	                  are, or are not, in the last load (or in the first
//	                  span keys of its prefix); prints each result
//	                  when there are few, then the disk reads and filter
//	                  counts the lookups cost)
//	load-groups groups=G keys=K files=F [settle]
//	                 (keys user%04d/%04d of the even groups 0, 2, ...,
//	                  2G-2, K each, striped by group over F flushed L0
//	                  files: file j holds the groups g with g/2%F == j, so
//	                  every file spans the whole key range and holds a few
//	                  prefixes; the odd groups are absent prefixes inside
//	                  every file's range)
//	scans [present=N] [absent=N]
//	                 (N scans of a whole group of the last load-groups, by
//	                  IterOptions.Prefix "userGGGG/", of present and of
//	                  absent groups spread over them; prints the keys, the
//	                  disk reads and the prefix filter counts they cost)
//	explain KEY      (the traced lookup)
//	explain-scan [lower=K] [upper=K] [prefix=P]
//	                 (the traced scan)
//	iter [lower=K] [upper=K] [snapshot=NAME]
//	                 (input: first, last, seek-ge K, seek-lt K, next, prev,
//	                  scan, reads (disk reads since the last); and put K V,
//	                  flush, compact on the DB while the iterator is open)
//	snapshot NAME | close-snapshot NAME
//	flush | compact | lsm | reopen | crash
//	rowcache         (the row cache's hits, misses and bytes)
//	filters          (per level: the filters' format, memory and bits per key)
//	settle           (run the picker's compactions in the foreground until
//	                  it picks none)
//	load-multiples, empty-scans, rangefilters: see datadriven_scans_test.go
//
// Every file of testdata is a case; its directories hold stores, not cases
// (the compatibility corpus and older stores, see TestCompatibility).
func TestDataDriven(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			s := &ddState{t: t, snapshots: map[string]*Snapshot{}}
			defer func() {
				if s.db != nil {
					s.db.Close()
				}
			}()
			datadriven.RunTest(t, filepath.Join("testdata", e.Name()), s.run)
		})
	}
}

func (s *ddState) run(t *testing.T, d *datadriven.TestData) string {
	out, err := s.exec(d)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return out
}

func (s *ddState) exec(d *datadriven.TestData) (string, error) {
	arg := func(i int) string {
		if i < len(d.CmdArgs) {
			return unquote(d.CmdArgs[i].Key)
		}
		s.t.Fatalf("%s: %s needs %d arguments", d.Pos, d.Cmd, i+1)
		return ""
	}
	switch d.Cmd {
	case "open":
		if s.db != nil {
			s.db.Close()
		}
		s.fs = vfs.NewMem()
		s.opts = Options{FS: s.fs, BlockCacheSize: -1}
		for _, a := range d.CmdArgs {
			v := a.Vals[0]
			switch a.Key {
			case "bloom":
				if v == "none" {
					s.opts.BloomBitsPerKey = NoFilter
				} else {
					s.opts.BloomBitsPerKey = atoi(s.t, v)
				}
			case "memtable":
				s.opts.MemTableSize = atoi(s.t, v)
			case "block":
				s.opts.BlockSize = atoi(s.t, v)
			case "cache":
				if v != "off" {
					s.opts.BlockCacheSize = atoi(s.t, v)
				}
			case "filter":
				switch {
				case v == "none":
					s.opts.FilterPolicy = UniformFilter(nil)
				case v == "fuse":
					s.opts.FilterPolicy = UniformFilter(FuseFilter())
				case strings.HasPrefix(v, "ribbon"):
					s.opts.FilterPolicy = UniformFilter(RibbonFilter(float64(atoi(s.t, strings.TrimPrefix(v, "ribbon")))))
				case strings.HasPrefix(v, "monkey"):
					s.opts.FilterPolicy = MonkeyBloom(atoi(s.t, strings.TrimPrefix(v, "monkey")))
				case strings.HasPrefix(v, "bloom"):
					s.opts.FilterPolicy = UniformFilter(BloomFilter(atoi(s.t, strings.TrimPrefix(v, "bloom"))))
				default:
					s.t.Fatalf("%s: unknown filter %s", d.Pos, v)
				}
			case "compactions":
				s.opts.DisableAutomaticCompactions = v == "off"
			case "l0-threshold":
				s.opts.L0CompactionThreshold = atoi(s.t, v)
			case "lbase":
				s.opts.LBaseMaxBytes = int64(atoi(s.t, v))
			case "target-file-size":
				s.opts.TargetFileSize = int64(atoi(s.t, v))
			case "rowcache":
				s.opts.RowCacheSize = atoi(s.t, v)
			case "prefix":
				s.opts.Prefix = FixedPrefix(atoi(s.t, v))
			case "rangefilter":
				s.opts.RangeFilter = &rangefilter.Options{BitsPerKey: atoi(s.t, v)}
			default:
				s.t.Fatalf("%s: unknown open option %s", d.Pos, a.Key)
			}
		}
		return s.open()
	case "reopen":
		if err := s.db.Close(); err != nil {
			return "", err
		}
		return s.open()
	case "crash":
		// What a power loss leaves: only synced bytes of synced names.
		// The old DB keeps running on the old FS until we close it.
		crashed := s.fs.CrashClone()
		s.db.Close()
		s.fs = crashed
		s.opts.FS = crashed
		return s.open()
	case "put":
		return "", s.db.Put([]byte(arg(0)), []byte(arg(1)))
	case "del":
		return "", s.db.Delete([]byte(arg(0)))
	case "delrange":
		return "", s.db.DeleteRange([]byte(arg(0)), []byte(arg(1)))
	case "tombstones":
		return s.tombstones(), nil
	case "batch":
		b := s.db.NewBatch()
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			f := splitQuoted(s.t, line)
			switch {
			case len(f) == 3 && f[0] == "put":
				b.Put([]byte(unquote(f[1])), []byte(unquote(f[2])))
			case len(f) == 2 && f[0] == "del":
				b.Delete([]byte(unquote(f[1])))
			case len(f) == 3 && f[0] == "delrange":
				b.DeleteRange([]byte(unquote(f[1])), []byte(unquote(f[2])))
			default:
				s.t.Fatalf("%s: bad batch line %q", d.Pos, line)
			}
		}
		return "", s.db.Apply(b)
	case "get":
		db := s.getter(d)
		v, err := db(([]byte(arg(0))))
		if errors.Is(err, ErrNotFound) {
			return "not found\n", nil
		}
		if err != nil {
			return "", err
		}
		return base.FormatKey(v) + "\n", nil
	case "load":
		var n, files int
		prefix, value := "key", "v"
		d.ScanArgs(s.t, "n", &n)
		d.ScanArgs(s.t, "files", &files)
		if d.HasArg("prefix") {
			d.ScanArgs(s.t, "prefix", &prefix)
		}
		if d.HasArg("value") {
			d.ScanArgs(s.t, "value", &value)
		}
		for j := 0; j < files; j++ {
			b := s.db.NewBatch()
			for i := j; i < n; i += files {
				b.Put(fmt.Appendf(nil, "%s%06d", prefix, i), []byte(value))
			}
			if err := s.flushBatch(d, b); err != nil {
				return "", err
			}
		}
		s.loaded, s.loadedPrefix = n, prefix
		return s.lsm(), nil
	case "gets":
		var b strings.Builder
		before := s.db.Metrics()
		found := 0
		keys := strings.Fields(d.Input)
		// present=N / absent=N: N keys spread evenly over the loaded
		// ones; an absent key is a loaded key plus "x", so it falls
		// inside every file's key range and only a filter can rule
		// the file out.
		span := s.loaded
		if d.HasArg("span") {
			d.ScanArgs(s.t, "span", &span)
		}
		for _, kind := range []string{"present", "absent"} {
			if d.HasArg(kind) {
				var n int
				d.ScanArgs(s.t, kind, &n)
				for i := 0; i < n; i++ {
					k := fmt.Sprintf("%s%06d", s.loadedPrefix, i*span/n)
					if kind == "absent" {
						k += "x"
					}
					keys = append(keys, k)
				}
			}
		}
		for _, k := range keys {
			v, err := s.db.Get([]byte(unquote(k)))
			switch {
			case errors.Is(err, ErrNotFound):
				if len(keys) <= 10 {
					fmt.Fprintf(&b, "%s: not found\n", k)
				}
			case err != nil:
				return "", err
			default:
				found++
				if len(keys) <= 10 {
					fmt.Fprintf(&b, "%s: %s\n", k, base.FormatKey(v))
				}
			}
		}
		after := s.db.Metrics()
		fmt.Fprintf(&b, "%d lookups, %d found\n", len(keys), found)
		fmt.Fprintf(&b, "disk reads: %d (%.2f per lookup)\n", after.DiskReads-before.DiskReads,
			float64(after.DiskReads-before.DiskReads)/float64(len(keys)))
		fmt.Fprintf(&b, "filter checks: %d, skips: %d, false positives: %d\n",
			after.FilterChecks-before.FilterChecks, after.FilterSkips-before.FilterSkips,
			after.FilterFalsePositives-before.FilterFalsePositives)
		return b.String(), nil
	case "load-groups":
		return s.loadGroups(d)
	case "scans":
		return s.scans(d)
	case "explain-scan":
		var o IterOptions
		for _, a := range d.CmdArgs {
			v := []byte(unquote(a.Vals[0]))
			switch a.Key {
			case "lower":
				o.LowerBound = v
			case "upper":
				o.UpperBound = v
			case "prefix":
				o.Prefix = v
			default:
				s.t.Fatalf("%s: unknown explain-scan option %s", d.Pos, a.Key)
			}
		}
		tr, err := s.db.TraceScan(&o)
		if err != nil {
			return "", err
		}
		return tr.String(), nil
	case "explain":
		tr, err := s.db.TraceGet([]byte(arg(0)))
		if err != nil {
			return "", err
		}
		return tr.String(), nil
	case "iter":
		return s.iter(d)
	case "snapshot":
		s.snapshots[arg(0)] = s.db.NewSnapshot()
		return "", nil
	case "close-snapshot":
		err := s.snapshots[arg(0)].Close()
		delete(s.snapshots, arg(0))
		return "", err
	case "flush":
		return "", s.db.Flush()
	case "compact":
		if err := s.db.Compact(); err != nil {
			return "", err
		}
		return s.lsm(), nil
	case "lsm":
		return s.lsm(), nil
	case "load-multiples":
		return s.loadMultiples(d)
	case "empty-scans":
		return s.emptyScans(d)
	case "rangefilters":
		return s.rangeFilters(), nil
	case "rowcache":
		m := s.db.Metrics()
		return fmt.Sprintf("row cache: %d hits, %d misses, %d bytes\n", m.RowCacheHits, m.RowCacheMisses, m.RowCacheBytes), nil
	case "filters":
		return s.filters(), nil
	case "settle":
		if err := s.settle(); err != nil {
			return "", err
		}
		return s.lsm(), nil
	}
	s.t.Fatalf("%s: unknown command %s", d.Pos, d.Cmd)
	return "", nil
}

// groupPrefix is the prefix of group g of load-groups.
func groupPrefix(g int) []byte { return fmt.Appendf(nil, "user%04d/", g) }

func (s *ddState) loadGroups(d *datadriven.TestData) (string, error) {
	var groups, keys, files int
	d.ScanArgs(s.t, "groups", &groups)
	d.ScanArgs(s.t, "keys", &keys)
	d.ScanArgs(s.t, "files", &files)
	for j := range files {
		b := s.db.NewBatch()
		for g := 2 * j; g < 2*groups; g += 2 * files {
			for i := range keys {
				b.Put(fmt.Appendf(groupPrefix(g), "%04d", i), []byte("value"))
			}
		}
		if err := s.flushBatch(d, b); err != nil {
			return "", err
		}
	}
	s.groups = groups
	return s.lsm(), nil
}

func (s *ddState) scans(d *datadriven.TestData) (string, error) {
	var b strings.Builder
	for _, kind := range []string{"present", "absent"} {
		if !d.HasArg(kind) {
			continue
		}
		var n int
		d.ScanArgs(s.t, kind, &n)
		before := s.db.Metrics()
		found := 0
		for i := range n {
			g := 2 * (i * s.groups / n)
			if kind == "absent" {
				g++
			}
			it := s.db.NewIter(&IterOptions{Prefix: groupPrefix(g)})
			for ok := it.First(); ok; ok = it.Next() {
				found++
			}
			if err := it.Close(); err != nil {
				return "", err
			}
		}
		after := s.db.Metrics()
		reads := after.DiskReads - before.DiskReads
		fmt.Fprintf(&b, "%d scans of %s prefixes: %d keys\n", n, kind, found)
		fmt.Fprintf(&b, "disk reads: %d (%.2f per scan)\n", reads, float64(reads)/float64(n))
		fmt.Fprintf(&b, "prefix filter checks: %d, skips: %d\n",
			after.PrefixFilterChecks-before.PrefixFilterChecks, after.PrefixFilterSkips-before.PrefixFilterSkips)
	}
	return b.String(), nil
}

// settle runs the compactions the picker wants, in the foreground, until it
// wants none: a deterministic stand-in for the background.
func (s *ddState) settle() error {
	for {
		ran, err := s.db.compactOnce()
		if err != nil || !ran {
			return err
		}
	}
}

func (s *ddState) open() (string, error) {
	db, err := Open("db", &s.opts)
	if err != nil {
		s.db = nil
		return "", err
	}
	s.db = db
	return "", nil
}

func (s *ddState) getter(d *datadriven.TestData) func([]byte) ([]byte, error) {
	if d.HasArg("snapshot") {
		var name string
		d.ScanArgs(s.t, "snapshot", &name)
		return s.snapshots[name].Get
	}
	return s.db.Get
}

// lsm prints the tree: files per level with their key ranges.
func (s *ddState) lsm() string {
	rs, _ := s.db.loadReadState(readLatest)
	defer rs.unref()
	v := rs.v
	var b strings.Builder
	if n := rs.mem.Len(); n > 0 {
		fmt.Fprintf(&b, "memtable: %d entries\n", n)
	}
	for level, files := range v.Levels {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d: %d files\n", level, len(files))
		if len(files) > 8 {
			continue
		}
		for _, f := range files {
			end := "]"
			if f.Largest.IsExclusiveSentinel() {
				end = ")"
			}
			fmt.Fprintf(&b, "  %06d [%s-%s%s seq %d-%d\n", f.FileNum, base.FormatKey(f.Smallest.UserKey),
				base.FormatKey(f.Largest.UserKey), end, f.SmallestSeq, f.LargestSeq)
		}
	}
	if b.Len() == 0 {
		return "empty\n"
	}
	return b.String()
}

// tombstones prints the range tombstones of each memtable and table that
// has any, fragmented as they are stored.
func (s *ddState) tombstones() string {
	rs, _ := s.db.loadReadState(readLatest)
	defer rs.unref()
	v := rs.v
	var b strings.Builder
	for i, m := range rs.memtables {
		if t := m.RangeDels(); len(t) > 0 {
			fmt.Fprintf(&b, "memtable %d: %s\n", i, t)
		}
	}
	for level, files := range v.Levels {
		for _, f := range files {
			if t := v.tables[f.FileNum].reader.RangeDels(); len(t) > 0 {
				fmt.Fprintf(&b, "L%d %06d: %s\n", level, f.FileNum, t)
			}
		}
	}
	if b.Len() == 0 {
		return "none\n"
	}
	return b.String()
}

// filters prints, per level, the filter format, bytes and bits per key.
func (s *ddState) filters() string {
	rs, _ := s.db.loadReadState(readLatest)
	defer rs.unref()
	v := rs.v
	var b strings.Builder
	var totalBytes, totalKeys uint64
	for level, files := range v.Levels {
		var bytes, keys uint64
		names := map[string]bool{}
		for _, f := range files {
			p := v.tables[f.FileNum].reader.Properties()
			bytes += p.FilterSize
			keys += p.NumUserKeys
			names[cmp.Or(p.FilterPolicy, "none")] = true
		}
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d: %5d keys, filter %6d bytes, %5.2f bits/key %v\n", level, keys, bytes,
			float64(8*bytes)/float64(keys), slices.Sorted(maps.Keys(names)))
		totalBytes += bytes
		totalKeys += keys
	}
	fmt.Fprintf(&b, "all: %5d keys, filter %6d bytes, %5.2f bits/key\n", totalKeys, totalBytes, float64(8*totalBytes)/float64(totalKeys))
	return b.String()
}

func (s *ddState) iter(d *datadriven.TestData) (string, error) {
	var opts IterOptions
	if d.HasArg("lower") {
		var k string
		d.ScanArgs(s.t, "lower", &k)
		opts.LowerBound = []byte(k)
	}
	if d.HasArg("upper") {
		var k string
		d.ScanArgs(s.t, "upper", &k)
		opts.UpperBound = []byte(k)
	}
	var it *Iterator
	if d.HasArg("snapshot") {
		var name string
		d.ScanArgs(s.t, "snapshot", &name)
		it = s.snapshots[name].NewIter(&opts)
	} else {
		it = s.db.NewIter(&opts)
	}
	var b strings.Builder
	reads := s.db.Metrics().DiskReads
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		switch f[0] {
		case "reads":
			// The blocks read from disk since the last "reads" (or the
			// iterator's creation).
			now := s.db.Metrics().DiskReads
			fmt.Fprintf(&b, "disk reads: %d\n", now-reads)
			reads = now
			continue
		case "put", "flush", "compact":
			// Writes, a flush or a compaction while the iterator is open.
			var err error
			switch f[0] {
			case "put":
				err = s.db.Put([]byte(f[1]), []byte(f[2]))
			case "flush":
				err = s.db.Flush()
			default:
				err = s.db.Compact()
			}
			fmt.Fprintf(&b, "%s: %v\n", line, err)
			continue
		case "scan":
			// Every entry, forward.
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				fmt.Fprintf(&b, "%s=%s ", base.FormatKey(it.Key()), base.FormatKey(it.Value()))
				n++
			}
			fmt.Fprintf(&b, "(%d)\n", n)
			continue
		}
		ok, known := itertest.Move(it, line)
		if !known {
			s.t.Fatalf("%s: unknown iter op %s", d.Pos, f[0])
		}
		if ok {
			fmt.Fprintf(&b, "%s: %s=%s\n", line, base.FormatKey(it.Key()), base.FormatKey(it.Value()))
		} else {
			fmt.Fprintf(&b, "%s: .\n", line)
		}
	}
	if err := it.Close(); err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
	}
	return b.String(), nil
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// splitQuoted splits a line into fields, keeping Go-quoted strings whole.
func splitQuoted(t *testing.T, line string) []string {
	var f []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				t.Fatalf("bad quoted string in %q: %v", line, err)
			}
			f = append(f, q)
			line = line[len(q):]
			continue
		}
		i := strings.IndexByte(line, ' ')
		if i < 0 {
			i = len(line)
		}
		f = append(f, line[:i])
		line = line[i:]
	}
	return f
}

// unquote lets test files spell keys with spaces or odd bytes as Go strings.
func unquote(s string) string {
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}
