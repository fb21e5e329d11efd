//go:build linux

package isolate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// privateFS is the file system privateRoot built for a child.
type privateFS struct {
	// root is the new root's path, for the child's chroot; cleanup
	// removes the (empty) mount point afterwards.
	root    string
	cleanup func()
	// idmapped reports whether every root-owned path took the idmapping.
	idmapped bool
	// rules are the rules for Landlock on the calling thread: a rule
	// with TmpfsBytes names its tmpfs (under root), not the host's
	// folder.
	rules []Rule
	// tmpfs are the tmpfs mounts, by their path under root.
	tmpfs map[string]string
}

// full returns the paths (as the child sees them) of the tmpfs mounts
// with no space left.
func (fs *privateFS) full() []string {
	var out []string
	for target, path := range fs.tmpfs {
		var st unix.Statfs_t
		if unix.Statfs(target, &st) == nil && (st.Bavail == 0 || st.Ffree == 0) {
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

// privateRoot gives the calling thread a mount namespace of its own and
// builds in it a root holding only the paths of rules, each bind-mounted
// at its own path: read-only unless the rule allows Write, without exec
// unless it allows Exec, without devices unless it allows Device, never
// setuid. A rule with TmpfsBytes gets a fresh tmpfs owned by uid instead
// (see Rule).
//
// Nothing else of the host's file system exists for the child: stat,
// readlink, listing or connecting to a unix socket anywhere else fails
// with ENOENT, and utime, chmod, setxattr or rename on a read-only path
// fail with EROFS. The caller must have locked the goroutine to its thread
// and must never unlock it (the namespace belongs to that thread).
//
// With uid set (a root host's per-call uid), the root-owned paths of
// rules that do not keep their owner are mounted idmapped (with userns's
// namespace for uid) so that they appear owned by uid: the child then
// needs no capability at all. The result's idmapped reports whether every such
// mount took the idmapping (a file system without idmapped-mount support
// does not).
func privateRoot(scratch string, rules []Rule, uid uint32, userns *UserNamespaces) (*privateFS, error) {
	usernsFD := -1
	if uid != 0 {
		fd, release, err := userns.acquire(uid)
		if err == nil {
			// Needed only while the mounts are made.
			defer release()
			usernsFD = fd
		}
	}
	fs := &privateFS{idmapped: usernsFD >= 0, tmpfs: map[string]string{}}
	if err := fs.build(scratch, rules, usernsFD, uid); err != nil {
		return nil, err
	}
	return fs, nil
}

func (fs *privateFS) build(scratch string, rules []Rule, usernsFD int, uid uint32) error {
	root, err := os.MkdirTemp(scratch, "root-")
	if err != nil {
		return fmt.Errorf("private root: %w", err)
	}
	fs.root, fs.cleanup = root, func() { _ = os.Remove(root) }
	fail := func(err error) error {
		fs.cleanup()
		return fmt.Errorf("private root: %w", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return fail(fmt.Errorf("unshare: %w", err))
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail(fmt.Errorf("make mounts private: %w", err))
	}
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return fail(fmt.Errorf("mount tmpfs: %w", err))
	}
	sorted := append([]Rule(nil), rules...)
	sort.SliceStable(sorted, func(i, j int) bool { return len(sorted[i].Path) < len(sorted[j].Path) })
	for _, r := range sorted {
		if r.TmpfsBytes > 0 {
			target, err := mountTmpfs(root, r, uid)
			if err != nil {
				return fail(err)
			}
			fs.tmpfs[target] = r.Path
			r.Path = target
		} else if err := bindRule(root, r, usernsFD, &fs.idmapped); err != nil {
			return fail(err)
		}
		fs.rules = append(fs.rules, r)
	}
	if err := unix.Mount("", root, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fail(fmt.Errorf("seal the root: %w", err))
	}
	return nil
}

// mountTmpfs mounts a fresh tmpfs for r at r.Path under root (see
// Rule.TmpfsBytes) and returns its path under root.
func mountTmpfs(root string, r Rule, uid uint32) (string, error) {
	if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path {
		return "", fmt.Errorf("rule path %q is not clean and absolute", r.Path)
	}
	target := filepath.Join(root, r.Path)
	if err := os.MkdirAll(target, 0o755); err != nil {
		return "", fmt.Errorf("mount point %s: %w", r.Path, err)
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if r.Access&Exec == 0 {
		flags |= unix.MS_NOEXEC
	}
	if r.Access&Write == 0 {
		flags |= unix.MS_RDONLY
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700,uid=%d,gid=%d", r.TmpfsBytes, tmpfsInodes(r.TmpfsBytes), uid, uid)
	if err := unix.Mount("tmpfs", target, "tmpfs", flags, opts); err != nil {
		return "", fmt.Errorf("mount tmpfs at %s: %w", r.Path, err)
	}
	return target, nil
}

// tmpfsInodes is the inode limit of a tmpfs of size bytes: one per
// 16 KiB, at least 1,024 (an inode's kernel memory is not counted in the
// size).
func tmpfsInodes(size uint64) uint64 { return max(size/(16<<10), 1024) }

// bindRule mounts r.Path at the same path under root, idmapped when
// usernsFD is set, the path is root-owned and the rule does not keep its
// owner (clearing *idmapped when the file system refuses the idmapping).
// A missing path is skipped: there is nothing to reach through it.
func bindRule(root string, r Rule, usernsFD int, idmapped *bool) error {
	if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path {
		return fmt.Errorf("rule path %q is not clean and absolute", r.Path)
	}
	fi, err := os.Stat(r.Path)
	if err != nil {
		return nil
	}
	target := filepath.Join(root, r.Path)
	if fi.IsDir() {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", r.Path, err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", r.Path, err)
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil && !os.IsExist(err) {
			return fmt.Errorf("mount point %s: %w", r.Path, err)
		}
		if f != nil {
			f.Close()
		}
	}
	if usernsFD >= 0 && !r.KeepOwner && r.Access&Device == 0 && ownedByRoot(fi) && fi.Mode()&os.ModeDevice == 0 {
		attrs := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
		if r.Access&Write == 0 {
			attrs |= unix.MOUNT_ATTR_RDONLY
		}
		if r.Access&Exec == 0 {
			attrs |= unix.MOUNT_ATTR_NOEXEC
		}
		err := bindIdmapped(r.Path, target, usernsFD, attrs)
		if err == nil {
			return nil
		}
		if !openToOthers(fi, r.Access) {
			// A plain bind then, and the caller keeps the DAC
			// capabilities the call needs to reach it.
			*idmapped = false
		}
	}
	if err := unix.Mount(r.Path, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", r.Path, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOSUID)
	if r.Access&Write == 0 {
		flags |= unix.MS_RDONLY
	}
	if r.Access&Exec == 0 {
		flags |= unix.MS_NOEXEC
	}
	if r.Access&Device == 0 {
		flags |= unix.MS_NODEV
	}
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("restrict %s: %w", r.Path, err)
	}
	return nil
}

// openToOthers reports whether any user may already use fi as r allows
// (read, and list or execute), so a plain bind needs no capability.
func openToOthers(fi os.FileInfo, a Access) bool {
	need := os.FileMode(0o004)
	if fi.IsDir() || a&Exec != 0 {
		need |= 0o001
	}
	if a&Write != 0 {
		need |= 0o002
	}
	return fi.Mode().Perm()&need == need
}
