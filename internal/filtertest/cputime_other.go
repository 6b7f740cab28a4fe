//go:build !linux

package filtertest

import "time"

// threadCPU is not available here.
func threadCPU() (time.Duration, bool) { return 0, false }

func lockThread()   {}
func unlockThread() {}
