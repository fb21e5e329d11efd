//go:build linux || openbsd || solaris || illumos || aix

package cache

import "syscall"

// atime is st's last access time.
func atime(st *syscall.Stat_t) syscall.Timespec { return st.Atim }
