package filecache

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileIdentity names the file at path (fi its Lstat) on disk: its device
// and inode, and its change and modification times. A copy has another
// inode, a rename or an edit changes the change time, which no call can
// set back; so a file keeps its identity only while untouched, and
// checking it costs no read of a compiled file of several MiB.
func fileIdentity(_ string, fi fs.FileInfo) (string, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("dev %d ino %d ctime %d.%09d mtime %d.%09d", st.Dev, st.Ino, st.Ctim.Sec, st.Ctim.Nsec, st.Mtim.Sec, st.Mtim.Nsec), true
}
