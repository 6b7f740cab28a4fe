package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/rangefilter"
)

// shell interprets kvsh commands against one open store. It knows nothing
// of terminals: run feeds it lines, and it writes results to out.
type shell struct {
	out         io.Writer
	errOut      io.Writer // error lines; out unless run says otherwise
	interactive bool      // out is a terminal: show progress bars
	dir         string
	opts        shale.Options
	db          *shale.DB       // nil only after a failed reopen
	batch       *shale.Batch    // non-nil between batch and commit or abort
	snap        *shale.Snapshot // non-nil while get, scan and count read a snapshot
	now         func() time.Time
	rng         *rand.Rand  // load's keys and values
	filter      *playground // the filter command's standalone filter; nil until filter new
	web         *webServer  // the web view, while it runs
	events      eventRing   // the store's recent events, for the web view
	// opened is when the store was opened, and openings how many times a
	// store was in this session: the web view's metrics and events count
	// from then. Changed with dbMu held, like db.
	opened   time.Time
	openings int
	// dbMu guards db and dir against the web view, which reads them from
	// its own goroutines (see readStore). Only the shell's goroutine
	// changes them, with dbMu held, so it reads them without.
	dbMu sync.RWMutex
	// intrMu guards what interrupt, called from a signal's goroutine,
	// reads and changes: ctx, which the running command watches and
	// interrupt cancels; its cancel; and running, the command that runs.
	intrMu  sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	running *command
}

// errInterrupted is what a command that Ctrl-C stopped returns, wrapped.
var errInterrupted = errors.New("interrupted")

// errQuit is what quit returns to end the session.
var errQuit = errors.New("quit")

// loadBatchSize is how many writes load puts in one batch, and
// loadBatchBytes how many bytes of keys and values at most (for long
// values, so that a batch's memory stays small); maxLoadSize bounds its
// keysize and valsize, since load makes test data, not large values.
const (
	loadBatchSize  = 1000
	loadBatchBytes = 64 << 20
	maxLoadSize    = 1 << 20
)

// maxBloomBits bounds `bloom BITS`: past it a filter costs memory and buys
// nothing measurable.
const maxBloomBits = 64

// newShell opens the store in dir (see openStore) with default options.
func newShell(out io.Writer, dir string, interactive bool) (*shell, error) {
	return newShellWith(out, dir, interactive, shale.Options{})
}

// newShellWith opens the store in dir with opts, to which it adds the
// listener that keeps the web view's events.
func newShellWith(out io.Writer, dir string, interactive bool, opts shale.Options) (*shell, error) {
	sh := &shell{out: out, errOut: out, interactive: interactive, dir: dir, now: time.Now, opts: opts}
	sh.ctx, sh.cancel = context.WithCancel(context.Background())
	sh.rng = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	sh.opts.EventListener = sh.events.listener()
	db, err := openStore(dir, &sh.opts)
	if err != nil {
		return nil, err
	}
	sh.setStore(db, dir)
	return sh, nil
}

// openStore opens or creates the store in dir, but refuses a directory that
// holds other files and no store, so that a mistyped path never scatters
// store files into, say, a home directory.
func openStore(dir string, opts *shale.Options) (*shale.DB, error) {
	if opts.FS != nil { // in memory (kvsh -mem), where nothing else lives
		return shale.Open(dir, opts)
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Open creates it.
	case err != nil:
		return nil, err
	default:
		others := slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() != "LOCK" })
		hasCurrent := slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == "CURRENT" })
		if others && !hasCurrent {
			return nil, fmt.Errorf("%s is not a shale store (no CURRENT file) and is not empty", dir)
		}
	}
	return shale.Open(dir, opts)
}

// close ends the session: it discards an uncommitted batch (saying so),
// releases the snapshot and closes the store.
func (sh *shell) close() error {
	if sh.batch != nil && sh.batch.Count() > 0 {
		fmt.Fprintf(sh.out, "discarded the uncommitted batch of %s\n", plural(sh.batch.Count(), "write"))
	}
	sh.batch = nil
	sh.releaseSnapshot()
	sh.stopWeb()
	if sh.db == nil {
		return nil
	}
	return sh.closeStore()
}

// closeStore closes the open store and leaves the shell with none, holding
// dbMu so that the web view never reads a store being closed.
func (sh *shell) closeStore() error {
	sh.dbMu.Lock()
	defer sh.dbMu.Unlock()
	err := sh.db.Close()
	sh.db = nil
	return err
}

// setStore makes db, in dir, the shell's store, holding dbMu: once it
// returns, no web request reads the store it replaces. The store's metrics
// start from zero, so the web view's events start afresh too.
func (sh *shell) setStore(db *shale.DB, dir string) {
	sh.dbMu.Lock()
	defer sh.dbMu.Unlock()
	sh.db, sh.dir = db, dir
	sh.opened, sh.openings = time.Now(), sh.openings+1
	sh.events.clear()
}

func (sh *shell) releaseSnapshot() {
	if sh.snap != nil {
		sh.snap.Close() // only fails if already closed
		sh.snap = nil
	}
}

// prompt is the interactive prompt; it shows a batch or a snapshot.
func (sh *shell) prompt() string {
	switch {
	case sh.batch != nil:
		return fmt.Sprintf("shale batch(%d)> ", sh.batch.Count())
	case sh.snap != nil:
		return "shale snapshot> "
	}
	return "shale> "
}

// exec runs one command line and reports whether it asked to quit. Errors
// are printed as one line each; none ends the session.
func (sh *shell) exec(line string) (quit bool) {
	quit, _ = sh.execLine(line)
	return quit
}

