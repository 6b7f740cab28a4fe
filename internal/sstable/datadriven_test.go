package sstable

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shale-db/shale/filter"
	"github.com/shale-db/shale/internal/itertest"

	"github.com/cockroachdb/datadriven"
	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/vfs"
)

// walkCases runs f on every file under testdata but the fuzz corpora
// (testdata/fuzz), as datadriven.Walk does.
func walkCases(t *testing.T, f func(t *testing.T, path string)) {
	dirs, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if dir != filepath.Join("testdata", "fuzz") {
			t.Run(filepath.Base(dir), func(t *testing.T) { datadriven.Walk(t, dir, f) })
		}
	}
}

// TestDataDriven runs the cases in testdata/. Commands:
//
//	build [block-size=N] [restart-interval=N] [filter=BITS|none]
//	      [compression=snappy|none|zstd] [cache=BYTES] [gen=N]
//	    Writes a table of the entries listed in the input, one
//	    "ukey#seq,KIND[:value]" a line, or with gen=N of N generated entries
//	    k00000#1,SET:v00000, k00002#2,SET ... (even numbers only, so odd
//	    keys are absent); opens it and prints its layout and properties.
//	get [seq=N]
//	    Looks up each user key of the input and prints the result and the
//	    lookup's trace.
//	lookups from=N to=N [step=N]
//	    Looks up keys kNNNNN for N in [from, to] and prints how many were
//	    found and what it cost.
//	iter [lower=K] [upper=K]
//	    Runs the input's iterator operations (first, last, next, prev,
//	    seek-ge K, seek-lt K) and prints where each lands.
func TestDataDriven(t *testing.T) {
	walkCases(t, func(t *testing.T, path string) {
		var r *Reader
		var stats *Stats
		defer func() {
			if r != nil {
				r.Close()
			}
		}()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "build":
				if r != nil {
					r.Close()
				}
				var err error
				stats = &Stats{}
				r, err = runBuild(t, d, stats)
				if err != nil {
					return err.Error() + "\n"
				}
				layout, err := describeLayout(r)
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprintf("%sopen: %d block reads\n%s", layout, stats.BlockReads.Load(), r.Properties())
			case "get":
				seq := uint64(base.MaxSeqNum)
				if d.HasArg("seq") {
					d.ScanArgs(t, "seq", &seq)
				}
				var b strings.Builder
				for _, key := range strings.Fields(d.Input) {
					var trace GetTrace
					v, kind, found, err := r.Get([]byte(key), base.SeqNum(seq), &trace)
					switch {
					case err != nil:
						fmt.Fprintf(&b, "%s: error %v\n", key, err)
					case !found:
						fmt.Fprintf(&b, "%s: not found; %s\n", key, &trace)
					case kind == base.KindDelete:
						fmt.Fprintf(&b, "%s: deleted; %s\n", key, &trace)
					default:
						fmt.Fprintf(&b, "%s: %q; %s\n", key, v, &trace)
					}
				}
				return b.String()
			case "lookups":
				var from, to int
				step := 1
				d.ScanArgs(t, "from", &from)
				d.ScanArgs(t, "to", &to)
				if d.HasArg("step") {
					d.ScanArgs(t, "step", &step)
				}
				return runLookups(t, r, stats, from, to, step)
			case "iter":
				var lower, upper []byte
				if d.HasArg("lower") {
					var s string
					d.ScanArgs(t, "lower", &s)
					lower = []byte(s)
				}
				if d.HasArg("upper") {
					var s string
					d.ScanArgs(t, "upper", &s)
					upper = []byte(s)
				}
				return runIter(r.NewIterBounds(lower, upper), d.Input)
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

func runBuild(t *testing.T, d *datadriven.TestData, stats *Stats) (*Reader, error) {
	var opts WriterOptions
	var ropts ReaderOptions
	ropts.Stats = stats
	ropts.Filters = []filter.Policy{bloom.NewPolicy(10)}
	gen := 0
	for _, arg := range d.CmdArgs {
		if len(arg.Vals) != 1 {
			t.Fatalf("%s: want one value", arg.Key)
		}
		v := arg.Vals[0]
		n, _ := strconv.Atoi(v)
		switch arg.Key {
		case "block-size":
			opts.BlockSize = n
		case "restart-interval":
			opts.RestartInterval = n
		case "filter":
			if v != "none" {
				opts.FilterPolicy = bloom.NewPolicy(n)
			}
		case "compression":
			opts.Compression = map[string]Compression{"snappy": SnappyCompression, "none": NoCompression, "zstd": ZstdCompression}[v]
		case "cache":
			ropts.Cache = cache.New(n)
		case "gen":
			gen = n
		default:
			t.Fatalf("unknown argument %s", arg.Key)
		}
	}
	var entries []kv
	for i := range gen {
		k := fmt.Sprintf("k%05d", 2*i)
		entries = append(entries, kv{base.MakeInternalKey([]byte(k), base.SeqNum(i+1), base.KindSet), fmt.Appendf(nil, "v%05d", 2*i)})
	}
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if line == "" {
			continue
		}
		k, v, err := itertest.ParseEntry(line)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, kv{k, v})
	}

	fs := vfs.NewMem()
	f, err := fs.Create("000001.sst")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, opts)
	for _, e := range entries {
		if err := w.Add(e.key, e.value); err != nil {
			w.Abort()
			return nil, err
		}
	}
	if _, err := w.Close(); err != nil {
		return nil, err
	}
	return openTable(t, fs, "000001.sst", ropts), nil
}

func runLookups(t *testing.T, r *Reader, stats *Stats, from, to, step int) string {
	reads, hits := stats.BlockReads.Load(), stats.CacheHits.Load()
	checks, skips, fps := r.FilterCounts()
	n, found := 0, 0
	for i := from; i <= to; i += step {
		_, _, ok, err := r.Get(fmt.Appendf(nil, "k%05d", i), base.MaxSeqNum, nil)
		if err != nil {
			t.Fatal(err)
		}
		n++
		if ok {
			found++
		}
	}
	checks2, skips2, fps2 := r.FilterCounts()
	return fmt.Sprintf("%d lookups, %d found\nfilter: %d checks, %d skips, %d false positives\ndata blocks: %d read from disk, %d from cache\n",
		n, found, checks2-checks, skips2-skips, fps2-fps,
		stats.BlockReads.Load()-reads, stats.CacheHits.Load()-hits)
}

func runIter(it base.InternalIterator, input string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		ok, known := itertest.Move(it, line)
		if !known {
			return fmt.Sprintf("unknown op %q\n", line)
		}
		fmt.Fprintf(&b, "%-14s ", line+":")
		switch {
		case ok:
			fmt.Fprintf(&b, "%s:%s\n", it.Key(), it.Value())
		case it.Error() != nil:
			fmt.Fprintf(&b, "error %v\n", it.Error())
		default:
			b.WriteString(".\n")
		}
	}
	if err := it.Close(); err != nil {
		fmt.Fprintf(&b, "close: %v\n", err)
	}
	return b.String()
}
