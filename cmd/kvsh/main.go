// Command kvsh is an interactive shell for a shale store.
//
//	kvsh [-readonly] [-mem] [DIR]
//	kvsh check DIR
//	kvsh repair DIR
//
// The first form opens (or creates) the store in DIR, ./shale-data by
// default, and reads commands. With -readonly it opens an existing store
// read-only (see shale.Options.ReadOnly): nothing is written to DIR, the
// commands that write fail, and other read-only opens, kvsh check
// included, may run beside it. The commands are: put, get, del, scan, count,
// batch/commit/abort, snapshot, flush, compact, stats, load, bloom, policy,
// seed, lookups, autocompact, rowcache, export-filter, filter, explain get,
// web, open, check, repair, checkpoint, nosync, shape, grow, tree, numbers, scans,
// help, quit. With -mem the store is
// named DIR on a new in-memory file system, gone when kvsh ends, and
// kvsh also takes crash, powerloss, damage and ls, which crash the
// process, cut the power and flip bits under the store (refused on a real
// directory). web serves a live, read-only view of
// the store to a browser, on loopback unless told otherwise. help lists them and help CMD describes
// one. The lessons in docs/lessons are typed into it.
//
// kvsh check DIR verifies the closed store in DIR and prints "DIR:
// consistent" or every problem it finds, each naming its file and offset;
// the exit status is 1 if there are problems. kvsh repair DIR rebuilds the
// store in DIR from the intact records of its tables and WALs, for a store
// that will not open (see shale.Repair), and prints what it did. Neither
// needs the store to open, and both refuse a store that is open.
//
// On a terminal kvsh edits lines, completes command names with Tab, and keeps
// its history across sessions in ~/.kvsh_history (in the home directory, not
// the store directory, so that the store holds only the store's files).
// Otherwise it reads one command per line and prints only results: no
// banner, no prompt, no progress bars, so scripts can drive it. Errors are
// printed as one line starting with "error:" and the session goes on; only
// a store that cannot be opened at start ends kvsh, with exit status 1.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/chzyer/readline"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/vfs"
)

func main() {
	mem := flag.Bool("mem", false, memFlagUsage)
	readOnly := flag.Bool("readonly", false, "open an existing store read-only: nothing is written to DIR")
	flag.Parse()
	args := flag.Args()
	dir := "shale-data"
	var opts shale.Options
	opts.ReadOnly = *readOnly
	if *mem {
		opts.FS = vfs.NewMem()
	}
	switch {
	case len(args) == 0:
	case len(args) == 1:
		dir = args[0]
	case len(args) == 2 && !opts.ReadOnly && !*mem && (args[0] == "check" || args[0] == "repair"):
		if err := tool(os.Stdout, args[0], args[1]); err != nil {
			fmt.Fprintf(os.Stderr, "kvsh: %v\n", err)
			os.Exit(1)
		}
		return
	default:
		fmt.Fprintln(os.Stderr, "usage: kvsh [-readonly] [-mem] [DIR] | kvsh check DIR | kvsh repair DIR")
		os.Exit(2)
	}
	if err := run(os.Stdin, os.Stdout, dir, readline.DefaultIsTerminal(), opts); err != nil {
		fmt.Fprintf(os.Stderr, "kvsh: %v\n", err)
		os.Exit(1)
	}
}

// run opens the store in dir with opts and runs the commands read from in
// until quit or the end of in. interactive says in and out are a terminal.
func run(in io.Reader, out io.Writer, dir string, interactive bool, opts shale.Options) (err error) {
	sh, err := newShellWith(out, dir, interactive, opts)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := sh.close(); err == nil {
			err = cerr
		}
	}()
	if interactive {
		return terminal(sh, in, out)
	}
	scanner := bufio.NewScanner(in)
	scanner.Buffer(nil, 64<<20) // values can be long
	for scanner.Scan() {
		if sh.exec(scanner.Text()) {
			return nil
		}
	}
	return scanner.Err()
}

// tool runs kvsh check or kvsh repair (name) on the store in dir, with
// default options.
func tool(out io.Writer, name, dir string) error {
	if name == "check" {
		return checkStore(out, dir, &shale.Options{})
	}
	return repairStore(out, dir, &shale.Options{})
}

// terminal runs the shell with line editing, history and completion.
func terminal(sh *shell, in io.Reader, out io.Writer) error {
	rl, err := readline.NewEx(&readline.Config{
		Prompt:          sh.prompt(),
		HistoryFile:     historyFile(),
		AutoComplete:    completer(),
		InterruptPrompt: "^C",
		Stdin:           io.NopCloser(in),
		Stdout:          out,
	})
	if err != nil {
		return err
	}
	defer rl.Close()
	mode := ""
	if sh.opts.ReadOnly {
		mode = " (read-only)"
	}
	fmt.Fprintf(out, "kvsh: store %s%s, %s; help lists the commands\n", sh.dir, mode, sh.db.Metrics().Shape())
	for {
		rl.SetPrompt(sh.prompt())
		line, err := rl.Readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			fmt.Fprintln(out, "(quit or Ctrl-D leaves)")
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		if sh.exec(line) {
			return nil
		}
	}
}

// historyFile is ~/.kvsh_history, or "" (no history) without a home.
func historyFile() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".kvsh_history")
}

// completer completes command names, help's argument, and the words that
// some commands take first.
func completer() readline.AutoCompleter {
	var items, names []readline.PrefixCompleterInterface
	for _, c := range commands {
		names = append(names, readline.PcItem(c.name))
	}
	for _, c := range commands {
		switch c.name {
		case "help":
			items = append(items, readline.PcItem(c.name, names...))
		case "explain":
			items = append(items, readline.PcItem(c.name, readline.PcItem("get")))
		case "snapshot":
			items = append(items, readline.PcItem(c.name, readline.PcItem("off")))
		case "web":
			items = append(items, readline.PcItem(c.name, readline.PcItem("stop")))
		case "bloom", "autocompact":
			items = append(items, readline.PcItem(c.name, readline.PcItem("on"), readline.PcItem("off")))
		case "filter":
			var subs []readline.PrefixCompleterInterface
			for _, sub := range []string{"new", "add", "test", "remove", "fill", "probe", "stats", "sizes"} {
				subs = append(subs, readline.PcItem(sub))
			}
			items = append(items, readline.PcItem(c.name, subs...))
		case "policy":
			var policies []readline.PrefixCompleterInterface
			for _, name := range []string{"bloom", "ribbon", "fuse", "monkey", "levels", "off"} {
				policies = append(policies, readline.PcItem(name))
			}
			items = append(items, readline.PcItem(c.name, policies...))
		default:
			items = append(items, readline.PcItem(c.name))
		}
	}
	return readline.NewPrefixCompleter(items...)
}