// execLine is exec, and also returns the command's error, which it has
// printed to errOut.
func (sh *shell) execLine(line string) (quit bool, err error) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return false, nil
	}
	err = sh.execWords(line)
	sh.intrMu.Lock()
	sh.running = nil
	if sh.ctx.Err() != nil { // interrupted: the next command starts afresh
		sh.ctx, sh.cancel = context.WithCancel(context.Background())
	}
	sh.intrMu.Unlock()
	if errors.Is(err, errQuit) {
		return true, nil
	}
	if err != nil {
		fmt.Fprintf(sh.errOut, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return false, err
}

// interrupt stops the running command, as Ctrl-C does: a command that
// watches sh.ctx (load, scan, count, lookups, export-filter) stops at its
// next step and returns an error that wraps errInterrupted. One that cannot
// stop midway runs to its end, and interrupt says so; no command starts
// cancelled, since execLine renews ctx.
func (sh *shell) interrupt() {
	sh.intrMu.Lock()
	defer sh.intrMu.Unlock()
	sh.cancel()
	if c := sh.running; c != nil && !c.interruptible {
		fmt.Fprintf(sh.errOut, "(%s cannot be stopped midway: waiting for it to finish; the store stays consistent)\n", c.name)
	}
}

// interrupted returns an error wrapping errInterrupted, saying what was
// done, once Ctrl-C has stopped the running command, or nil.
func (sh *shell) interrupted(format string, args ...any) error {
	if sh.ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w: %s", errInterrupted, fmt.Sprintf(format, args...))
}

func (sh *shell) execWords(line string) error {
	words, err := splitLine(line)
	if err != nil {
		return err
	}
	c := lookup(words[0].text)
	if c == nil {
		return fmt.Errorf("unknown command %s (help lists them)", shale.FormatKey([]byte(words[0].text)))
	}
	args, opts, err := c.parse(words[1:])
	if err != nil {
		return err
	}
	switch {
	case sh.batch != nil && !c.inBatch:
		return fmt.Errorf("%s is not allowed in a batch: commit or abort first", c.name)
	case sh.db == nil && !c.noDB:
		if err := sh.reopenClosed(); err != nil {
			return err
		}
	}
	sh.intrMu.Lock()
	sh.running = c
	sh.intrMu.Unlock()
	return c.run(sh, args, opts)
}

// command is one kvsh command.
type command struct {
	name    string
	args    string // its arguments, as help shows them
	summary string // one line for help
	detail  string // more for help CMD; may be empty
	min     int    // positional arguments
	max     int
	options []string // the name=N options it takes
	inBatch bool     // allowed between batch and commit
	noDB    bool     // works with no store open
	// interruptible: Ctrl-C stops it (it watches sh.ctx); for another
	// command, interrupt says that it cannot be stopped midway.
	interruptible bool
	run           func(sh *shell, args []string, opts map[string]string) error
}

func (c *command) usage() string { return strings.TrimSpace(c.name + " " + c.args) }

// parse splits words into positional arguments and name=value options. A
// bare word that looks like an option the command does not take is an
// error; quote it to make it data.
func (c *command) parse(words []word) ([]string, map[string]string, error) {
	var args []string
	opts := map[string]string{}
	for _, w := range words {
		name, val, isOpt := strings.Cut(w.text, "=")
		switch {
		case w.literal || !isOpt || len(c.options) == 0:
		case slices.Contains(c.options, name):
			opts[name] = val
			continue
		default:
			return nil, nil, fmt.Errorf("%s takes no option %s= (usage: %s; quote data that contains =)", c.name, name, c.usage())
		}
		args = append(args, w.text)
	}
	if len(args) < c.min || len(args) > c.max {
		return nil, nil, fmt.Errorf("usage: %s", c.usage())
	}
	return args, opts, nil
}

// commands is the command table, in the order help lists it. It is filled
// in by init because help refers to it.
var commands []command

func init() {
	commands = []command{
		{name: "put", args: "KEY VALUE", summary: "set KEY to VALUE", min: 2, max: 2, inBatch: true, run: cmdPut},
		{name: "get", args: "KEY", summary: "print KEY's value", min: 1, max: 1, inBatch: true, run: cmdGet,
			detail: "Reads the snapshot if one is open. In a batch, reads the committed store: queued writes are not visible until commit."},
		{name: "del", args: "KEY", summary: "delete KEY (deleting an absent key is fine)", min: 1, max: 1, inBatch: true, run: cmdDel},
		{name: "delrange", args: "FROM TO", summary: "delete every key with FROM <= key < TO, with one write", min: 2, max: 2, inBatch: true, run: cmdDelRange,
			detail: "One range tombstone, whatever the number of keys it deletes; FROM = TO deletes nothing, and FROM after TO is an error. explain get names the tombstone that deletes a key. Compactions drop the keys it covers, and a table it deletes wholly leaves the store without being rewritten."},
		{name: "scan", args: "[FROM [TO]] [limit=N]", summary: "print the entries with FROM <= key < TO, in order", max: 2, options: []string{"limit"}, inBatch: true, interruptible: true, run: cmdScan,
			detail: "Prints at most limit entries (default 100), one per line as KEY VALUE. Reads the snapshot if one is open."},
		{name: "count", args: "[FROM [TO]]", summary: "count the entries with FROM <= key < TO", max: 2, inBatch: true, interruptible: true, run: cmdCount,
			detail: "Reads the snapshot if one is open."},
		{name: "batch", summary: "start a batch: put, del and delrange are queued until commit", run: cmdBatch,
			detail: "commit applies the queued writes atomically (all or none, also across a crash); abort discards them. get, scan, count, explain, stats and help work in a batch and read the committed store."},
		{name: "commit", summary: "apply the batch atomically", inBatch: true, run: cmdCommit},
		{name: "abort", summary: "discard the batch", inBatch: true, run: cmdAbort},
		{name: "snapshot", args: "[off]", summary: "take a snapshot for get, scan, count and explain get to read; snapshot off releases it", max: 1, run: cmdSnapshot,
			detail: "While a snapshot is open, get, scan, count and explain get see the store as it was when it was taken; put and del still write to the live store and show once it is released. snapshot again replaces it with a fresh one. Compactions keep every version the snapshot can see until it is released."},
		{name: "flush", summary: "write the memtable to an L0 table", run: cmdFlush},
		{name: "compact", summary: "compact the whole store into the bottom level", run: cmdCompact},
		{name: "tables", summary: "list the live tables: level, key range, size, entries, filter and its counts", inBatch: true, run: cmdTables},
		{name: "stats", summary: "print the metrics: the tree per level, reads, filters, cache, writes", inBatch: true, run: cmdStats},
		{name: "load", args: "N [keysize=16] [valsize=100]", summary: "write N random keys and values (Ctrl-C stops it)", min: 1, max: 1, options: []string{"keysize", "valsize"}, interruptible: true, run: cmdLoad,
			detail: "Keys and values are random lowercase letters and digits, written in batches of 1000 (of at most 64 MiB). keysize and valsize are sizes in bytes, with a unit if you like (valsize=1KiB), of at most 1 MiB. Ctrl-C stops it; the batches written stay written."},
		{name: "bloom", args: "[on|off|BITS]", summary: "set the Bloom filter of tables written from now on", max: 1, run: cmdBloom,
			detail: "on is 10 bits/key, off writes no filter, BITS is 1 to 64 bits/key. The setting is an Open option, so the store is closed and reopened; existing tables keep the filters they have until a compaction rewrites them. With no argument, prints the setting."},
		{name: "policy", args: "[NAME [BITS]] [L0=F ...]", summary: "set the filter policy of tables written from now on", max: 2, options: []string{"L0", "L1", "L2", "L3", "L4", "L5", "L6"}, run: cmdPolicy,
			detail: "NAME is bloom BITS, ribbon BITS, fuse, monkey BITS, levels L0=F ... L6=F, or off. bloom, ribbon and fuse put that filter in every table; monkey BITS spends BITS bits/key of Bloom filters on average, more on small runs and fewer on large ones, from the tree's shape when each table is written; levels gives each level its own filter F (bloom:BITS, ribbon:BITS, fuse or none; a level not named gets none); off writes no filter. Like bloom, which replaces a policy, this reopens the store; existing tables keep their filters. With no argument, prints the setting."},
		{name: "seed", args: "N", summary: "make load and lookups draw from seed N, so that a session repeats", min: 1, max: 1, run: cmdSeed,
			detail: "Without it, each session draws from a seed of its own."},
		{name: "lookups", args: "N", summary: "look up N random keys never written and print what they cost: blocks read, filter checks", min: 1, max: 1, interruptible: true, run: cmdLookups,
			detail: "The keys are 16 random letters and digits and a final ~, which load never writes. Prints the blocks read per lookup, from disk and from the block cache, and the filters' checks, skips and false positives."},
		{name: "prefix", args: "[off|N]", summary: "put each key's first N bytes in the filters of tables written from now on", max: 1, run: cmdPrefix,
			detail: "Sets the store's prefix extractor to FixedPrefix(N) (keys shorter than N have no prefix): filters then hold each key's prefix too, and a scan limited to a prefix of N bytes (explain scan FROM TO prefix=P) skips the tables whose filter says no key has it. Tables keep the extractor they were written with; those written with another one, or none, are read without prefix skips. Like bloom, this reopens the store. With no argument, prints the setting."},
		{name: "rangefilter", args: "[on|off|BITS]", summary: "give tables written from now on a range filter, which bounded scans consult", max: 1, run: cmdRangeFilter,
			detail: "on is 16 bits/key, BITS is 6 to 40. A range filter (package rangefilter, after Grafite) answers whether a table may hold any key in [FROM, TO); a scan with both bounds skips, without I/O, the tables whose range filter says no (explain scan FROM TO shows it). Like bloom, this reopens the store; existing tables keep what they have. With no argument, prints the setting."},
		{name: "autocompact", args: "[on|off]", summary: "turn automatic compactions on or off (on by default)", max: 1, run: cmdAutocompact,
			detail: "Off keeps every flushed table in L0, to see how lookups cost with many overlapping tables; compact still works. Like bloom, this reopens the store. With no argument, prints the setting."},
		{name: "rowcache", args: "[off|SIZE]", summary: "set the row cache's size, such as 64MiB (off by default)", max: 1, run: cmdRowCache,
			detail: "The row cache keeps, per table and key, what a lookup in that table found, so a repeated get reads no block; explain get shows its hits and stats its hits, misses and size. Like bloom, this reopens the store (the row cache starts empty). With no argument, prints the setting."},
		{name: "export-filter", args: "FILE [FROM [TO]] [p=0.01]", summary: "write a Bloom filter of the keys with FROM <= key < TO to FILE", min: 1, max: 3, options: []string{"p"}, interruptible: true, run: cmdExportFilter,
			detail: "The filter holds every live key in the range, at false-positive rate p (default 0.01), and FILE holds it marshalled (bloom.Filter.MarshalBinary; bloom.Filter.UnmarshalBinary reads it back). It reads the live store as it was when the command began, not a snapshot, so it is refused while a snapshot is open rather than export something other than what get and scan show. FILE may not be in the store's directory, whose files it could overwrite. Prints the items, bits per item, probes per item, the file's size and the rate."},
		{name: "filter", args: "SUBCOMMAND ...", summary: "play with a standalone Bloom filter, outside the store (help filter)", max: 1 + maxFilterArgs, inBatch: true, noDB: true, run: cmdFilter,
			detail: "Subcommands: new N P [counting|scalable], add ITEM..., test ITEM..., remove ITEM..., fill N, probe N, stats, sizes N [BITS...]. filter new N P makes a Bloom filter for N items at false-positive rate P (counting: one that can remove; scalable: one that grows), replacing the one before. add, test and remove take items; fill N adds N items named item-1, item-2, ...; probe N tests N items never added, absent-1, absent-2, ..., and prints the measured rate. kvsh remembers what was added, so test tells a false positive from a true maybe and stats counts false negatives. sizes N builds filters of N items at 5, 10 and 15 bits per item (or BITS) and prints the textbook formula's rate beside the measured one. Items are named, not random, so the numbers are the same in every session."},
		{name: "explain", args: "get KEY | scan FROM TO [prefix=P]", summary: "trace a lookup or a scan: memtables, tables, filters, block reads", min: 2, max: 3, options: []string{"prefix"}, inBatch: true, run: cmdExplain,
			detail: "explain get KEY looks KEY up and prints each place it looked: memtables, tables skipped by key range or filter, row cache hits, blocks read. explain scan FROM TO scans the keys with FROM <= key < TO (and, with prefix=P, that start with P) and prints each memtable and table the scan considered: ruled out by its key range, by its range filter (see rangefilter) or by its prefix filter (see prefix), or read, with the entries it yielded and the blocks it read. Both read the snapshot if one is open."},
		{name: "web", args: "[ADDR|stop]", summary: "serve a live, read-only view of the store to a browser; web stop ends it", max: 1, inBatch: true, noDB: true, run: cmdWeb,
			detail: "Prints the URL. Without ADDR it listens on loopback (127.0.0.1) at a free port; ADDR (HOST:PORT, or a host) binds elsewhere, and other machines may then reach it. The page, refreshed every second while the shell goes on, draws the levels L0-L6 with each table to scale by key range and size (hover or click one for its keys, entries, filter and filter counts), the memtables, WAL, caches, write amplification and stalls, and the recent events (flushes, compactions, write stalls, background errors, tables and WALs created and deleted); its lookup box draws the path of a get, as explain get prints it, and its scan box (FROM, TO, an optional prefix) the path of a bounded scan, as explain scan prints it. Read-only: it answers GET requests only and never writes to the store."},
		{name: "open", args: "DIR", summary: "close this store and open (or create) the one in DIR", min: 1, max: 1, noDB: true, run: cmdOpen,
			detail: "The bloom, prefix and autocompact settings carry over. A directory that holds files but no store is refused, and the current store stays open if DIR cannot be opened."},
		{name: "check", args: "[DIR]", summary: "verify the store in DIR (default: this one) and list every problem", max: 1, noDB: true, run: cmdCheck,
			detail: "Reads the MANIFEST record by record, every block of every live table and every live WAL, and compares the MANIFEST with the files present. Prints consistent, or each problem with its file and offset. Files a crash left behind that Open would remove are not problems. The store is closed for the check (it takes the store's lock) and opened again after it."},
		{name: "repair", args: "[DIR]", summary: "rebuild the store in DIR (default: this one) from the intact records of its tables and WALs", max: 1, noDB: true, run: cmdRepair,
			detail: "For a store that will not open, or that check finds damaged: the intact records of every table and WAL are merged, newest version first, into new tables and a new MANIFEST. Damaged files are moved to DIR/lost/, never deleted; records in a damaged block or past a damaged WAL record are lost. Prints what it did. The store is closed for the repair and opened again after it."},
		{name: "export-table", args: "FILE [FROM [TO]]", summary: "write the entries with FROM <= key < TO to FILE, a table for ingest", min: 1, max: 3, run: cmdExportTable,
			detail: "Writes the entries through shale.NewTableWriter, with this store's filter, block size and compression, reading the snapshot if one is open. FILE may not be in the store's directory. ingest FILE adds it to this store or another one (open DIR first)."},
		{name: "ingest", args: "FILE...", summary: "add tables written by export-table (or shale.NewTableWriter) to the store, all or none", min: 1, max: maxIngestFiles, run: cmdIngest,
			detail: "Each FILE is checked whole first (format, checksums, key order); a damaged or foreign file, a missing one, or two whose key ranges overlap, is refused and nothing changes. The tables are copied in, their entries newer than every write before, each to the deepest level where nothing overlaps it; the memtable is flushed first if it holds writes. The FILEs stay as they are. Prints the tree's shape after it."},
		{name: "checkpoint", args: "DIR", summary: "write a consistent copy of the store into DIR, a new or empty directory", min: 1, max: 1, run: cmdCheckpoint,
			detail: "The store goes on taking writes meanwhile. The copy holds every write made before the command, and opens as a store of its own (open DIR, or kvsh DIR), which check passes; nothing in it changes when this store does. Its tables are hard links to this store's where the file system allows, copies otherwise. Copy DIR anywhere to keep it as a backup; open it to restore."},
		{name: "shape", args: "[memtable=B] [lbase=B] [filesize=B] [l0=N]", summary: "reopen the store with a tree shaped small enough to watch grow: memtable, base level and table sizes, L0 tables per compaction", options: []string{"memtable", "lbase", "filesize", "l0"}, run: cmdShape,
			detail: "Options.MemTableSize, LBaseMaxBytes, TargetFileSize and L0CompactionThreshold: sizes of at least 1 KiB (65536, 64KiB), and tables. With no option, prints them."},
		{name: "grow", args: "N [step=1000]", summary: "write N random keys, flushing every step keys and waiting for the compactions each flush starts", min: 1, max: 1, options: []string{"step"}, run: cmdGrow,
			detail: "Keys and values as load's (16 and 100 bytes). Waiting makes the tree the same in every session that uses the same seed, whatever the timing of the background work. Needs autocompact on."},
		{name: "tree", summary: "print each level's tables, entries, size, target and bytes written, the write amplification and the last sequence number", inBatch: true, run: cmdTree},
		{name: "numbers", args: "N [digits=7]", summary: "write N random decimal keys of D digits, zero-padded, as one batch", min: 1, max: 1, options: []string{"digits"}, run: cmdNumbers},
		{name: "scans", args: "N [len=10] [digits=7]", summary: "run N scans of len consecutive decimal values placed at random, and print what they read and what the range filters said", min: 1, max: 1, options: []string{"len", "digits"}, run: cmdScans,
			detail: "Each scan is [x, x+len) over keys as numbers writes them; it reads the snapshot if one is open."},
		{name: "nosync", args: "[on|off]", summary: "reopen the store with writes not synced (on) or synced before they return (off, the default)", max: 1, run: cmdNoSync,
			detail: "Options.NoSync: with it on, a write survives a crash of the process (crash) but not a power loss (powerloss)."},
		{name: "crash", summary: "kvsh -mem only: the process dies; what it wrote survives, synced or not; the store reopens", inBatch: true, run: cmdCrash,
			detail: "Prints what the crash took from each file and what recovery found: the WAL records replayed and the sequence number reached. Refused on a real directory."},
		{name: "powerloss", args: "[synced|torn|pages] [seed=N]", summary: "kvsh -mem only: the power fails; only what the crash model keeps survives; the store reopens", max: 1, options: []string{"seed"}, inBatch: true, run: cmdPowerLoss,
			detail: "synced (the default) keeps exactly what was synced; torn keeps a random prefix of each file's unsynced bytes; pages a random subset of its unsynced 4 KiB pages, zeros in place of the others. seed=N repeats a torn or pages crash. Prints what the crash took from each file and what recovery found. Refused on a real directory."},
		{name: "damage", args: "FILE OFFSET [BIT]", summary: "kvsh -mem only: close the store and flip bit BIT (default 0) of byte OFFSET of FILE", min: 2, max: 3, noDB: true, run: cmdDamage,
			detail: "FILE may be a pattern that names one file (MANIFEST-*, *.log). A negative OFFSET counts from the end. The store stays closed: check and repair see the damage; the next command that needs the store opens it and prints what Open says. Refused on a real directory."},
		{name: "ls", summary: "kvsh -mem only: list the store's files: size, bytes written, bytes synced, and whether the name is synced", noDB: true, run: cmdLs,
			detail: "A power loss keeps of a file its synced bytes, and only if its name is synced. A mapped WAL is allocated ahead in 40 KiB steps: its size is more than what was written. Refused on a real directory."},
		{name: "help", args: "[CMD]", summary: "list the commands, or describe one", max: 1, inBatch: true, noDB: true, run: cmdHelp},
		{name: "quit", summary: "close the store and leave (also exit, or end of input)", inBatch: true, noDB: true, run: cmdQuit},
		{name: "exit", summary: "same as quit", inBatch: true, noDB: true, run: cmdQuit},
	}
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func cmdPut(sh *shell, args []string, _ map[string]string) error {
	if sh.batch != nil {
		sh.batch.Put([]byte(args[0]), []byte(args[1]))
		return sh.queued()
	}
	return sh.ok(sh.db.Put([]byte(args[0]), []byte(args[1])))
}

func cmdDel(sh *shell, args []string, _ map[string]string) error {
	if sh.batch != nil {
		sh.batch.Delete([]byte(args[0]))
		return sh.queued()
	}
	return sh.ok(sh.db.Delete([]byte(args[0])))
}

func cmdDelRange(sh *shell, args []string, _ map[string]string) error {
	from, to := []byte(args[0]), []byte(args[1])
	if err := checkRange(args); err != nil {
		return err
	}
	if sh.batch != nil {
		sh.batch.DeleteRange(from, to)
		return sh.queued()
	}
	return sh.ok(sh.db.DeleteRange(from, to))
}

func (sh *shell) queued() error {
	fmt.Fprintf(sh.out, "queued (%s in the batch)\n", plural(sh.batch.Count(), "write"))
	return nil
}

func (sh *shell) ok(err error) error {
	if err == nil {
		fmt.Fprintln(sh.out, "ok")
	}
	return err
}

func cmdGet(sh *shell, args []string, _ map[string]string) error {
	var val []byte
	var err error
	if sh.snap != nil {
		val, err = sh.snap.Get([]byte(args[0]))
	} else {
		val, err = sh.db.Get([]byte(args[0]))
	}
	if errors.Is(err, shale.ErrNotFound) {
		fmt.Fprintln(sh.out, "(not found)")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(sh.out, shale.FormatKey(val))
	return nil
}

// checkRange refuses a range FROM TO (args) whose FROM is after its TO,
// which is surely a mistake; FROM = TO is an empty range.
func checkRange(args []string) error {
	if len(args) == 2 && args[0] > args[1] {
		return fmt.Errorf("FROM %s is after TO %s: the range is FROM <= key < TO", shale.FormatKey([]byte(args[0])), shale.FormatKey([]byte(args[1])))
	}
	return nil
}

// newIter returns an iterator over [args[0], args[1]) of the snapshot, if
// one is open, or of the store.
func (sh *shell) newIter(args []string) *shale.Iterator {
	var o shale.IterOptions
	if len(args) > 0 {
		o.LowerBound = []byte(args[0])
	}
	if len(args) > 1 {
		o.UpperBound = []byte(args[1])
	}
	if sh.snap != nil {
		return sh.snap.NewIter(&o)
	}
	return sh.db.NewIter(&o)
}

func cmdScan(sh *shell, args []string, opts map[string]string) error {
	limit, err := intOption(opts, "limit", 100, 1)
	if err != nil {
		return err
	}
	if err := checkRange(args); err != nil {
		return err
	}
	it := sh.newIter(args)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if err := sh.interrupted("scan stopped after %s", plural(n, "entry")); err != nil {
			it.Close()
			return err
		}
		if n == limit {
			fmt.Fprintf(sh.out, "(stopped at limit=%d: more entries follow)\n", limit)
			return it.Close()
		}
		fmt.Fprintf(sh.out, "%s %s\n", shale.FormatKey(it.Key()), shale.FormatKey(it.Value()))
		n++
	}
	if err := it.Close(); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "(%s)\n", plural(n, "entry"))
	return nil
}

func cmdCount(sh *shell, args []string, _ map[string]string) error {
	if err := checkRange(args); err != nil {
		return err
	}
	it := sh.newIter(args)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if err := sh.interrupted("count stopped after %s", plural(n, "entry")); err != nil {
			it.Close()
			return err
		}
		n++
	}
	if err := it.Close(); err != nil {
		return err
	}
	fmt.Fprintln(sh.out, n)
	return nil
}

