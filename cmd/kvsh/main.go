// Command kvsh is a shell for a shale store: interactive on a terminal, and
// a Unix tool in scripts.
//
// Usage:
//
//	kvsh [-c COMMANDS] [-e] [-readonly] [-mem] [DIR]
//	kvsh check DIR
//	kvsh repair DIR
//	kvsh -h | --help
//
// The first form opens the store in DIR (./shale-data by default), creating
// it if DIR does not exist or is empty; a directory that holds other files
// and no store is refused, so that a mistyped path never scatters store
// files into, say, a home directory. It then reads commands: put, get, del,
// delrange, scan, count, batch/commit/abort, snapshot, flush, compact,
// stats, tables, load, bloom, policy, seed, lookups, prefix, rangefilter,
// autocompact, rowcache, export-filter, filter, explain, web, open, check,
// repair, checkpoint, export-table, ingest, nosync, shape, grow, tree, numbers, scans, help,
// quit. help lists them and help CMD describes one. Sizes
// take binary units: rowcache 64MiB, load 1000 valsize=1KiB. The lessons in
// docs/lessons are typed into it, and docs/kvsh.md describes it for users.
//
// Flags:
//
//	-c COMMANDS  run COMMANDS, separated by ";" (quote a ";" that is data),
//	             instead of reading commands from the standard input
//	-e           stop at the first command that fails
//	-readonly    open an existing store read-only (see shale.Options.ReadOnly):
//	             nothing is written to DIR, the commands that write fail,
//	             and other read-only opens, kvsh check included, may run
//	             beside it
//	-mem         open the store named DIR on a new in-memory file system,
//	             gone when kvsh ends; only there kvsh also takes crash,
//	             powerloss, damage and ls, which crash the process, cut the
//	             power and flip bits under the store; with -readonly it is a
//	             usage error (a new file system holds no store)
//	-h, --help   print this usage and exit, creating nothing
//
// On a terminal, without -c, kvsh edits lines, completes command names with
// Tab, and keeps its history across sessions in ~/.kvsh_history (in the
// home directory, not the store directory, so that the store holds only the
// store's files). Otherwise it reads one command per line (or runs -c's)
// and prints only results: no banner, no prompt, no progress bars. Each
// error is printed to the standard error as one line starting with
// "error:", and the session goes on, unless -e stops it.
//
// Ctrl-C during load, scan, count, lookups or export-filter stops that
// command (what load wrote stays written: each of its batches is atomic)
// and returns to the prompt; in a script, kvsh then closes the store and
// exits with status 130. A compaction cannot be stopped midway: Ctrl-C
// during compact (or another command) says so, and kvsh waits for it to
// finish rather than leave it half done. Ctrl-C at the prompt does nothing;
// quit or Ctrl-D leaves. The store stays consistent whatever is stopped.
//
// kvsh check DIR verifies the closed store in DIR and prints "DIR:
// consistent" or every problem it finds, each naming its file and offset.
// kvsh repair DIR rebuilds the store in DIR from the intact records of its
// tables and WALs, for a store that will not open (see shale.Repair), and
// prints what it kept of each file and what it moved to DIR/lost/. Neither
// needs the store to open, and both refuse a store that is open.
//
// Exit status: 0 when everything succeeded; 1 when a command failed (in a
// script or -c), the store could not be opened, check found problems or
// repair failed; 2 for a usage error; 130 when Ctrl-C stopped a script.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/chzyer/readline"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/vfs"
)

// usage is what kvsh -h prints, and kvsh prints after a usage error.
const usage = `usage: kvsh [-c COMMANDS] [-e] [-readonly] [-mem] [DIR]
                         open the store in DIR (default ./shale-data) and run commands
       kvsh check DIR    verify the closed store in DIR
       kvsh repair DIR   rebuild the closed store in DIR from its intact records

DIR is created if it does not exist or is empty; a directory holding other
files and no store is refused.

  -c COMMANDS  run COMMANDS, separated by ";", instead of reading stdin
  -e           stop at the first command that fails
  -readonly    open an existing store read-only: nothing is written to DIR
  -mem         open the store on an in-memory file system, gone when kvsh
               ends, where crash, powerloss and damage are allowed
  -h, --help   print this and exit

Commands are read from the terminal (with editing and history) or, one per
line, from stdin; "help" lists them. Errors go to stderr as "error: ...".
Ctrl-C stops a long command (load, scan, count, lookups, export-filter).
Exit status: 0 success; 1 a command failed, or the store could not be
opened, or check found problems; 2 usage error; 130 interrupted script.
`

// Exit statuses.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130 // 128 + SIGINT, as shells report it
)

func main() {
	os.Exit(kvsh(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, readline.DefaultIsTerminal()))
}

