package sandboxfs

import (
	"io/fs"
	"strings"
	"testing/fstest"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// Deny is the file system mounted at "/" behind the real mounts. The
// guest's path resolution picks the longest matching mount, so Deny sees
// exactly the paths outside every mount (/etc/passwd, /home, a relative
// path resolved against "/"). Its root is an empty directory; everything
// else is refused and recorded, so a probe of the host file system counts
// as a refused access.
type Deny struct {
	experimentalsys.UnimplementedFS
	denials *Denials
}

// NewDeny returns the "/" file system recording refusals in d.
func NewDeny(d *Denials) *Deny { return &Deny{denials: d} }

func (d *Deny) refuse(op, p, mode string) experimentalsys.Errno {
	d.denials.Record("denied: " + op + " /" + strings.Trim(p, "/") + " (" + mode + "): outside every mount")
	return experimentalsys.EACCES
}

func isRoot(p string) bool {
	p = strings.Trim(p, "/")
	return p == "" || p == "."
}

// OpenFile implements experimentalsys.FS: only the root opens, as an
// empty read-only directory.
func (d *Deny) OpenFile(p string, flag experimentalsys.Oflag, _ fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	acc := flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY)
	write := acc != experimentalsys.O_RDONLY || flag&(experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_APPEND) != 0
	if isRoot(p) && !write {
		return emptyDir()
	}
	return nil, d.refuse("open", p, accessMode(acc != experimentalsys.O_WRONLY, write))
}

// Stat implements experimentalsys.FS.
func (d *Deny) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	if isRoot(p) {
		return sys.Stat_t{Mode: fs.ModeDir | 0o555, Nlink: 1}, 0
	}
	return sys.Stat_t{}, d.refuse("stat", p, "read")
}

// Lstat implements experimentalsys.FS.
func (d *Deny) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) { return d.Stat(p) }

// Readlink implements experimentalsys.FS.
func (d *Deny) Readlink(p string) (string, experimentalsys.Errno) {
	return "", d.refuse("readlink", p, "read")
}

// Mkdir implements experimentalsys.FS.
func (d *Deny) Mkdir(p string, _ fs.FileMode) experimentalsys.Errno {
	return d.refuse("mkdir", p, "write")
}

// Chmod implements experimentalsys.FS.
func (d *Deny) Chmod(p string, _ fs.FileMode) experimentalsys.Errno {
	return d.refuse("chmod", p, "write")
}

// Rename implements experimentalsys.FS.
func (d *Deny) Rename(from, _ string) experimentalsys.Errno {
	return d.refuse("rename", from, "write")
}

// Rmdir implements experimentalsys.FS.
func (d *Deny) Rmdir(p string) experimentalsys.Errno { return d.refuse("rmdir", p, "write") }

// Unlink implements experimentalsys.FS.
func (d *Deny) Unlink(p string) experimentalsys.Errno { return d.refuse("unlink", p, "write") }

// Link implements experimentalsys.FS.
func (d *Deny) Link(_, newPath string) experimentalsys.Errno {
	return d.refuse("link", newPath, "write")
}

// Symlink implements experimentalsys.FS.
func (d *Deny) Symlink(_, linkName string) experimentalsys.Errno {
	return d.refuse("symlink", linkName, "write")
}

// Utimens implements experimentalsys.FS.
func (d *Deny) Utimens(p string, _, _ int64) experimentalsys.Errno {
	return d.refuse("utimes", p, "write")
}

// emptyDir opens the root directory of Deny: an empty read-only
// directory.
func emptyDir() (experimentalsys.File, experimentalsys.Errno) {
	return (&sysfs.AdaptFS{FS: fstest.MapFS{}}).OpenFile(".", experimentalsys.O_RDONLY, 0)
}

// Interface guards
var _ experimentalsys.FS = (*Deny)(nil)