func cmdBatch(sh *shell, _ []string, _ map[string]string) error {
	sh.batch = sh.db.NewBatch()
	fmt.Fprintln(sh.out, "batch started: put, del and delrange are queued until commit (or abort)")
	return nil
}

func cmdCommit(sh *shell, _ []string, _ map[string]string) error {
	if sh.batch == nil {
		return errors.New("no batch to commit (batch starts one)")
	}
	if err := sh.db.Apply(sh.batch); err != nil {
		return fmt.Errorf("commit failed, the batch is still open (abort discards it): %w", err)
	}
	fmt.Fprintf(sh.out, "committed %s\n", plural(sh.batch.Count(), "write"))
	sh.batch = nil
	return nil
}

func cmdAbort(sh *shell, _ []string, _ map[string]string) error {
	if sh.batch == nil {
		return errors.New("no batch to abort")
	}
	fmt.Fprintf(sh.out, "discarded %s\n", plural(sh.batch.Count(), "write"))
	sh.batch = nil
	return nil
}

func cmdSnapshot(sh *shell, args []string, _ map[string]string) error {
	if len(args) == 1 {
		if args[0] != "off" {
			return errors.New("usage: snapshot [off]")
		}
		if sh.snap == nil {
			return errors.New("no snapshot is open")
		}
		sh.releaseSnapshot()
		fmt.Fprintln(sh.out, "snapshot released: reads see the live store")
		return nil
	}
	if sh.snap != nil {
		sh.releaseSnapshot()
		fmt.Fprint(sh.out, "released the previous snapshot; ")
	}
	sh.snap = sh.db.NewSnapshot()
	fmt.Fprintln(sh.out, "snapshot taken: get, scan, count and explain get read it until snapshot off")
	return nil
}

