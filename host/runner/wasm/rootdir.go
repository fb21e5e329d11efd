package wasm

import (
	iofs "io/fs"
	"sync"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agenthost/agenthost/host/internal/sandboxfs"
)

// A pooled instance's descriptor table outlives its calls, and wazero
// opens each preopen's directory lazily, the first time a path is
// resolved against it, then keeps that handle for the instance's life.
// Counted like any other file it would look like a file the call left
// open; kept as it is it would point at the first call's mount (a /tmp
// that is gone, a workspace folder of that call).
//
// So a mount's root directory (".") is opened as a rootDir: a handle that
// belongs to the instance, not to a call. Between calls it holds no host
// descriptor; in a call it opens the call's own root on first use. A
// guest that keeps a root handle open across calls therefore sees only
// the current call's root, as a fresh instance's preopen would. Only a
// bounded number may stay open: wazero's own one per preopen, and as many
// again kept by the guest; more and the instance is discarded.

// rootDirs is the set of root handles of one pooled instance.
type rootDirs struct {
	// mu guards open and every handle's set and f. The instance's calls
	// use the handles one at a time, but a host closing while its pools
	// close closes the instance's module (which closes its handles) and
	// discards the instance (which releases them) on two goroutines.
	mu   sync.Mutex
	open map[*rootDir]struct{}
}

// release closes every root handle's host descriptor at the end of a
// call; the next call reopens on first use.
func (r *rootDirs) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for d := range r.open {
		if d.f != nil {
			_ = d.f.Close()
			d.f = nil
		}
	}
}

// count returns how many root handles are open.
func (r *rootDirs) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.open)
}

// rootDir is one root handle (see the file comment).
type rootDir struct {
	// File provides Seek, forwarding to seek (sandboxfs.NewSeeker);
	// every other method is rootDir's own.
	experimentalsys.File

	fs   experimentalsys.FS
	flag experimentalsys.Oflag
	perm iofs.FileMode
	mu   *sync.Mutex          // the set's
	set  *rootDirs            // nil once closed
	f    experimentalsys.File // nil between calls
	// isDir is the first open's answer: wazero asks it of every preopen
	// at each path resolution and fd_prestat_get, which must not reopen
	// the folder (or make a /tmp) each call.
	isDir bool
}

// openRootDir opens a mount's root for an instance: at once, so the
// opener sees the error of a root that cannot be opened.
func openRootDir(fs experimentalsys.FS, flag experimentalsys.Oflag, perm iofs.FileMode, set *rootDirs) (*rootDir, experimentalsys.Errno) {
	f, errno := fs.OpenFile(".", flag, perm)
	if errno != 0 {
		return nil, errno
	}
	isDir, errno := f.IsDir()
	if errno != 0 {
		_ = f.Close()
		return nil, errno
	}
	d := &rootDir{fs: fs, flag: flag, perm: perm, mu: &set.mu, set: set, f: f, isDir: isDir}
	if d.File, errno = sandboxfs.NewSeeker(d.seek); errno != 0 {
		_ = f.Close()
		return nil, errno
	}
	set.mu.Lock()
	set.open[d] = struct{}{}
	set.mu.Unlock()
	return d, 0
}

// file returns the host directory of the current call, opening it on
// first use in a call.
func (d *rootDir) file() (experimentalsys.File, experimentalsys.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		if d.set == nil {
			return nil, experimentalsys.EBADF // closed
		}
		f, errno := d.fs.OpenFile(".", d.flag, d.perm)
		if errno != 0 {
			return nil, errno
		}
		d.f = f
	}
	return d.f, 0
}

// Close implements experimentalsys.File.
func (d *rootDir) Close() experimentalsys.Errno {
	d.mu.Lock()
	if d.set == nil {
		d.mu.Unlock()
		return 0
	}
	delete(d.set.open, d)
	d.set = nil
	f := d.f
	d.f = nil
	d.mu.Unlock()
	if f == nil {
		return 0
	}
	return f.Close()
}

// Dev implements experimentalsys.File.
func (d *rootDir) Dev() (uint64, experimentalsys.Errno) {
	f, errno := d.file()
	if errno != 0 {
		return 0, errno
	}
	return f.Dev()
}

// Ino implements experimentalsys.File.
func (d *rootDir) Ino() (sys.Inode, experimentalsys.Errno) {
	f, errno := d.file()
	if errno != 0 {
		return 0, errno
	}
	return f.Ino()
}

// IsDir implements experimentalsys.File.
func (d *rootDir) IsDir() (bool, experimentalsys.Errno) {
	d.mu.Lock()
	closed := d.set == nil
	d.mu.Unlock()
	if closed {
		return false, experimentalsys.EBADF
	}
	return d.isDir, 0
}

// IsAppend implements experimentalsys.File.
func (d *rootDir) IsAppend() bool {
	f, errno := d.file()
	return errno == 0 && f.IsAppend()
}

// SetAppend implements experimentalsys.File.
func (d *rootDir) SetAppend(enable bool) experimentalsys.Errno {
	f, errno := d.file()
	if errno != 0 {
		return errno
	}
	return f.SetAppend(enable)
}

// Stat implements experimentalsys.File.
func (d *rootDir) Stat() (sys.Stat_t, experimentalsys.Errno) {
	f, errno := d.file()
	if errno != 0 {
		return sys.Stat_t{}, errno
	}
	return f.Stat()
}

// Read implements experimentalsys.File.
func (d *rootDir) Read(buf []byte) (int, experimentalsys.Errno) {
	f, errno := d.file()
	if errno != 0 {
		return 0, errno
	}
	return f.Read(buf)
}

// Pread implements experimentalsys.File.
func (d *rootDir) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	f, errno := d.file()
	if errno != 0 {
		return 0, errno
	}
	return f.Pread(buf, off)
}

// seek is the handle's Seek (see File).
func (d *rootDir) seek(offset int64, whence int) (int64, error) {
	f, errno := d.file()
	if errno != 0 {
		return 0, errno
	}
	off, errno := f.Seek(offset, whence)
	if errno != 0 {
		return off, errno
	}
	return off, nil
}

// Readdir implements experimentalsys.File.
func (d *rootDir) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	f, errno := d.file()
	if errno != 0 {
		return nil, errno
	}
	return f.Readdir(n)
}

// Write implements experimentalsys.File.
func (d *rootDir) Write(buf []byte) (int, experimentalsys.Errno) {
	f, errno := d.file()
	if errno != 0 {
		return 0, errno
	}
	return f.Write(buf)
}

// Pwrite implements experimentalsys.File.
func (d *rootDir) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	f, errno := d.file()
	if errno != 0 {
		return 0, errno
	}
	return f.Pwrite(buf, off)
}

// Truncate implements experimentalsys.File.
func (d *rootDir) Truncate(size int64) experimentalsys.Errno {
	f, errno := d.file()
	if errno != 0 {
		return errno
	}
	return f.Truncate(size)
}

// Sync implements experimentalsys.File.
func (d *rootDir) Sync() experimentalsys.Errno {
	f, errno := d.file()
	if errno != 0 {
		return errno
	}
	return f.Sync()
}

// Datasync implements experimentalsys.File.
func (d *rootDir) Datasync() experimentalsys.Errno {
	f, errno := d.file()
	if errno != 0 {
		return errno
	}
	return f.Datasync()
}

// Utimens implements experimentalsys.File.
func (d *rootDir) Utimens(atim, mtim int64) experimentalsys.Errno {
	f, errno := d.file()
	if errno != 0 {
		return errno
	}
	return f.Utimens(atim, mtim)
}

// Interface guard
var _ experimentalsys.File = (*rootDir)(nil)
