//go:build linux

package isolate

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// usernsFDs caches, per call uid, a user namespace whose uid and gid 0
// map to that uid: the idmapping of the private root's bind mounts, under
// which the host's root-owned files appear owned by the call's uid. The
// call's process then needs no capability to read them: file modes (and
// Landlock, and read-only mounts) decide.
var usernsFDs struct {
	sync.Mutex
	m map[uint32]int
}

// usernsFor returns the cached user namespace fd for uid, creating it with
// a helper process that lives only until its namespace is opened.
func usernsFor(uid uint32) (int, error) {
	usernsFDs.Lock()
	defer usernsFDs.Unlock()
	if fd, ok := usernsFDs.m[uid]; ok {
		return fd, nil
	}
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
	if usernsFDs.m == nil {
		usernsFDs.m = map[uint32]int{}
	}
	usernsFDs.m[uid] = fd
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
