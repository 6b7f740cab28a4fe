package shale

import "github.com/shale-db/shale/internal/manual"

// Every test of the package runs with freed manual memory (memtables, the
// filters and indexes of closed tables) made inaccessible, so that a use
// after Free crashes the test binary instead of reading whatever the kernel
// put there.
func init() { manual.CheckUseAfterFree() }
