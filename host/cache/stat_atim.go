//go:build linux || openbsd || solaris || illumos || aix

package cache

import (
	"io/fs"
	"syscall"
	"time"
)

// accessTime returns fi's last access time, when the system records it.
func accessTime(fi fs.FileInfo) (time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(int64(st.Atim.Sec), int64(st.Atim.Nsec)), true
}
