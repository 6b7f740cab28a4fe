package main

import (
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shale-db/shale/internal/procstat"
)

// memtraceEvery is how often a memory trace samples the process.
const memtraceEvery = 100 * time.Millisecond

// memtraceHeader names the columns of a memory trace (-memtrace), one line
// per sample, in MiB except the first four:
//
//   - engine, workload; phase: ops while the workload runs, settle while
//     the store settles after a fill, close while it closes; seconds since
//     the workload began;
//   - rss, rss_anon, rss_file: VmRSS, RssAnon and RssFile from
//     /proc/self/status (file pages include a mapped WAL's);
//   - go_heap_objects: the Go heap's objects, live and garbage not yet
//     swept; go_heap_free: heap the runtime holds with no object in it
//     (free, or unused in its spans) and has not given back; go_other: the runtime's memory besides the heap
//     (stacks, its own metadata); gc_goal: the heap size at which the next
//     collection ends (runtime/metrics);
//   - the engine's own account, shale's only (Metrics; empty for others):
//     offheap, the bytes its buffers outside the Go heap hold (memtable
//     slabs, filters and indexes, freed or not yet; internal/manual),
//     filters, indexes, memtables (the mutable one and those waiting for a
//     flush), memtable_filters, block_cache.
var memtraceHeader = strings.Join([]string{
	"engine", "workload", "phase", "seconds",
	"rss", "rss_anon", "rss_file",
	"go_heap_objects", "go_heap_free", "go_other", "gc_goal",
	"offheap", "filters", "indexes", "memtables", "memtable_filters", "block_cache",
}, ",")

// engineMemory is what an engine says it holds, in bytes (see
// memtraceHeader).
type engineMemory struct {
	OffHeap, Filters, Indexes, MemTables, MemTableFilters, BlockCache int64
}

// memtrace samples a process's memory every memtraceEvery into w until
// stop.
type memtrace struct {
	w                *os.File
	engine, workload string
	memory           func() engineMemory // nil: the engine gives no account
	start            time.Time
	samples          []metrics.Sample

	mu    sync.Mutex // guards phase and err, and orders the writes to w
	phase string
	err   error

	done, stopped chan struct{}
}

// runtime/metrics names the trace reads.
const (
	heapObjects = "/memory/classes/heap/objects:bytes"
	heapFree    = "/memory/classes/heap/free:bytes"
	heapTotal   = "/memory/classes/total:bytes"
	heapRelease = "/memory/classes/heap/released:bytes"
	heapUnused  = "/memory/classes/heap/unused:bytes"
	gcGoal      = "/gc/heap/goal:bytes"
)

// startMemtrace appends samples to the file at path, which the parent
// created with the header, from now until stop.
func startMemtrace(path, engine, workload string, memory func() engineMemory) (*memtrace, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	t := &memtrace{
		w: f, engine: engine, workload: workload, memory: memory, start: time.Now(), phase: "ops",
		done: make(chan struct{}), stopped: make(chan struct{}),
	}
	for _, name := range []string{heapObjects, heapFree, heapTotal, heapRelease, heapUnused, gcGoal} {
		t.samples = append(t.samples, metrics.Sample{Name: name})
	}
	t.sample() // the first one before the workload starts
	go t.run()
	return t, nil
}

// setPhase labels the samples from now on.
func (t *memtrace) setPhase(phase string) {
	t.mu.Lock()
	t.phase = phase
	t.mu.Unlock()
}

func (t *memtrace) run() {
	defer close(t.stopped)
	tick := time.NewTicker(memtraceEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
			t.sample()
		}
	}
}

// stop takes a last sample, stops sampling and closes the file; it returns
// the first error the trace met.
func (t *memtrace) stop() error {
	close(t.done)
	<-t.stopped
	t.sample()
	if err := t.w.Close(); t.err == nil {
		t.err = err
	}
	return t.err
}

// sample writes one line; the first error is kept for stop and ends the
// writing.
func (t *memtrace) sample() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	status, err := procstat.Status("VmRSS", "RssAnon", "RssFile")
	if err != nil {
		t.err = err
		return
	}
	metrics.Read(t.samples)
	v := make(map[string]int64, len(t.samples))
	for _, s := range t.samples {
		v[s.Name] = int64(s.Value.Uint64())
	}
	// What the runtime has mapped and not released, less the heap's part.
	goOther := v[heapTotal] - v[heapRelease] - v[heapObjects] - v[heapFree] - v[heapUnused]
	fields := []string{t.engine, t.workload, t.phase, fmt.Sprintf("%.1f", time.Since(t.start).Seconds())}
	for _, b := range []int64{status[0], status[1], status[2], v[heapObjects], v[heapFree] + v[heapUnused], goOther, v[gcGoal]} {
		fields = append(fields, mib(b))
	}
	if t.memory != nil {
		m := t.memory()
		for _, b := range []int64{m.OffHeap, m.Filters, m.Indexes, m.MemTables, m.MemTableFilters, m.BlockCache} {
			fields = append(fields, mib(b))
		}
	} else {
		fields = append(fields, "", "", "", "", "", "")
	}
	_, t.err = io.WriteString(t.w, strings.Join(fields, ",")+"\n")
}

func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 2, 64) }
