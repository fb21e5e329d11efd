//go:build unix

package cputime

import (
	"runtime"
	"syscall"
	"time"
)

func read(w who) time.Duration {
	var which int
	switch w {
	case self:
		which = syscall.RUSAGE_SELF
	case children:
		which = syscall.RUSAGE_CHILDREN
	case thread:
		if runtime.GOOS != "linux" {
			return 0
		}
		which = 1 // RUSAGE_THREAD, Linux only
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(which, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
