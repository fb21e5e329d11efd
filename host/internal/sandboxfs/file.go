package sandboxfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// file is an open file or directory of an FS. Reads and writes were
// checked when it was opened (the host file is opened with only the
// access that was granted); directory listings are checked and filtered
// entry by entry.
type file struct {
	// seeker provides Seek, forwarding to seekTo: see seeker.go.
	experimentalsys.File

	fs     *FS
	f      *os.File
	rel    string // canonical mount-relative path
	guest  string // the path the guest opened, for refusal lines
	isDir  bool
	append bool

	// dirents holds the filtered listing of a directory, loaded on the
	// first Readdir and served in chunks; nil until then.
	dirents []experimentalsys.Dirent
	direntN int
}

// Dev implements experimentalsys.File.
func (f *file) Dev() (uint64, experimentalsys.Errno) {
	st, errno := f.Stat()
	return st.Dev, errno
}

// Ino implements experimentalsys.File.
func (f *file) Ino() (sys.Inode, experimentalsys.Errno) {
	st, errno := f.Stat()
	return st.Ino, errno
}

// IsDir implements experimentalsys.File.
func (f *file) IsDir() (bool, experimentalsys.Errno) { return f.isDir, 0 }

// IsAppend implements experimentalsys.File.
func (f *file) IsAppend() bool { return f.append }

// SetAppend implements experimentalsys.File. Changing the append mode of
// an open file (fd_fdstat_set_flags) is not supported; open with
// O_APPEND instead.
func (f *file) SetAppend(bool) experimentalsys.Errno { return experimentalsys.ENOSYS }

// Stat implements experimentalsys.File.
func (f *file) Stat() (sys.Stat_t, experimentalsys.Errno) {
	fi, err := f.f.Stat()
	if err != nil {
		return sys.Stat_t{}, experimentalsys.UnwrapOSError(err)
	}
	return sys.NewStat_t(fi), 0
}

// Read implements experimentalsys.File.
func (f *file) Read(buf []byte) (int, experimentalsys.Errno) {
	if f.isDir {
		return 0, experimentalsys.EISDIR
	}
	n, err := f.f.Read(buf)
	return n, ioErrno(err)
}

// Pread implements experimentalsys.File.
func (f *file) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	if f.isDir {
		return 0, experimentalsys.EISDIR
	}
	n, err := f.f.ReadAt(buf, off)
	return n, ioErrno(err)
}

// seekTo is the Seek of the file. On a directory only a seek to the
// start is supported; it restarts the listing.
func (f *file) seekTo(offset int64, whence int) (int64, error) {
	if f.isDir {
		if offset != 0 || whence != io.SeekStart {
			return 0, syscall.EISDIR
		}
		f.dirents, f.direntN = nil, 0
		return 0, nil
	}
	return f.f.Seek(offset, whence)
}

// Readdir implements experimentalsys.File. The directory must be listable
// under the grant, and only entries the guest may see are returned.
func (f *file) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	if !f.isDir {
		return nil, experimentalsys.EBADF
	}
	if f.dirents == nil {
		if !f.fs.canList(f.rel) {
			return nil, f.fs.deny("list", f.guest, "read", "")
		}
		if _, err := f.f.Seek(0, io.SeekStart); err != nil {
			return nil, experimentalsys.UnwrapOSError(err)
		}
		entries, err := f.f.ReadDir(-1)
		if err != nil {
			return nil, experimentalsys.UnwrapOSError(err)
		}
		f.dirents = make([]experimentalsys.Dirent, 0, len(entries))
		for _, e := range entries {
			rel := e.Name()
			if f.rel != "." {
				rel = path.Join(f.rel, e.Name())
			}
			if !f.fs.visible(rel) {
				continue
			}
			f.dirents = append(f.dirents, experimentalsys.Dirent{Name: e.Name(), Type: e.Type()})
		}
	}
	return nextDirents(f.dirents, &f.direntN, n), 0
}

// nextDirents returns up to n (all when n <= 0) of the listing all from
// *pos on, and moves *pos past them.
func nextDirents(all []experimentalsys.Dirent, pos *int, n int) []experimentalsys.Dirent {
	rest := all[*pos:]
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	*pos += len(rest)
	return rest
}

// Write implements experimentalsys.File.
func (f *file) Write(buf []byte) (int, experimentalsys.Errno) {
	if f.isDir {
		return 0, experimentalsys.EISDIR
	}
	n, err := f.f.Write(buf)
	return n, experimentalsys.UnwrapOSError(err)
}

// Pwrite implements experimentalsys.File.
func (f *file) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if f.isDir {
		return 0, experimentalsys.EISDIR
	}
	n, err := f.f.WriteAt(buf, off)
	return n, experimentalsys.UnwrapOSError(err)
}

// Truncate implements experimentalsys.File. The file was opened for
// writing only if the grant allows it; a read-only handle fails in the OS.
func (f *file) Truncate(size int64) experimentalsys.Errno {
	if f.isDir {
		return experimentalsys.EISDIR
	}
	return experimentalsys.UnwrapOSError(f.f.Truncate(size))
}

// Sync implements experimentalsys.File.
func (f *file) Sync() experimentalsys.Errno {
	if f.isDir {
		return 0
	}
	return experimentalsys.UnwrapOSError(f.f.Sync())
}

// Datasync implements experimentalsys.File.
func (f *file) Datasync() experimentalsys.Errno { return f.Sync() }

// Utimens implements experimentalsys.File: changing the times of an open
// file needs the write grant.
func (f *file) Utimens(atim, mtim int64) experimentalsys.Errno {
	if f.rel == "." || !f.fs.allows(f.rel, true) {
		return f.fs.deny("utimes", f.guest, "write", "")
	}
	root, errno := f.fs.open()
	if errno != 0 {
		return errno
	}
	return chtimes(root, f.rel, atim, mtim)
}

// Close implements experimentalsys.File.
func (f *file) Close() experimentalsys.Errno {
	err := f.f.Close()
	if errors.Is(err, os.ErrClosed) {
		return 0
	}
	return experimentalsys.UnwrapOSError(err)
}

// ioErrno maps a read error: io.EOF is not an error for WASI.
func ioErrno(err error) experimentalsys.Errno {
	if err == nil || errors.Is(err, io.EOF) {
		return 0
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return experimentalsys.UnwrapOSError(pe)
	}
	return experimentalsys.UnwrapOSError(err)
}

// Interface guards
var _ experimentalsys.File = (*file)(nil)
