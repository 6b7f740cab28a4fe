package filtertest

import "testing"

// CPUTimer measures the CPU time of a benchmark's loop on its own thread,
// which, unlike the wall-clock ns/op, leaves out the time the thread
// waits for a core: on a shared machine with more runnable threads than
// cores, ns/op counts other processes' turns. Cache misses caused by the
// others still count. Use:
//
//	t := filtertest.StartCPU()
//	for b.Loop() { ... }
//	t.Report(b, ops)
//
// Report adds "cpu-ns/op" on Linux and nothing elsewhere.
type CPUTimer struct {
	start int64
	ok    bool
}

// StartCPU locks the goroutine to its thread and starts the timer.
func StartCPU() CPUTimer {
	lockThread()
	d, ok := threadCPU()
	return CPUTimer{start: int64(d), ok: ok}
}

// Report stops the timer, unlocks the thread and reports the CPU time over
// ops operations as "cpu-ns/op".
func (t CPUTimer) Report(b *testing.B, ops int) {
	d, ok := threadCPU()
	unlockThread()
	if t.ok && ok && ops > 0 {
		b.ReportMetric(float64(int64(d)-t.start)/float64(ops), "cpu-ns/op")
	}
}
