package shale

import (
	"bufio"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/base"
)

var crashRounds = flag.Int("crash.rounds", 4, "rounds of kill -9 and recover in TestCrash and TestCrashCompaction (25 times as many with -long)")

// TestCrash re-runs the test binary as a child that writes single puts,
// batches (some with a range deletion among their writes) and range
// deletions of earlier batches to a store, and prints each write once Apply
// has returned. The parent kills the child with SIGKILL at a random moment,
// reopens the store, and checks that every acknowledged write is there (an
// acknowledged range deletion too: none of the keys it deleted is back) and
// that every batch the child began is there entirely or not at all. It runs
// with the WAL mapped (its pages must survive the process) and written
// (walModes), each in its own store. Odd rounds write values of up to
// 4,000 bytes into an 8 MiB memtable and are killed only once 1.5 MiB have
// been written, so that the WAL has grown through the mapping's first 1 MiB
// window and allocation step; even rounds rotate it every 32 KiB.
func TestCrash(t *testing.T) {
	if dir := os.Getenv("SHALE_CRASH_CHILD"); dir != "" {
		crashChild(dir, os.Getenv("SHALE_CRASH_ROUND"), crashChildWAL(), 1, false)
		return
	}
	crashRoundsOf(t, "TestCrash")
}

// TestCrashCompaction is TestCrash with four concurrent writers and a store
// kept compacting: tiny memtables and levels, and a goroutine that calls
// Compact again and again, so that the kill lands in flushes and
// compactions, between their file writes and MANIFEST edits.
func TestCrashCompaction(t *testing.T) {
	if dir := os.Getenv("SHALE_CRASH_CHILD"); dir != "" {
		crashChild(dir, os.Getenv("SHALE_CRASH_ROUND"), crashChildWAL(), 4, true)
		return
	}
	crashRoundsOf(t, "TestCrashCompaction")
}

// crashRoundsOf runs the rounds of kill and recover of the test named test,
// whose child writes to a store in dir, in each WAL mode.
func crashRoundsOf(t *testing.T, test string) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, wal := range walModes {
		t.Run("wal="+wal.name, func(t *testing.T) { crashRoundsIn(t, test, wal) })
	}
}

// crashChildWAL returns the WAL mode the parent named for the child.
func crashChildWAL() walMode {
	name := os.Getenv("SHALE_CRASH_WAL")
	i := slices.IndexFunc(walModes, func(w walMode) bool { return w.name == name })
	if i < 0 {
		fmt.Fprintf(os.Stderr, "child: unknown WAL mode %q\n", name)
		os.Exit(2)
	}
	return walModes[i]
}

