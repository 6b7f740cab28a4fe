package main

// grow and tree: a store that grows step by step, the same in every
// session, and the options that set the tree's shape small enough to watch
// (lesson 9).

import (
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"
)

// growKeySize and growValueSize are the sizes of grow's keys and values,
// load's defaults.
const (
	growKeySize   = 16
	growValueSize = 100
)

// settlePoll is how often grow looks whether the tree has settled.
const settlePoll = time.Millisecond

func cmdGrow(sh *shell, args []string, opts map[string]string) error {
	n, err := parseInt("N", args[0], 1)
	if err != nil {
		return err
	}
	step, err := intOption(opts, "step", 1000, 1)
	if err != nil {
		return err
	}
	if sh.opts.DisableAutomaticCompactions {
		return errors.New("grow waits for the compactions each flush starts: autocompact on first")
	}
	key, val := make([]byte, growKeySize), make([]byte, growValueSize)
	b := sh.db.NewBatch()
	for done := 0; done < n; {
		m := min(step, n-done)
		if err := sh.applyRandom(b, key, val, m); err != nil {
			return fmt.Errorf("after %d keys: %w", done, err)
		}
		done += m
		if err := sh.db.Flush(); err != nil {
			return err
		}
		if err := sh.settle(); err != nil {
			return err
		}
	}
	m := sh.db.Metrics()
	fmt.Fprintf(sh.out, "grew by %s in %s of %d, each flushed and its compactions done; %s\n",
		plural(n, "random key"), plural((n+step-1)/step, "step"), step, m.Shape())
	return nil
}

// settle waits until no flush or compaction is pending: the tree then is
// what the writes so far make of it, whatever the timing of the
// background work.
func (sh *shell) settle() error {
	for {
		m := sh.db.Metrics()
		if !m.BackgroundOK {
			return errors.New("a flush or compaction failed (stats says more)")
		}
		if m.ImmutableTables == 0 && !m.CompactionDue {
			return nil
		}
		time.Sleep(settlePoll)
	}
}

// cmdTree prints the tree level by level: L0, then the base level and
// those below it (the levels between are empty).
func cmdTree(sh *shell, _ []string, _ map[string]string) error {
	m := sh.db.Metrics()
	tables := sh.db.Tables()
	tw := tabwriter.NewWriter(sh.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "level\ttables\tentries\tsize\ttarget\twritten\twritten/user\t")
	var user float64
	if m.UserBytes > 0 {
		user = float64(m.UserBytes)
	}
	ratio := func(n int64) string {
		if user == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(n)/user, 'f', 2, 64)
	}
	for i, l := range m.Levels {
		if i > 0 && i < m.BaseLevel && l.Files == 0 && l.BytesWritten == 0 {
			continue // above the base level: empty, and nothing to show
		}
		name := fmt.Sprintf("L%d", i)
		if i == m.BaseLevel {
			name = "base " + name
		}
		target := "-"
		if l.Target > 0 {
			target = formatSize(l.Target)
		}
		var entries, rangeDels uint64
		if i < len(tables) {
			for _, t := range tables[i] {
				entries += t.Entries
				rangeDels += t.RangeDels
			}
		}
		count := strconv.FormatUint(entries, 10)
		if rangeDels > 0 {
			count += fmt.Sprintf(" +%d range", rangeDels)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", name, l.Files, count, formatSize(l.Bytes), target, formatSize(l.BytesWritten), ratio(l.BytesWritten))
	}
	fmt.Fprintf(tw, "WAL\t\t\t\t\t%s\t%s\t\n", formatSize(m.WALBytes), ratio(m.WALBytes))
	tw.Flush()
	fmt.Fprintf(sh.out, "user bytes (keys and values): %s; flushes: %d; compactions: %d, +%d moves; write amp: %.2f\n",
		formatSize(m.UserBytes), m.Flushes, m.Compactions, m.TrivialMoves, m.WriteAmp)
	fmt.Fprintf(sh.out, "memtable: %s; last sequence number: %d; snapshots open: %d\n", formatSize(m.MemTableBytes), m.LastSeqNum, m.Snapshots)
	return nil
}

func cmdShape(sh *shell, _ []string, opts map[string]string) error {
	o := sh.opts
	for _, f := range []struct {
		name  string
		set   func(int)
		lo    int
		parse func(what, s string, lo int) (int, error)
	}{
		{"memtable", func(n int) { o.MemTableSize = n }, 1 << 10, parseSize},
		{"lbase", func(n int) { o.LBaseMaxBytes = int64(n) }, 1 << 10, parseSize},
		{"filesize", func(n int) { o.TargetFileSize = int64(n) }, 1 << 10, parseSize},
		{"l0", func(n int) { o.L0CompactionThreshold = n; o.L0StopWritesThreshold = 0; o.L0SlowdownWritesThreshold = 0 }, 2, parseInt},
	} {
		if s, ok := opts[f.name]; ok {
			n, err := f.parse(f.name, s, f.lo)
			if err != nil {
				return err
			}
			f.set(n)
		}
	}
	if len(opts) > 0 {
		if err := sh.reopen(o); err != nil {
			return err
		}
		fmt.Fprintf(sh.out, "closed and reopened %s: ", sh.dir)
	}
	fmt.Fprintf(sh.out, "memtables of %s, L0 compacted at %d tables, base level target %s, tables up to %s\n",
		sizeOr(int64(sh.opts.MemTableSize), 4<<20), intOr(sh.opts.L0CompactionThreshold, 6),
		sizeOr(sh.opts.LBaseMaxBytes, 64<<20), sizeOr(sh.opts.TargetFileSize, 2<<20))
	return nil
}

// sizeOr formats n, or def when n is 0 (an option's default).
func sizeOr(n, def int64) string {
	if n == 0 {
		n = def
	}
	return formatSize(n)
}

func intOr(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}
