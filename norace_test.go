//go:build !race

package shale

// raceEnabled reports whether the race detector is on; its runtime
// allocates on its own, so allocation budgets are not checked under it.
const raceEnabled = false
