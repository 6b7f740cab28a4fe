package filtertest

import (
	"runtime"
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// threadCPU returns the CPU time the calling thread has used.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// lockThread and unlockThread keep the measured goroutine on one thread.
func lockThread()   { runtime.LockOSThread() }
func unlockThread() { runtime.UnlockOSThread() }
