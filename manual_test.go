package shale

import "github.com/shale-db/shale/internal/manual"

// Every test runs with freed manual memory (memtables, pinned table blocks)
// made inaccessible, so that a read after its Free crashes the test binary
// instead of passing.
func init() { manual.CheckUseAfterFree() }
