package sandboxfs

import (
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// memTmp is the file system of a Temp mount: folders and regular files in
// the host's memory, for one call. Nothing of it touches the host's disk,
// so making and removing a call's /tmp costs nothing, and a guest cannot
// fill the disk through it: the bytes of its files and a fixed cost per
// entry (nodeCost) count against limit. A write or a new entry past it
// fails with EIO (wazero's file layer has no ENOSPC) and, the first time,
// full reports it. There are no symbolic or hard links (EPERM), so paths
// resolve lexically and ".." at the top stays there, as at "/". The top
// itself cannot be removed or renamed (EINVAL).
//
// Permissions are those of a non-root owner: opening a file for reading
// or writing needs the owner's read or write bit, and making, removing or
// renaming an entry needs the folder's write bit.
type memTmp struct {
	experimentalsys.UnimplementedFS

	mu      sync.Mutex
	root    *memNode
	used    int64 // bytes charged: file contents and nodeCost per entry
	limit   int64
	nextIno uint64
	closed  bool // every operation of the mount fails with EBADF
	// full is told the first time the limit refuses something.
	full     func()
	reported bool
}

// errFull is the error of a write past the limit.
const errFull = experimentalsys.EIO

// nodeCost is what one file or folder is charged besides its content: a
// bound on how many entries a guest can make.
const nodeCost = 256

// memNode is a file or a folder of a memTmp.
type memNode struct {
	ino     uint64
	mode    fs.FileMode // fs.ModeDir or 0, and the permission bits
	data    []byte      // a file's content
	kids    map[string]*memNode
	nlink   uint64 // 0 once removed
	open    int    // handles open on it
	charged int64  // what it is charged now (nodeCost + len(data))
	atim    int64
	mtim    int64
	ctim    int64
}

// newMemTmp returns an empty memTmp whose entries may hold limit bytes;
// full, when not nil, is told the first time the limit refuses something.
func newMemTmp(limit int64, full func()) *memTmp {
	m := &memTmp{limit: limit, full: full}
	m.root = m.node(fs.ModeDir | 0o700)
	m.root.charged, m.used = nodeCost, nodeCost // the top counts like any folder
	return m
}

// lock locks m, or fails with EBADF once m is closed.
func (m *memTmp) lock() experimentalsys.Errno {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return experimentalsys.EBADF
	}
	return 0
}

// close makes every later operation fail and drops the files (open
// files keep what they hold until they are closed).
func (m *memTmp) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.root = nil
}

// node returns a new node (not yet charged).
func (m *memTmp) node(mode fs.FileMode) *memNode {
	m.nextIno++
	now := time.Now().UnixNano()
	n := &memNode{ino: m.nextIno, mode: mode, nlink: 1, atim: now, mtim: now, ctim: now}
	if mode.IsDir() {
		n.kids = map[string]*memNode{}
	}
	return n
}

// charge adds delta bytes to what the mount holds; false (and no change)
// when that would pass the limit.
func (m *memTmp) charge(n *memNode, delta int64) bool {
	if delta > 0 && m.used+delta > m.limit {
		m.refused()
		return false
	}
	m.used += delta
	n.charged += delta
	return true
}

// refused reports the limit's first refusal.
func (m *memTmp) refused() {
	if !m.reported && m.full != nil {
		m.reported = true
		m.full()
	}
}

// release frees what a node that is gone (removed and closed) held.
func (m *memTmp) release(n *memNode) {
	if n.nlink == 0 && n.open == 0 && n.charged > 0 {
		m.used -= n.charged
		n.charged = 0
		n.data = nil
	}
}

// split cleans p (relative to the mount) and returns its folder names
// and last name; last is "" for the mount's top.
func split(p string) (dirs []string, last string) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		return nil, ""
	}
	parts := strings.Split(p, "/")
	return parts[:len(parts)-1], parts[len(parts)-1]
}

// maxName is the longest name of an entry, as on Linux file systems
// (NAME_MAX): names are not charged, so their length is bounded.
const maxName = 255