func cmdFlush(sh *shell, _ []string, _ map[string]string) error {
	if err := sh.db.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "flushed; %s\n", sh.db.Metrics().Shape())
	return nil
}

func cmdCompact(sh *shell, _ []string, _ map[string]string) error {
	if err := sh.db.Compact(); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "compacted; %s\n", sh.db.Metrics().Shape())
	return nil
}

func cmdTables(sh *shell, _ []string, _ map[string]string) error {
	fmt.Fprint(sh.out, sh.db.Tables())
	return nil
}

func cmdStats(sh *shell, _ []string, _ map[string]string) error {
	fmt.Fprint(sh.out, sh.db.Metrics().String())
	fmt.Fprintf(sh.out, "new tables get %s", describeFilters(sh.opts))
	if sh.opts.Prefix != nil {
		fmt.Fprintf(sh.out, "; %s", describePrefix(sh.opts.Prefix))
	}
	if sh.opts.RangeFilter != nil {
		fmt.Fprintf(sh.out, "; %s", describeRangeFilter(sh.opts.RangeFilter))
	}
	fmt.Fprintln(sh.out)
	return nil
}

func cmdLoad(sh *shell, args []string, opts map[string]string) error {
	n, err := parseInt("N", args[0], 1)
	if err != nil {
		return err
	}
	keySize, err := sizeOption(opts, "keysize", 16, 1)
	if err != nil {
		return err
	}
	valSize, err := sizeOption(opts, "valsize", 100, 0)
	if err != nil {
		return err
	}
	if keySize > maxLoadSize || valSize > maxLoadSize {
		return fmt.Errorf("keysize and valsize: at most %s (put writes a longer value)", formatSize(maxLoadSize))
	}
	perBatch := min(loadBatchSize, loadBatchBytes/(keySize+valSize))
	var bar *progressbar.ProgressBar
	if sh.interactive {
		bar = progressbar.NewOptions(n, progressbar.OptionSetWriter(sh.out),
			progressbar.OptionSetDescription("load"), progressbar.OptionShowCount(),
			progressbar.OptionShowIts(), progressbar.OptionClearOnFinish())
	}
	start := sh.now()
	b := sh.db.NewBatch()
	key, val := make([]byte, keySize), make([]byte, valSize)
	for done := 0; done < n; {
		if err := sh.interrupted("load stopped after %s (written, in whole batches)", plural(done, "key")); err != nil {
			if bar != nil {
				bar.Exit()
				fmt.Fprintln(sh.out)
			}
			return err
		}
		m := min(perBatch, n-done)
		if err := sh.applyRandom(b, key, val, m); err != nil {
			return fmt.Errorf("after %d keys: %w", done, err)
		}
		done += m
		if bar != nil {
			bar.Add(m)
		}
	}
	if bar != nil {
		bar.Finish()
	}
	elapsed := sh.now().Sub(start)
	fmt.Fprintf(sh.out, "loaded %s (%d-byte keys, %d-byte values) in %v",
		plural(n, "random key"), keySize, valSize, elapsed.Round(time.Millisecond))
	if elapsed > 0 {
		fmt.Fprintf(sh.out, ": %.0f keys/s", float64(n)/elapsed.Seconds())
	}
	fmt.Fprintln(sh.out)
	return nil
}

