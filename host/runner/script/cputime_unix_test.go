//go:build unix

package script_test

import (
	"syscall"
	"time"
)

// cpuTime is the user+system CPU time of this process and of its
// children that have been waited for: the whole cost of a call wherever
// it is spent (the host's set-up, the kernel's namespace creation, the
// child), and far less sensitive than wall time to other load on a
// shared machine.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}
