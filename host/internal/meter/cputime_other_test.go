//go:build !unix

package meter_test

// cpuTime is 0 where getrusage(2) does not exist: the CPU metrics read 0.
func cpuTime() int64 { return 0 }

// threadCPUTime is 0 where getrusage(2) does not exist.
func threadCPUTime() int64 { return 0 }