// parent returns the folder that holds p's last name, and that name.
func (m *memTmp) parent(p string) (*memNode, string, experimentalsys.Errno) {
	dirs, last := split(p)
	if len(last) > maxName {
		return nil, "", experimentalsys.ENAMETOOLONG
	}
	d := m.root
	for _, name := range dirs {
		if len(name) > maxName {
			return nil, "", experimentalsys.ENAMETOOLONG
		}
		next, ok := d.kids[name]
		if !ok {
			return nil, "", experimentalsys.ENOENT
		}
		if !next.mode.IsDir() {
			return nil, "", experimentalsys.ENOTDIR
		}
		d = next
	}
	return d, last, 0
}

// lookup returns the node at p.
func (m *memTmp) lookup(p string) (*memNode, experimentalsys.Errno) {
	d, last, errno := m.parent(p)
	if errno != 0 {
		return nil, errno
	}
	if last == "" {
		return d, 0
	}
	n, ok := d.kids[last]
	if !ok {
		return nil, experimentalsys.ENOENT
	}
	return n, 0
}

// changeable looks up the folder that holds p's last name for a change
// of its entries: the folder must be writable, and p must not be the top.
func (m *memTmp) changeable(p string) (*memNode, string, experimentalsys.Errno) {
	d, last, errno := m.parent(p)
	switch {
	case errno != 0:
		return nil, "", errno
	case last == "":
		return nil, "", experimentalsys.EINVAL
	case d.mode&0o200 == 0:
		return nil, "", experimentalsys.EACCES
	}
	return d, last, 0
}

// existing is changeable for an entry that must exist: it also returns
// the entry (ENOENT when there is none).
func (m *memTmp) existing(p string) (d *memNode, name string, n *memNode, errno experimentalsys.Errno) {
	if d, name, errno = m.changeable(p); errno != 0 {
		return nil, "", nil, errno
	}
	n, ok := d.kids[name]
	if !ok {
		return nil, "", nil, experimentalsys.ENOENT
	}
	return d, name, n, 0
}

// touch marks a folder's entries changed.
func touch(d *memNode) {
	now := time.Now().UnixNano()
	d.mtim, d.ctim = now, now
}

// OpenFile implements experimentalsys.FS.
func (m *memTmp) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if errno := m.lock(); errno != 0 {
		return nil, errno
	}
	defer m.mu.Unlock()
	access := flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY)
	read := access != experimentalsys.O_WRONLY
	write := access != experimentalsys.O_RDONLY
	d, last, errno := m.parent(p)
	if errno != 0 {
		return nil, errno
	}
	n := d
	if last != "" {
		n = d.kids[last]
	}
	switch {
	case n == nil && flag&experimentalsys.O_CREAT == 0:
		return nil, experimentalsys.ENOENT
	case n == nil:
		if flag&experimentalsys.O_DIRECTORY != 0 {
			return nil, experimentalsys.EINVAL
		}
		if d.mode&0o200 == 0 {
			return nil, experimentalsys.EACCES
		}
		n = m.node(perm.Perm())
		if !m.charge(n, nodeCost) {
			return nil, errFull
		}
		d.kids[last] = n
		touch(d)
	case flag&(experimentalsys.O_CREAT|experimentalsys.O_EXCL) == experimentalsys.O_CREAT|experimentalsys.O_EXCL:
		return nil, experimentalsys.EEXIST
	case flag&experimentalsys.O_DIRECTORY != 0 && !n.mode.IsDir():
		return nil, experimentalsys.ENOTDIR
	case n.mode.IsDir() && write:
		return nil, experimentalsys.EISDIR
	case read && n.mode&0o400 == 0, write && n.mode&0o200 == 0:
		return nil, experimentalsys.EACCES
	case write && flag&experimentalsys.O_TRUNC != 0 && len(n.data) > 0:
		m.charge(n, -int64(len(n.data)))
		n.data = nil
		touch(n)
	}
	f := &memFile{m: m, n: n, read: read, write: write, append: flag&experimentalsys.O_APPEND != 0}
	if f.File, errno = NewSeeker(f.seekTo); errno != 0 {
		return nil, errno
	}
	n.open++
	return f, 0
}

