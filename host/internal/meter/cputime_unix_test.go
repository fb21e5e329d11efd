//go:build unix

package meter_test

import "syscall"

// cpuTime returns the process's user and system CPU time in
// nanoseconds. On a shared machine it is a steadier measure of a guest run
// than wall time, which includes the time other processes held the CPU.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// threadCPUTime returns the CPU time of the calling OS thread in
// nanoseconds (lock the goroutine to its thread first).
func threadCPUTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
