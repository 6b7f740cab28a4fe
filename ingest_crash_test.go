package shale

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/shale-db/shale/vfs"
)

// TestIngestCrash simulates a power loss before every file-system
// operation of an Ingest (the flush of the memtable it starts with, the
// copies, the MANIFEST edit), under each crash model and WAL mode. Each
// crashed store must open, hold either everything it held before with
// none of the ingested tables' entries or all of them, and pass Check.
// After Ingest returns, every crash must hold all of them.
func TestIngestCrash(t *testing.T) {
	for _, wal := range walModes {
		t.Run("wal="+wal.name, func(t *testing.T) { ingestCrashCampaign(t, wal) })
	}
}

func ingestCrashCampaign(t *testing.T, wal walMode) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	// No background compaction: the crash points are the Ingest's alone
	// (the flush it waits for included).
	opts := campaignOptions(efs, false, wal)
	opts.DisableAutomaticCompactions = true
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	before := map[string]string{}
	put := func(k, v string) {
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		before[k] = v
	}
	for i := range 300 {
		put(fmt.Sprintf("k%03d", i), fmt.Sprintf("old%d-%040d", i, i))
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i += 7 {
		put(fmt.Sprintf("k%03d", i), "memtable") // the Ingest flushes these first
	}
	// Two tables: one over keys the store holds (puts, deletes and a range
	// deletion), one past them.
	var over, past []tableOp
	for i := 100; i < 200; i++ {
		if i%5 == 0 {
			over = append(over, tableOp{key: fmt.Sprintf("k%03d", i), del: true})
		} else {
			over = append(over, tableOp{key: fmt.Sprintf("k%03d", i), value: fmt.Sprintf("ingested%d", i)})
		}
	}
	over = append(over, tableOp{key: "k050", end: "k100"})
	for i := range 200 {
		past = append(past, tableOp{key: fmt.Sprintf("z%03d", i), value: fmt.Sprintf("ingested-past%d", i)})
	}
	writeTable(t, opts, "over.sst", over...)
	writeTable(t, opts, "past.sst", past...)
	after := maps.Clone(before)
	applyTableOps(after, over)
	applyTableOps(after, past)

	fails := newFailures()
	var points, tried, all, none int
	check := func(c *vfs.MemFS, where string, mustAll bool) {
		tried++
		copts := campaignOptions(c, false, wal)
		cdb, err := Open("db", copts)
		if err != nil {
			fails.add("open: "+err.Error(), where)
			return
		}
		got, err := scanAll(cdb)
		if err := errors.Join(err, cdb.Close()); err != nil {
			fails.add(err.Error(), where)
			return
		}
		switch {
		case maps.Equal(got, after):
			all++
		case mustAll:
			fails.add("the Ingest returned, but the store does not hold all of it", where)
		case maps.Equal(got, before):
			none++
		default:
			fails.add(fmt.Sprintf("the store holds %d keys, neither the %d from before the Ingest nor the %d after", len(got), len(before), len(after)), where)
		}
		if err := Check("db", copts); err != nil {
			fails.add("Check: "+err.Error(), where)
		}
	}
	efs.SetInjector(func(op vfs.Op, path string) error {
		if !mutates(op) {
			return nil
		}
		p := points
		points++
		for _, model := range crashModels {
			c := mem.CrashCloneWith(vfs.CrashOptions{Mode: model.mode, Seed: uint64(p)})
			check(c, fmt.Sprintf("crash point %d (before %v %s), model %s", p, op, path, model.name), false)
		}
		return nil
	})
	err = db.Ingest([]string{"over.sst", "past.sst"})
	efs.SetInjector(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range crashModels {
		check(mem.CrashCloneWith(vfs.CrashOptions{Mode: model.mode, Seed: 1}), "after Ingest returned, model "+model.name, true)
	}
	if none == 0 || all < len(crashModels) {
		t.Errorf("%d crashed stores held none of the Ingest and %d all of it; want some of each", none, all)
	}
	fails.report(t, fmt.Sprintf("%d crash points, %d crashed stores checked: %d with none of the Ingest, %d with all", points, tried, none, all))
}

// scanAll returns every key and value of db.
func scanAll(db *DB) (map[string]string, error) {
	got := map[string]string{}
	it := db.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	return got, it.Close()
}