// kvsh runs the command line args and returns the exit status. terminal
// says stdin and stdout are a terminal.
func kvsh(args []string, stdin io.Reader, stdout, stderr io.Writer, terminal bool) int {
	flags := flag.NewFlagSet("kvsh", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {} // printed below, to stdout for -h
	commands := flags.String("c", "", "")
	stopOnError := flags.Bool("e", false, "")
	readOnly := flags.Bool("readonly", false, "")
	mem := flags.Bool("mem", false, "")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprint(stderr, usage) // after the flag package's error line
		return exitUsage
	}
	if *readOnly && *mem {
		fmt.Fprintln(stderr, "kvsh: -readonly with -mem: the in-memory file system starts empty, with no store to open read-only")
		return exitUsage
	}
	hasCommands := false
	flags.Visit(func(f *flag.Flag) { hasCommands = hasCommands || f.Name == "c" })
	rest := flags.Args()
	dir := "shale-data"
	switch {
	case len(rest) == 2 && (rest[0] == "check" || rest[0] == "repair") && !hasCommands && !*stopOnError && !*readOnly && !*mem:
		if err := tool(stdout, rest[0], rest[1]); err != nil {
			fmt.Fprintf(stderr, "kvsh: %v\n", err)
			return exitFailed
		}
		return exitOK
	case len(rest) == 1 && (rest[0] == "check" || rest[0] == "repair"):
		fmt.Fprintf(stderr, "kvsh: %s needs the store's directory: kvsh %s DIR (./%s as a store: kvsh ./%s)\n", rest[0], rest[0], rest[0], rest[0])
		return exitUsage
	case len(rest) == 1:
		dir = rest[0]
	case len(rest) > 1:
		fmt.Fprintf(stderr, "kvsh: unexpected arguments %s\n%s", strings.Join(rest[1:], " "), usage)
		return exitUsage
	}
	in := stdin
	interactive := terminal && !hasCommands
	if hasCommands {
		lines, err := splitCommands(*commands)
		if err != nil {
			fmt.Fprintf(stderr, "kvsh: -c: %v\n", err)
			return exitUsage
		}
		in = strings.NewReader(strings.Join(lines, "\n"))
	}
	opts := shale.Options{ReadOnly: *readOnly}
	if *mem {
		opts.FS = vfs.NewMem()
	}
	err := run(in, stdout, stderr, dir, session{interactive: interactive, stopOnError: *stopOnError, signals: true, opts: opts})
	switch {
	case errors.Is(err, errInterruptedScript):
		return exitInterrupted
	case errors.Is(err, errCommandsFailed):
		return exitFailed
	case err != nil:
		fmt.Fprintf(stderr, "kvsh: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// session says how run reads and runs commands.
type session struct {
	interactive bool // stdin and stdout are a terminal: line editing, prompt
	stopOnError bool // -e: stop at the first command that fails
	signals     bool // Ctrl-C (SIGINT) stops the running command
	// opts are the store's options: ReadOnly for -readonly, an in-memory
	// FS for -mem.
	opts shale.Options
}

var (
	// errCommandsFailed ends a non-interactive session in which a command
	// failed: kvsh exits with status 1.
	errCommandsFailed = errors.New("a command failed")
	// errInterruptedScript ends a non-interactive session whose command
	// Ctrl-C stopped: kvsh exits with status 130.
	errInterruptedScript = errors.New("interrupted")
)

// run opens the store in dir with s.opts and runs the commands read from in until quit
// or the end of in. Results go to out, errors to errOut. A non-interactive
// session returns errCommandsFailed if a command failed (and stops there
// with stopOnError), and errInterruptedScript after Ctrl-C stopped one.
func run(in io.Reader, out, errOut io.Writer, dir string, s session) (err error) {
	sh, err := newShellWith(out, dir, s.interactive, s.opts)
	if err != nil {
		return err
	}
	sh.errOut = errOut
	defer func() {
		if cerr := sh.close(); err == nil {
			err = cerr
		}
	}()
	exec := sh.execLine
	if s.signals {
		exec = sh.execInterruptible
	}
	if s.interactive {
		return terminal(sh, in, out, exec)
	}
	scanner := bufio.NewScanner(in)
	scanner.Buffer(nil, 64<<20) // values can be long
	failed := false
	for scanner.Scan() {
		quit, cmdErr := exec(scanner.Text())
		switch {
		case errors.Is(cmdErr, errInterrupted) && s.signals:
			return errInterruptedScript
		case cmdErr != nil:
			failed = true
		}
		if quit || failed && s.stopOnError {
			break
		}
	}
	if err := scanner.Err(); err != nil {
		return err
	}
	if failed {
		return errCommandsFailed
	}
	return nil
}

// execInterruptible is exec with Ctrl-C (SIGINT) relayed to the shell
// while the command runs (see shell.interrupt), rather than ending kvsh.
func (sh *shell) execInterruptible(line string) (quit bool, err error) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt)
	done := make(chan struct{})
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		for {
			select {
			case <-signals:
				sh.interrupt()
			case <-done:
				return
			}
		}
	}()
	defer func() {
		signal.Stop(signals)
		close(done)
		<-relayed
	}()
	return sh.execLine(line)
}

// splitCommands splits -c's argument at each ";" outside double quotes (an
// escaped \" does not open or close one), as splitLine splits words.
func splitCommands(s string) ([]string, error) {
	var lines []string
	start, inQuote := 0, false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // the escaped byte is data
		case '"':
			inQuote = !inQuote
		case ';':
			if !inQuote {
				lines = append(lines, s[start:i])
				start = i + 1
			}
		case '\n':
			return nil, errors.New(`a newline in COMMANDS: separate commands with ";"`)
		}
	}
	if inQuote {
		return nil, errors.New(`unterminated quote: close it with "`)
	}
	return append(lines, s[start:]), nil
}

// tool runs kvsh check or kvsh repair (name) on the store in dir, with
// default options.
func tool(out io.Writer, name, dir string) error {
	if name == "check" {
		return checkStore(out, dir, &shale.Options{})
	}
	return repairStore(out, dir, &shale.Options{})
}

// terminal runs the shell with line editing, history and completion,
// running each line with exec.
func terminal(sh *shell, in io.Reader, out io.Writer, exec func(string) (bool, error)) error {
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
	fmt.Fprintf(out, "kvsh: store %s, %s; help lists the commands\n", sh.dir, sh.db.Metrics().Shape())
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
		if quit, _ := exec(line); quit {
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