// stat is the Stat_t of a node.
func (n *memNode) stat() sys.Stat_t {
	nlink := n.nlink
	if n.mode.IsDir() {
		nlink = 2
	}
	return sys.Stat_t{Ino: n.ino, Mode: n.mode, Nlink: nlink, Size: int64(len(n.data)), Atim: n.atim, Mtim: n.mtim, Ctim: n.ctim}
}

// Stat implements experimentalsys.FS.
func (m *memTmp) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	if errno := m.lock(); errno != 0 {
		return sys.Stat_t{}, errno
	}
	defer m.mu.Unlock()
	n, errno := m.lookup(p)
	if errno != 0 {
		return sys.Stat_t{}, errno
	}
	return n.stat(), 0
}

// Lstat implements experimentalsys.FS: there are no links, so it is Stat.
func (m *memTmp) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) { return m.Stat(p) }

// Mkdir implements experimentalsys.FS.
func (m *memTmp) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	if errno := m.lock(); errno != 0 {
		return errno
	}
	defer m.mu.Unlock()
	d, last, errno := m.changeable(p)
	if errno == experimentalsys.EINVAL { // the top
		return experimentalsys.EEXIST
	}
	if errno != 0 {
		return errno
	}
	if _, ok := d.kids[last]; ok {
		return experimentalsys.EEXIST
	}
	n := m.node(fs.ModeDir | perm.Perm())
	if !m.charge(n, nodeCost) {
		return errFull
	}
	d.kids[last] = n
	touch(d)
	return 0
}

// Chmod implements experimentalsys.FS.
func (m *memTmp) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if errno := m.lock(); errno != 0 {
		return errno
	}
	defer m.mu.Unlock()
	n, errno := m.lookup(p)
	if errno != 0 {
		return errno
	}
	n.mode = n.mode&fs.ModeType | perm.Perm()
	n.ctim = time.Now().UnixNano()
	return 0
}

// Rename implements experimentalsys.FS, with rename(2)'s rules for what
// may replace what.
func (m *memTmp) Rename(from, to string) experimentalsys.Errno {
	if errno := m.lock(); errno != 0 {
		return errno
	}
	defer m.mu.Unlock()
	fd, fname, n, errno := m.existing(from)
	if errno != 0 {
		return errno
	}
	td, tname, errno := m.changeable(to)
	if errno != 0 {
		return errno
	}
	if n.mode.IsDir() && inside(n, td) {
		return experimentalsys.EINVAL // into itself
	}
	old, exists := td.kids[tname]
	if exists {
		switch {
		case old == n:
			return 0
		case n.mode.IsDir() && !old.mode.IsDir():
			return experimentalsys.ENOTDIR
		case !n.mode.IsDir() && old.mode.IsDir():
			return experimentalsys.EISDIR
		case old.mode.IsDir() && len(old.kids) > 0:
			return experimentalsys.ENOTEMPTY
		}
		old.nlink = 0
		m.release(old)
	}
	delete(fd.kids, fname)
	td.kids[tname] = n
	touch(fd)
	touch(td)
	n.ctim = time.Now().UnixNano()
	return 0
}

// inside reports whether d is n or a folder under it.
func inside(n, d *memNode) bool {
	if d == n {
		return true
	}
	for _, k := range n.kids {
		if k.mode.IsDir() && inside(k, d) {
			return true
		}
	}
	return false
}

// Rmdir implements experimentalsys.FS.
func (m *memTmp) Rmdir(p string) experimentalsys.Errno { return m.remove(p, true) }

// Unlink implements experimentalsys.FS. A file still open keeps its
// content (and its charge) until it is closed.
func (m *memTmp) Unlink(p string) experimentalsys.Errno { return m.remove(p, false) }

