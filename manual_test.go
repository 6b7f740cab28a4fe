package shale

import "github.com/shale-db/shale/internal/manual"

// Every test of the package runs with freed manual memory inaccessible, so
// that a use of a closed table's filter or index crashes the test binary
// instead of reading whatever the kernel put there.
func init() { manual.CheckUseAfterFree() }
