//go:build linux

package isolate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// privateRoot gives the calling thread a mount namespace of its own and
// builds in it a root holding only the paths of rules, each bind-mounted
// at its own path: read-only unless the rule allows Write, without exec
// unless it allows Exec, without devices unless it allows Device, never
// setuid. It returns the new root's path, for the child's chroot, and a
// function that removes the (empty) mount point afterwards.
//
// Nothing else of the host's file system exists for the child: stat,
// readlink, listing or connecting to a unix socket anywhere else fails
// with ENOENT, and utime, chmod, setxattr or rename on a read-only path
// fail with EROFS. The caller must have locked the goroutine to its thread
// and must never unlock it (the namespace belongs to that thread).
func privateRoot(scratch string, rules []Rule) (string, func(), error) {
	root, err := os.MkdirTemp(scratch, "root-")
	if err != nil {
		return "", nil, fmt.Errorf("private root: %w", err)
	}
	cleanup := func() { _ = os.Remove(root) }
	fail := func(err error) (string, func(), error) {
		cleanup()
		return "", nil, fmt.Errorf("private root: %w", err)
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
		if err := bindRule(root, r); err != nil {
			return fail(err)
		}
	}
	if err := unix.Mount("", root, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fail(fmt.Errorf("seal the root: %w", err))
	}
	return root, cleanup, nil
}

// bindRule mounts r.Path at the same path under root. A missing path is
// skipped: there is nothing to reach through it.
func bindRule(root string, r Rule) error {
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
