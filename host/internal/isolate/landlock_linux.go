//go:build linux

package isolate

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rulesetAttr is struct landlock_ruleset_attr up to ABI 7 (24 bytes). The
// x/sys type carries later fields this kernel generation does not know,
// so it is not used.
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowed uint64
	port    uint64
}

// landlockRuleNetPort is LANDLOCK_RULE_NET_PORT.
const landlockRuleNetPort = 2

// Landlock file-system rights, grouped as the bridge grants them.
const (
	llRead  = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llExec  = unix.LANDLOCK_ACCESS_FS_EXECUTE
	llWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SYM |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	// llFileOnly are the rights that may be granted on a non-directory.
	llFileOnly = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// landlockABI returns the Landlock ABI version of the running kernel, or
// 0 with the reason when Landlock is unavailable.
func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		switch errno {
		case unix.ENOSYS:
			return 0, errors.New("kernel built without Landlock")
		case unix.EOPNOTSUPP:
			return 0, errors.New("landlock disabled at boot (lsm= does not list it)")
		}
		return 0, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	return int(v), nil
}

// handledFS returns every file-system right the given ABI knows, so that
// everything not explicitly allowed is denied.
func handledFS(abi int) uint64 {
	h := uint64(llRead | llExec | llWrite | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK)
	if abi < 2 {
		h &^= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi < 3 {
		h &^= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

// restrictThread confines the calling OS thread (and every process it
// forks afterwards) to rules: no_new_privs, then a Landlock domain that
// handles every right of abi and allows only the rules, no TCP bind or
// connect (ABI ≥ 4), and no signals or abstract unix sockets outside the
// domain (ABI ≥ 6). The caller must have locked the goroutine to its
// thread and must never unlock it.
func restrictThread(abi int, rules []Rule, connectPort int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	handled := handledFS(abi)
	attr := rulesetAttr{handledFS: handled}
	size := unsafe.Sizeof(attr.handledFS)
	if abi >= 4 {
		attr.handledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size += unsafe.Sizeof(attr.handledNet)
	}
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size += unsafe.Sizeof(attr.scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	for _, r := range rules {
		if err := addPathRule(int(fd), r, handled); err != nil {
			return err
		}
	}
	if connectPort != 0 {
		if abi < 4 {
			return fmt.Errorf("landlock ABI %d cannot filter TCP ports (needs 4)", abi)
		}
		attr := netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(connectPort)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, landlockRuleNetPort,
			uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("landlock port rule %d: %w", connectPort, errno)
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// addPathRule adds one path-beneath rule. A path that does not exist is
// skipped: there is nothing to reach through it.
func addPathRule(rulesetFD int, r Rule, handled uint64) error {
	pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("landlock rule %s: %w", r.Path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("landlock rule %s: %w", r.Path, err)
	}
	var allowed uint64
	if r.Access&Read != 0 {
		allowed |= llRead
	}
	if r.Access&Exec != 0 {
		allowed |= llExec
	}
	if r.Access&Write != 0 {
		allowed |= llWrite
	}
	if r.Access&Device != 0 {
		allowed |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		allowed &= llFileOnly
	}
	allowed &= handled
	if allowed == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: allowed, Parent_fd: int32(pfd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock rule %s: %w", r.Path, errno)
	}
	return nil
}
