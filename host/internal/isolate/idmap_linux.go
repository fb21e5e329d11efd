//go:build linux

package isolate

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// acquire returns a user namespace whose uid and gid 0 map to uid: the
// idmapping of the private root's bind mounts, under which the host's
// root-owned files appear owned by that uid (the call's process then
// needs no capability to read them: file modes, Landlock and read-only
// mounts decide). release ends the use. A nil or closed u makes a
// namespace for this use alone, closed by release.
func (u *UserNamespaces) acquire(uid uint32) (fd int, release func(), err error) {
	if u != nil {
		u.mu.Lock()
		defer u.mu.Unlock()
		if !u.closed {
			fd, ok := u.fds[uid]
			if !ok {
				if fd, err = newUserNamespace(uid); err != nil {
					return -1, nil, err
				}
				if u.fds == nil {
					u.fds = map[uint32]int{}
				}
				u.fds[uid] = fd
			}
			u.users++
			return fd, u.done, nil
		}
	}
	if fd, err = newUserNamespace(uid); err != nil {
		return -1, nil, err
	}
	return fd, func() { _ = unix.Close(fd) }, nil
}

// done ends one use of u's namespaces; the last one after Close closes
// them.
func (u *UserNamespaces) done() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.users--
	if u.closed && u.users == 0 {
		u.closeAll()
	}
}

// Close releases the cached namespaces, at once or, when a child's mounts
// are being made with one, once they are made. Later uses get a namespace
// of their own. It is safe to call more than once.
func (u *UserNamespaces) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	if u.users == 0 {
		u.closeAll()
	}
	return nil
}

func (u *UserNamespaces) closeAll() {
	for uid, fd := range u.fds {
		_ = unix.Close(fd)
		delete(u.fds, uid)
	}
}

// newUserNamespace opens a new user namespace mapping uid and gid 0 to
// uid, with a helper process that lives only until it is opened.
func newUserNamespace(uid uint32) (int, error) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return -1, fmt.Errorf("idmap: %w", err)
	}
	cmd := exec.Command(sleep, "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(uid), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(uid), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("idmap: user namespace: %w", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	fd, err := unix.Open("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("idmap: open user namespace: %w", err)
	}
	return fd, nil
}

// bindIdmapped mounts src at target with the idmapping of usernsFD and
// attrs (MOUNT_ATTR_RDONLY, ...): a detached clone of src's mount tree,
// idmapped, then attached.
func bindIdmapped(src, target string, usernsFD int, attrs uint64) error {
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree %s: %w", src, err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: attrs | unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(usernsFD)}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("idmap %s: %w", src, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount %s: %w", src, err)
	}
	return nil
}

// ownedByRoot reports whether path's owner is uid 0 (the files an
// idmapping hands to the call's uid).
func ownedByRoot(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0
}