// crashRoundsIn runs the rounds of kill and recover with the WAL in mode wal.
func crashRoundsIn(t *testing.T, test string, wal walMode) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	// Over all rounds: a later crash must not lose them either.
	acked := map[string]string{}
	gone := map[string]bool{} // keys an acknowledged range deletion deleted
	rounds := *crashRounds
	if *long {
		rounds *= 25
	}
	for round := 0; round < rounds; round++ {
		res := runCrashChild(t, test, dir, wal, round, time.Duration(50+rng.IntN(400))*time.Millisecond, test == "TestCrash" && round%2 == 1)
		switch {
		case res.mapped && wal.write:
			t.Fatalf("round %d: the child's WAL is mapped despite DisableWALMapping", round)
		case !res.mapped && !wal.write:
			t.Skipf("the file system of %s cannot map a WAL (no fallocate): the child wrote it with write(2)", dir)
		}
		walSize := largestWAL(t, dir)
		maps.Copy(acked, res.acked)
		for k := range res.deleting {
			delete(acked, k)
		}
		maps.Copy(gone, res.gone)
		db, err := Open(dir, &Options{MemTableSize: 32 << 10, DisableWALMapping: wal.write})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		for k, v := range acked {
			got, err := db.Get([]byte(k))
			if err != nil || string(got) != v {
				t.Fatalf("round %d: acknowledged write %s=%s lost: got %q, %v", round, k, v, got, err)
			}
		}
		for k := range gone {
			if got, err := db.Get([]byte(k)); err == nil {
				t.Fatalf("round %d: %s=%s is back after an acknowledged range deletion", round, k, got)
			}
		}
		for id, keys := range res.begun {
			present := 0
			for _, k := range keys {
				if _, err := db.Get([]byte(k)); err == nil {
					present++
				}
			}
			if present != 0 && present != len(keys) {
				t.Fatalf("round %d: batch %s partly applied: %d of %d keys", round, id, present, len(keys))
			}
		}
		t.Logf("round %d: %d acknowledged writes (%d in all rounds), %d batches begun, %d keys range-deleted in all rounds, %d manual compactions done, all intact; %d tables in L0, %d below; the largest WAL at the kill was %s",
			round, len(res.acked), len(acked), len(res.begun), len(gone), res.compactions, db.Metrics().Levels[0].Files, tablesBelowL0(db), base.FormatSize(uint64(walSize)))
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// crashResult is what a killed child acknowledged.
type crashResult struct {
	acked       map[string]string   // key/values written
	begun       map[string][]string // batch id: the keys of every batch it began
	compactions int                 // Compact calls that returned
	mapped      bool                // the child's WAL was mapped
	// deleting are the keys of range deletions begun, acknowledged or
	// not: they may be present or not. gone are those of acknowledged
	// range deletions, and those a batch writes and deletes itself.
	deleting, gone map[string]bool
}

// largestWAL returns the size of the largest WAL file in dir: for a mapped
// WAL, how far it was allocated.
func largestWAL(t *testing.T, dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, e := range entries {
		if typ, _, ok := parseFileName(e.Name()); ok && typ == fileTypeLog {
			info, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			size = max(size, info.Size())
		}
	}
	return size
}

func tablesBelowL0(db *DB) int {
	n := 0
	for _, l := range db.Metrics().Levels[1:] {
		n += l.Files
	}
	return n
}

// runCrashChild runs the child, writing with its WAL in mode wal, for about
// d, kills it, and returns what it acknowledged. With far, d starts once
// the child says it wrote 1.5 MiB.
func runCrashChild(t *testing.T, test, dir string, wal walMode, round int, d time.Duration, far bool) crashResult {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), "SHALE_CRASH_CHILD="+dir, "SHALE_CRASH_ROUND="+strconv.Itoa(round), "SHALE_CRASH_WAL="+wal.name)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	res := crashResult{acked: map[string]string{}, begun: map[string][]string{}, deleting: map[string]bool{}, gone: map[string]bool{}}
	lines := make(chan string)
	go func() {
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break // a line cut by the kill is not an acknowledgement
			}
			lines <- strings.TrimSuffix(line, "\n")
		}
		close(lines)
	}()
	// The clock starts once the child has opened the store, so a slow
	// start (a loaded machine, the race detector) cannot eat the run.
	// A child that never gets there is killed after a minute.
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer func() { timer.Stop() }()
	ready := false
	for line := range lines {
		f := strings.Fields(line)
		switch {
		case len(f) == 1 && (f[0] == "ready" && !far || f[0] == "far"):
			ready = true
			timer.Stop()
			timer = time.AfterFunc(d, func() { cmd.Process.Kill() })
		case len(f) == 2 && f[0] == "mapped":
			res.mapped = f[1] == "true"
		case len(f) == 3 && f[0] == "put":
			res.acked[f[1]] = f[2]
		case len(f) >= 2 && f[0] == "begin":
			res.begun[f[1]] = f[2:]
		case len(f) == 2 && f[0] == "commit":
			for _, k := range res.begun[f[1]] {
				res.acked[k] = f[1]
			}
		case len(f) == 1 && f[0] == "compacted":
			res.compactions++
		case len(f) >= 2 && (f[0] == "gone" || f[0] == "deleted"):
			for _, k := range f[1:] {
				res.gone[k] = true
			}
		case len(f) >= 2 && f[0] == "deleting":
			for _, k := range f[1:] {
				res.deleting[k] = true
			}
		}
	}
	cmd.Wait()
	if !ready {
		t.Fatalf("round %d: the child did not open the store, or did not write 1.5 MiB within a minute", round)
	}
	return res
}