// applyRandom writes m random keys and values of key's and val's lengths
// as one batch, b, which it resets first.
func (sh *shell) applyRandom(b *shale.Batch, key, val []byte, m int) error {
	b.Reset()
	for range m {
		sh.randomize(key)
		sh.randomize(val)
		b.Put(key, val)
	}
	return sh.db.Apply(b)
}

const loadAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

func (sh *shell) randomize(b []byte) {
	for i := range b {
		b[i] = loadAlphabet[sh.rng.IntN(len(loadAlphabet))]
	}
}

func cmdBloom(sh *shell, args []string, _ map[string]string) error {
	if len(args) == 0 {
		fmt.Fprintf(sh.out, "new tables get %s\n", describeFilters(sh.opts))
		return nil
	}
	var bits int
	switch args[0] {
	case "on":
		bits = 10
	case "off":
		bits = shale.NoFilter
	default:
		n, err := parseInt("BITS", args[0], 1)
		if err != nil || n > maxBloomBits {
			return fmt.Errorf("usage: bloom on|off|BITS (BITS from 1 to %d)", maxBloomBits)
		}
		bits = n
	}
	opts := sh.opts
	opts.BloomBitsPerKey = bits
	opts.FilterPolicy = nil // it would override bits
	if err := sh.reopen(opts); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "closed and reopened %s: tables written from now on (flushes, compactions) get %s; existing tables keep theirs\n",
		sh.dir, describeBloom(bits))
	return nil
}

