//go:build linux

package manifest

import (
	"os"
	"syscall"
)

// fileID identifies a file's content for fileDigests: the same device and
// inode, size, modification and status-change times. Any write changes
// the status-change time, which no unprivileged call can set back, so an
// unchanged fileID means unchanged content. (The runner still hashes the
// bytes it runs, and checks them against the manifest's pin.)
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

// fileIdentity returns f's fileID; false when it cannot be read.
func fileIdentity(f *os.File) (fileID, bool) {
	fi, err := f.Stat()
	if err != nil {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{
		dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}, true
}
