// Command kvsh is an interactive shell for a shale store.
//
//	kvsh [DIR]
//
// opens (or creates) the store in DIR, ./shale-data by default, and reads
// commands: put, get, del, scan, count, batch/commit/abort, snapshot, flush,
// compact, stats, load, bloom, explain get, open, help, quit. help lists them
// and help CMD describes one.
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
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/chzyer/readline"
)

func main() {
	dir := "shale-data"
	switch len(os.Args) {
	case 1:
	case 2:
		dir = os.Args[1]
	default:
		fmt.Fprintln(os.Stderr, "usage: kvsh [DIR]")
		os.Exit(2)
	}
	if err := run(os.Stdin, os.Stdout, dir, readline.DefaultIsTerminal()); err != nil {
		fmt.Fprintf(os.Stderr, "kvsh: %v\n", err)
		os.Exit(1)
	}
}

// run opens the store in dir and runs the commands read from in until quit
// or the end of in. interactive says in and out are a terminal.
func run(in io.Reader, out io.Writer, dir string, interactive bool) (err error) {
	sh, err := newShell(out, dir, interactive)
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
	fmt.Fprintf(out, "kvsh: store %s, %s; help lists the commands\n", sh.dir, treeShape(sh.db.Metrics()))
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

// completer completes command names, and help's argument.
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
		case "bloom", "autocompact":
			items = append(items, readline.PcItem(c.name, readline.PcItem("on"), readline.PcItem("off")))
		default:
			items = append(items, readline.PcItem(c.name))
		}
	}
	return readline.NewPrefixCompleter(items...)
}
