package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/shale-db/shale"
)

func cmdSeed(sh *shell, args []string, _ map[string]string) error {
	n, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil {
		return fmt.Errorf("usage: seed N (N a non-negative integer, not %s)", shale.FormatKey([]byte(args[0])))
	}
	sh.rng = rand.New(rand.NewPCG(n, 0))
	fmt.Fprintf(sh.out, "load and lookups now draw from seed %d: the same commands write and read the same keys in every session\n", n)
	return nil
}

// absentKeyLen is the length of the keys lookups makes up: 16 random
// letters and digits, load's default, then a '~', which load never writes.
const absentKeyLen = 17

func cmdLookups(sh *shell, args []string, _ map[string]string) error {
	n, err := parseInt("N", args[0], 1)
	if err != nil {
		return err
	}
	if n > maxFilterItems {
		return fmt.Errorf("N: at most %d", maxFilterItems)
	}
	before := sh.db.Metrics()
	key := make([]byte, absentKeyLen)
	found := 0
	for i := range n {
		if err := sh.interrupted("lookups stopped after %s", plural(i, "lookup")); err != nil {
			return err
		}
		sh.randomize(key[:absentKeyLen-1])
		key[absentKeyLen-1] = '~'
		_, err := sh.db.Get(key)
		switch {
		case err == nil:
			found++
		case !errors.Is(err, shale.ErrNotFound):
			return err
		}
	}
	after := sh.db.Metrics()
	disk := after.DiskReads - before.DiskReads
	cached := after.BlockCacheHits - before.BlockCacheHits
	fmt.Fprintf(sh.out, "%s of keys never written: %.3f blocks read per lookup (%d from disk, %d from the block cache)\n",
		plural(n, "lookup"), float64(disk+cached)/float64(n), disk, cached)
	fmt.Fprintf(sh.out, "filters: %d checked, %d skipped, %s; %s of filters in memory\n", after.FilterChecks-before.FilterChecks,
		after.FilterSkips-before.FilterSkips, plural(int(after.FilterFalsePositives-before.FilterFalsePositives), "false positive"),
		plural(int(after.FilterMemory), "byte"))
	if found > 0 {
		fmt.Fprintf(sh.out, "(%d of the keys were in the store after all: someone wrote keys ending in ~)\n", found)
	}
	return nil
}