// crashChild writes until it is killed, from writers goroutines, with its
// WAL in mode wal, and with compact, calls Compact in a loop as well. Keys
// are unique per write, so an acknowledged value can never be legitimately
// overwritten.
func crashChild(dir, round string, wal walMode, writers int, compact bool) {
	opts := &Options{MemTableSize: 32 << 10, L0CompactionThreshold: 2, LBaseMaxBytes: 256 << 10}
	valueLen := 100
	if n, _ := strconv.Atoi(round); n%2 == 1 && !compact {
		opts.MemTableSize, valueLen = 8<<20, 4000
	}
	if compact {
		opts = &Options{MemTableSize: 16 << 10, L0CompactionThreshold: 2, LBaseMaxBytes: 64 << 10, TargetFileSize: 16 << 10}
	}
	opts.DisableWALMapping = wal.write
	db, err := Open(dir, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	// A first write tells the parent whether the WAL is mapped: a file
	// system that cannot allocate ahead (fallocate) falls back to write(2).
	k := "r" + round + "-first"
	if err := db.Put([]byte(k), []byte(k)); err != nil {
		fmt.Fprintln(os.Stderr, "child put:", err)
		os.Exit(2)
	}
	fmt.Println("put", k, k)
	fmt.Println("mapped", db.Metrics().WALMappedBytes > 0)
	fmt.Println("ready")
	if compact {
		go func() {
			for {
				if err := db.Compact(); err != nil {
					fmt.Fprintln(os.Stderr, "child compact:", err)
					os.Exit(2)
				}
				fmt.Println("compacted")
			}
		}()
	}
	for w := 1; w < writers; w++ {
		go crashWriter(db, fmt.Sprintf("r%s-w%d", round, w), valueLen)
	}
	crashWriter(db, fmt.Sprintf("r%s-w0", round), valueLen)
}

// crashWriter writes puts (with values of up to valueLen bytes, printing
// "far" once 1.5 MiB of them are written), batches (half of them range-deleting two of their
// own keys) and range deletions of earlier batches, of keys named after
// prefix, until the process is killed. It prints each write's keys before a
// batch or range deletion and each acknowledgement after. Each line is one
// write to stdout, so lines from concurrent writers do not interleave.
func crashWriter(db *DB, prefix string, valueLen int) {
	val := strings.Repeat("v", valueLen)
	var committed []string // batch ids, for range deletions to delete
	written := 0
	for i := 0; ; i++ {
		if i%11 == 10 && len(committed) > 0 {
			// Delete an earlier batch's keys, which are its id, a dash
			// and 0 to 3: [id-0, id-4) holds exactly them.
			id := committed[0]
			committed = committed[1:]
			keys := []string{id + "-0", id + "-1", id + "-2", id + "-3"}
			fmt.Println("deleting", strings.Join(keys, " "))
			if err := db.DeleteRange([]byte(id+"-0"), []byte(id+"-4")); err != nil {
				fmt.Fprintln(os.Stderr, "child delete range:", err)
				os.Exit(2)
			}
			fmt.Println("deleted", strings.Join(keys, " "))
			continue
		}
		if i%3 == 0 {
			id := fmt.Sprintf("%s-b%d", prefix, i)
			b := db.NewBatch()
			keys := []string{id + "-0", id + "-1", id + "-2", id + "-3"}
			for _, k := range keys {
				b.Put([]byte(k), []byte(id))
			}
			if i%2 == 0 {
				// Half the batches delete two of their own keys: the
				// batch leaves id-0 and id-3, whether applied or not.
				b.DeleteRange([]byte(id+"-1"), []byte(id+"-3"))
				fmt.Println("gone", keys[1], keys[2])
				keys = []string{keys[0], keys[3]}
			} else {
				committed = append(committed, id)
			}
			fmt.Println("begin", id, strings.Join(keys, " "))
			if err := db.Apply(b); err != nil {
				fmt.Fprintln(os.Stderr, "child apply:", err)
				os.Exit(2)
			}
			fmt.Println("commit", id)
			continue
		}
		k := fmt.Sprintf("%s-p%d", prefix, i)
		v := fmt.Sprintf("%s-%d", val[:i%valueLen], i)
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			fmt.Fprintln(os.Stderr, "child put:", err)
			os.Exit(2)
		}
		fmt.Println("put", k, v)
		if written += len(k) + len(v); written >= 3<<19 && written-len(k)-len(v) < 3<<19 {
			fmt.Println("far")
		}
	}
}