func cmdAutocompact(sh *shell, args []string, _ map[string]string) error {
	if len(args) == 0 {
		fmt.Fprintf(sh.out, "automatic compactions are %s\n", onOff(!sh.opts.DisableAutomaticCompactions))
		return nil
	}
	if args[0] != "on" && args[0] != "off" {
		return errors.New("usage: autocompact [on|off]")
	}
	opts := sh.opts
	opts.DisableAutomaticCompactions = args[0] == "off"
	if err := sh.reopen(opts); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "closed and reopened %s: automatic compactions are %s\n", sh.dir, args[0])
	return nil
}

func cmdRowCache(sh *shell, args []string, _ map[string]string) error {
	if len(args) == 0 {
		if sh.opts.RowCacheSize == 0 {
			fmt.Fprintln(sh.out, "the row cache is off")
		} else {
			fmt.Fprintf(sh.out, "the row cache holds up to %s\n", formatSize(int64(sh.opts.RowCacheSize)))
		}
		return nil
	}
	size := 0
	if args[0] != "off" {
		n, err := parseSize("rowcache", args[0], 1)
		if err != nil {
			return err
		}
		size = n
	}
	opts := sh.opts
	opts.RowCacheSize = size
	if err := sh.reopen(opts); err != nil {
		return err
	}
	if size == 0 {
		fmt.Fprintf(sh.out, "closed and reopened %s: the row cache is off\n", sh.dir)
	} else {
		fmt.Fprintf(sh.out, "closed and reopened %s: the row cache holds up to %s\n", sh.dir, formatSize(int64(size)))
	}
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// reopen closes the store and opens it again with opts, which is how an
// Open option changes. It refuses while a snapshot is open, since closing
// would end it.
func (sh *shell) reopen(opts shale.Options) error {
	if sh.snap != nil {
		return errors.New("a snapshot is open and reopening the store would end it: snapshot off first")
	}
	if err := sh.closeStore(); err != nil {
		return fmt.Errorf("closing to reopen: %w", err)
	}
	db, err := shale.Open(sh.dir, &opts)
	if err != nil {
		return fmt.Errorf("reopening: %w", err)
	}
	sh.setStore(db, sh.dir)
	sh.opts = opts
	return nil
}

func describeBloom(bits int) string {
	switch {
	case bits == 0:
		return "Bloom filters at 10 bits/key (the default)"
	case bits < 0:
		return "no filter"
	}
	return fmt.Sprintf("Bloom filters at %d bits/key", bits)
}

const explainUsage = "usage: explain get KEY | scan FROM TO [prefix=P]"

func cmdExplain(sh *shell, args []string, opts map[string]string) error {
	switch {
	case args[0] == "get" && len(args) == 2 && len(opts) == 0:
		trace := sh.db.TraceGet
		if sh.snap != nil {
			trace = sh.snap.TraceGet
		}
		t, err := trace([]byte(args[1]))
		if err != nil {
			return err
		}
		fmt.Fprint(sh.out, t)
		return nil
	case args[0] == "scan" && len(args) == 3:
		io := &shale.IterOptions{LowerBound: []byte(args[1]), UpperBound: []byte(args[2])}
		if p, ok := opts["prefix"]; ok {
			io.Prefix = []byte(p)
		}
		trace := sh.db.TraceScan
		if sh.snap != nil {
			trace = sh.snap.TraceScan
		}
		t, err := trace(io)
		if err != nil {
			return err
		}
		fmt.Fprint(sh.out, t)
		return nil
	}
	return errors.New(explainUsage)
}

func cmdPrefix(sh *shell, args []string, _ map[string]string) error {
	if len(args) == 0 {
		fmt.Fprintf(sh.out, "new tables get %s\n", describePrefix(sh.opts.Prefix))
		return nil
	}
	n := 0
	if args[0] != "off" {
		var err error
		if n, err = parseInt("N", args[0], 1); err != nil {
			return errors.New("usage: prefix [off|N]")
		}
	}
	opts := sh.opts
	opts.Prefix = shale.FixedPrefix(n)
	if err := sh.reopen(opts); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "closed and reopened %s: tables written from now on (flushes, compactions) get %s; existing tables keep theirs\n",
		sh.dir, describePrefix(opts.Prefix))
	return nil
}

