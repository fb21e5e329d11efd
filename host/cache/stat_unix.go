//go:build unix

package cache

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// accessTime returns fi's last access time, when the system records it.
func accessTime(fi fs.FileInfo) (time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	ts := atime(st)
	return time.Unix(ts.Unix()), true
}

// checkOwner checks that the current user owns the folder dir (described
// by fi) and that neither group nor others may write to it.
func checkOwner(dir string, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("cache folder %s belongs to uid %d, not to the current user (uid %d); choose another with --cache-dir", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("cache folder %s is writable by group or others (mode %04o); run chmod 700 on it or choose another with --cache-dir", dir, fi.Mode().Perm())
	}
	return nil
}
