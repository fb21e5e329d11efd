//go:build linux && amd64

package isolate

import "golang.org/x/sys/unix"

const (
	seccompAuditArch = unix.AUDIT_ARCH_X86_64
	// seccompX32Bit marks x32 syscall numbers, refused as a whole.
	seccompX32Bit = 0x40000000
	seccompClone  = unix.SYS_CLONE
	seccompClone3 = unix.SYS_CLONE3
)

// seccompDenied are refused with EPERM (chroot is not: the host's own
// fork uses it, and the child holds no CAP_SYS_CHROOT): mounts and
// namespaces, tracing
// and other processes' memory, the kernel keyring, BPF, userfaultfd,
// perf events, kernel modules and kexec, file handles (which bypass path
// checks), swap, reboot, the kernel log, accounting, I/O ports.
var seccompDenied = []uintptr{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_FSOPEN, unix.SYS_FSMOUNT, unix.SYS_FSCONFIG, unix.SYS_FSPICK,
	unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_MOUNT_SETATTR,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_BPF, unix.SYS_USERFAULTFD, unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_QUOTACTL, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT,
	unix.SYS_SYSLOG, unix.SYS_ACCT, unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_LOOKUP_DCOOKIE,
}