// describePrefix says what the filters of new tables hold besides keys.
func describePrefix(p *shale.PrefixExtractor) string {
	if p == nil {
		return "no prefix filter"
	}
	return fmt.Sprintf("prefix filters of %s", p.Name)
}

func cmdRangeFilter(sh *shell, args []string, _ map[string]string) error {
	if len(args) == 0 {
		fmt.Fprintf(sh.out, "new tables get %s\n", describeRangeFilter(sh.opts.RangeFilter))
		return nil
	}
	opts := sh.opts
	switch args[0] {
	case "off":
		opts.RangeFilter = nil
	case "on":
		opts.RangeFilter = &rangefilter.Options{BitsPerKey: rangefilter.DefaultBitsPerKey}
	default:
		bits, err := parseInt("BITS", args[0], rangefilter.MinBitsPerKey)
		if err != nil || bits > rangefilter.MaxBitsPerKey {
			return fmt.Errorf("usage: rangefilter [on|off|BITS], BITS from %d to %d", rangefilter.MinBitsPerKey, rangefilter.MaxBitsPerKey)
		}
		opts.RangeFilter = &rangefilter.Options{BitsPerKey: bits}
	}
	if err := sh.reopen(opts); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "closed and reopened %s: tables written from now on (flushes, compactions) get %s; existing tables keep theirs\n",
		sh.dir, describeRangeFilter(opts.RangeFilter))
	return nil
}