// remove removes the empty folder (dir) or the file at p.
func (m *memTmp) remove(p string, dir bool) experimentalsys.Errno {
	if errno := m.lock(); errno != 0 {
		return errno
	}
	defer m.mu.Unlock()
	d, last, n, errno := m.existing(p)
	if errno != 0 {
		return errno
	}
	switch {
	case dir && !n.mode.IsDir():
		return experimentalsys.ENOTDIR
	case dir && len(n.kids) > 0:
		return experimentalsys.ENOTEMPTY
	case !dir && n.mode.IsDir():
		return experimentalsys.EISDIR
	}
	delete(d.kids, last)
	touch(d)
	n.nlink = 0
	m.release(n)
	return 0
}

// Link implements experimentalsys.FS: there are no hard links.
func (m *memTmp) Link(string, string) experimentalsys.Errno { return experimentalsys.EPERM }

// Symlink implements experimentalsys.FS: there are no symbolic links.
func (m *memTmp) Symlink(string, string) experimentalsys.Errno { return experimentalsys.EPERM }

// Readlink implements experimentalsys.FS: nothing is a link.
func (m *memTmp) Readlink(p string) (string, experimentalsys.Errno) {
	if _, errno := m.Stat(p); errno != 0 {
		return "", errno
	}
	return "", experimentalsys.EINVAL
}

// Utimens implements experimentalsys.FS.
func (m *memTmp) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if errno := m.lock(); errno != 0 {
		return errno
	}
	defer m.mu.Unlock()
	n, errno := m.lookup(p)
	if errno != 0 {
		return errno
	}
	n.setTimes(atim, mtim)
	return 0
}

// setTimes sets the times that are not UTIME_OMIT.
func (n *memNode) setTimes(atim, mtim int64) {
	if atim != experimentalsys.UTIME_OMIT {
		n.atim = atim
	}
	if mtim != experimentalsys.UTIME_OMIT {
		n.mtim = mtim
	}
	n.ctim = time.Now().UnixNano()
}

// memFile is an open file or folder of a memTmp.
type memFile struct {
	// File provides Seek, forwarding to seekTo (see seeker.go); memFile
	// shadows its other methods.
	experimentalsys.File

	m                   *memTmp
	n                   *memNode
	read, write, append bool
	off                 int64
	dirents             []experimentalsys.Dirent // a folder's listing, from its first Readdir
	direntN             int
	closed              bool
}

// Dev implements experimentalsys.File.
func (f *memFile) Dev() (uint64, experimentalsys.Errno) { return 0, 0 }

// Ino implements experimentalsys.File.
func (f *memFile) Ino() (sys.Inode, experimentalsys.Errno) { return f.n.ino, 0 }

// IsDir implements experimentalsys.File.
func (f *memFile) IsDir() (bool, experimentalsys.Errno) { return f.n.mode.IsDir(), 0 }

// IsAppend implements experimentalsys.File.
func (f *memFile) IsAppend() bool { return f.append }

// SetAppend implements experimentalsys.File.
func (f *memFile) SetAppend(enable bool) experimentalsys.Errno {
	f.append = enable
	return 0
}

// Stat implements experimentalsys.File.
func (f *memFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	return f.n.stat(), 0
}

// Read implements experimentalsys.File.
func (f *memFile) Read(buf []byte) (int, experimentalsys.Errno) {
	n, errno := f.Pread(buf, f.off)
	f.off += int64(n)
	return n, errno
}

// usable checks that f is a file open for reading (or writing) and off
// a place in it.
func (f *memFile) usable(write bool, off int64) experimentalsys.Errno {
	switch {
	case f.n.mode.IsDir():
		return experimentalsys.EISDIR
	case write && !f.write, !write && !f.read:
		return experimentalsys.EBADF
	case off < 0:
		return experimentalsys.EINVAL
	}
	return 0
}

// Pread implements experimentalsys.File.
func (f *memFile) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	if errno := f.usable(false, off); errno != 0 {
		return 0, errno
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if off >= int64(len(f.n.data)) {
		return 0, 0
	}
	return copy(buf, f.n.data[off:]), 0
}

