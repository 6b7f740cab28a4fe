package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shale-db/shale"
)

// TestInterruptStopsCommand: a command that Ctrl-C may stop (load, scan,
// count, lookups, export-filter) stops at its first step once interrupted,
// with an error that says so and what was done; the command after it runs
// whole, as if nothing had happened.
func TestInterruptStopsCommand(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	sh, err := newShell(&out, filepath.Join(dir, "store"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.close()
	sh.exec("load 100")
	for _, c := range []struct{ line, says string }{
		{"load 100", "load stopped after 0 keys (written, in whole batches)"},
		{"scan", "scan stopped after 0 entries"},
		{"count", "count stopped after 0 entries"},
		{"lookups 100", "lookups stopped after 0 lookups"},
		{"export-filter " + filepath.Join(dir, "f.bloom"), "export-filter stopped; " + filepath.Join(dir, "f.bloom") + " not written"},
	} {
		out.Reset()
		sh.interrupt()
		if _, err := sh.execLine(c.line); !errors.Is(err, errInterrupted) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s, interrupted: %v, want it to say %q", c.line, err, c.says)
		}
		out.Reset()
		if _, err := sh.execLine("count"); err != nil || out.String() != "100\n" {
			t.Errorf("count after an interrupted %s: %q, %v; want 100", c.line, out.String(), err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "f.bloom")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an interrupted export-filter wrote its file: %v", err)
	}
	// A command that cannot stop midway says so and runs to its end.
	out.Reset()
	sh.running = lookup("compact")
	sh.interrupt()
	sh.running = nil
	if _, err := sh.execLine("compact"); err != nil {
		t.Fatal(err)
	}
	want := "(compact cannot be stopped midway: waiting for it to finish; the store stays consistent)\ncompacted; tables L6: 1 table\n"
	if out.String() != want {
		t.Errorf("interrupted compact printed %q, want %q", out.String(), want)
	}
}

// TestCtrlCStopsScript: SIGINT during a script's load stops the load after
// whole batches and ends the script (the commands after it do not run)
// with errInterruptedScript, which kvsh exits 130 on; the store is
// consistent and holds exactly the keys the error says were written.
func TestCtrlCStopsScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		// Far more keys than are written before the signal.
		done <- run(strings.NewReader("load 20000000 keysize=8 valsize=0\nput after 1\n"), &out, &out, dir, session{signals: true})
	}()
	// Wait for the load to be under way, not for a time: its first flush
	// has written a table (the WAL, mapped, may be allocated ahead).
	for !hasTable(dir) {
		select {
		case err := <-done:
			t.Fatalf("the script ended before the signal: %v\n%s", err, out.String())
		default:
			time.Sleep(time.Millisecond)
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, errInterruptedScript) {
		t.Fatalf("run: %v, want errInterruptedScript\n%s", err, out.String())
	}
	m := regexp.MustCompile(`^error: interrupted: load stopped after (\d+) keys \(written, in whole batches\)\n$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output %q", out.String())
	}
	if err := shale.Check(dir, nil); err != nil {
		t.Fatalf("Check after the interrupted load: %v", err)
	}
	var counted bytes.Buffer
	if err := run(strings.NewReader("count\nget after\n"), &counted, &counted, dir, session{}); err != nil {
		t.Fatal(err)
	}
	if want := m[1] + "\n(not found)\n"; counted.String() != want {
		t.Fatalf("after the interrupted script: %q, want %q", counted.String(), want)
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 || n%loadBatchSize != 0 {
		t.Fatalf("load wrote %d keys: want some, in whole batches of %d", n, loadBatchSize)
	}
}

// hasTable reports whether dir holds a table.
func hasTable(dir string) bool {
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	return len(tables) > 0
}