// describeRangeFilter says whether new tables get a range filter.
func describeRangeFilter(o *rangefilter.Options) string {
	if o == nil {
		return "no range filter"
	}
	return fmt.Sprintf("range filters of %d bits/key", o.BitsPerKey)
}

func cmdOpen(sh *shell, args []string, _ map[string]string) error {
	dir := args[0]
	if sh.snap != nil {
		return errors.New("a snapshot is open: snapshot off first")
	}
	if sh.db != nil && sameDir(dir, sh.dir) {
		return fmt.Errorf("%s is already open", dir)
	}
	db, err := openStore(dir, &sh.opts)
	if err != nil {
		return err
	}
	old := sh.db
	sh.setStore(db, dir)
	fmt.Fprintf(sh.out, "opened %s: %s\n", dir, db.Metrics().Shape())
	if old != nil {
		if err := old.Close(); err != nil {
			return fmt.Errorf("closing the previous store: %w", err)
		}
	}
	return nil
}

func sameDir(a, b string) bool {
	a, errA := filepath.Abs(a)
	b, errB := filepath.Abs(b)
	return errA == nil && errB == nil && a == b
}

func cmdHelp(sh *shell, args []string, _ map[string]string) error {
	if len(args) == 1 {
		c := lookup(args[0])
		if c == nil {
			return fmt.Errorf("unknown command %s (help lists them)", shale.FormatKey([]byte(args[0])))
		}
		fmt.Fprintf(sh.out, "%s\n  %s\n", c.usage(), c.summary)
		if c.detail != "" {
			fmt.Fprintf(sh.out, "  %s\n", c.detail)
		}
		return nil
	}
	tw := tabwriter.NewWriter(sh.out, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.usage(), c.summary)
	}
	tw.Flush()
	fmt.Fprintln(sh.out, `Keys and values are words; quote one that holds spaces ("a b") and escape bytes with \n \r \t \\ \" \xHH.`)
	fmt.Fprintln(sh.out, `Output uses the same syntax: printable ASCII as-is, anything else quoted. help CMD says more.`)
	fmt.Fprintln(sh.out, `Lessons on Bloom filters and LSM trees, typed into this shell: docs/lessons/ in the shale repository.`)
	return nil
}

func cmdQuit(*shell, []string, map[string]string) error { return errQuit }

// parseInt parses what=s as an integer of at least lo.
func parseInt(what, s string, lo int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < lo {
		return 0, fmt.Errorf("%s: want an integer >= %d, not %s", what, lo, shale.FormatKey([]byte(s)))
	}
	return n, nil
}

// intOption returns the integer option name, or def when it is not given.
func intOption(opts map[string]string, name string, def, lo int) (int, error) {
	s, ok := opts[name]
	if !ok {
		return def, nil
	}
	return parseInt(name, s, lo)
}

// plural returns "1 noun" or "n nouns".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])) {
		return fmt.Sprintf("%d %sies", n, noun[:len(noun)-1])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