// seekTo is the file's Seek. On a folder only a seek to the start is
// supported; it restarts the listing.
func (f *memFile) seekTo(offset int64, whence int) (int64, error) {
	if f.n.mode.IsDir() {
		if offset != 0 || whence != io.SeekStart {
			return 0, experimentalsys.EISDIR
		}
		f.dirents, f.direntN = nil, 0
		return 0, nil
	}
	f.m.mu.Lock()
	size := int64(len(f.n.data))
	f.m.mu.Unlock()
	base := int64(0)
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = f.off
	case io.SeekEnd:
		base = size
	default:
		return 0, experimentalsys.EINVAL
	}
	if offset < 0 && base+offset < 0 || offset > 0 && base+offset < base {
		return 0, experimentalsys.EINVAL
	}
	f.off = base + offset
	return f.off, nil
}

// Readdir implements experimentalsys.File: the entries in name order, as
// they were at the first Readdir after the open or the last rewind.
func (f *memFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	if !f.n.mode.IsDir() {
		return nil, experimentalsys.EBADF
	}
	if f.dirents == nil {
		f.m.mu.Lock()
		names := make([]string, 0, len(f.n.kids))
		for name := range f.n.kids {
			names = append(names, name)
		}
		slices.Sort(names)
		f.dirents = make([]experimentalsys.Dirent, len(names))
		for i, name := range names {
			k := f.n.kids[name]
			f.dirents[i] = experimentalsys.Dirent{Ino: k.ino, Name: name, Type: k.mode.Type()}
		}
		f.m.mu.Unlock()
	}
	return nextDirents(f.dirents, &f.direntN, n), 0
}

// Write implements experimentalsys.File.
func (f *memFile) Write(buf []byte) (int, experimentalsys.Errno) {
	if f.append {
		f.m.mu.Lock()
		f.off = int64(len(f.n.data))
		f.m.mu.Unlock()
	}
	n, errno := f.Pwrite(buf, f.off)
	f.off += int64(n)
	return n, errno
}

// Pwrite implements experimentalsys.File. A write that would pass the
// mount's limit writes what fits, or fails with errFull when nothing does.
func (f *memFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if errno := f.usable(true, off); errno != 0 || len(buf) == 0 {
		return 0, errno
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	size := int64(len(f.n.data))
	if end := off + int64(len(buf)); end > size {
		room := f.m.limit - f.m.used
		if off >= size+room {
			f.m.refused()
			return 0, errFull
		}
		if end-size > room {
			buf = buf[:size+room-off]
			end = off + int64(len(buf))
		}
		f.m.charge(f.n, end-size)
		f.n.data = append(f.n.data, make([]byte, end-size)...)
	}
	copy(f.n.data[off:], buf)
	now := time.Now().UnixNano()
	f.n.mtim, f.n.ctim = now, now
	return len(buf), 0
}

// Truncate implements experimentalsys.File.
func (f *memFile) Truncate(size int64) experimentalsys.Errno {
	if errno := f.usable(true, size); errno != 0 {
		return errno
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	old := int64(len(f.n.data))
	if size > old {
		if !f.m.charge(f.n, size-old) {
			return errFull
		}
		f.n.data = append(f.n.data, make([]byte, size-old)...)
	} else {
		f.m.charge(f.n, size-old)
		clear(f.n.data[size:])
		f.n.data = f.n.data[:size]
	}
	now := time.Now().UnixNano()
	f.n.mtim, f.n.ctim = now, now
	return 0
}

// Sync implements experimentalsys.File: there is nothing to flush.
func (f *memFile) Sync() experimentalsys.Errno { return 0 }

// Datasync implements experimentalsys.File: there is nothing to flush.
func (f *memFile) Datasync() experimentalsys.Errno { return 0 }

// Utimens implements experimentalsys.File.
func (f *memFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.n.setTimes(atim, mtim)
	return 0
}

// Close implements experimentalsys.File.
func (f *memFile) Close() experimentalsys.Errno {
	if f.closed {
		return 0
	}
	f.closed = true
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.n.open--
	f.m.release(f.n)
	return 0
}
