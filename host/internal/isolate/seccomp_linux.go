//go:build linux

package isolate

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter covers what namespaces and Landlock leave open: the
// kernel interfaces a script has no business with. Each is refused with
// EPERM (so a program sees an ordinary error); clone3 is ENOSYS, which
// makes libc fall back to clone, whose flags the filter can read and where
// a new user or mount namespace is refused.
//
// seccomp_data offsets.
const (
	seccompNr   = 0
	seccompArch = 4
	seccompArg0 = 16 // low 32 bits of args[0] on little-endian machines
)

// cloneNSFlags are the clone flags refused to the child: namespaces it
// could build privileges in.
const cloneNSFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// errSeccompArch reports an architecture the filter has no syscall table
// for.
var errSeccompArch = errors.New("no seccomp syscall table for this architecture")

// seccompProgram builds the filter. blockNS adds the clone check; it is
// off when the host's own fork needs CLONE_NEWUSER (an unprivileged
// host), since the filter applies to that fork too.
func seccompProgram(blockNS bool) ([]unix.SockFilter, error) {
	if seccompAuditArch == 0 {
		return nil, errSeccompArch
	}
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
	}
	const (
		ldW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeqK = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jgeK = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	allow := stmt(ret, unix.SECCOMP_RET_ALLOW)
	eperm := stmt(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM))
	enosys := stmt(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS))
	kill := stmt(ret, unix.SECCOMP_RET_KILL_PROCESS)

	// Layout: arch check, load nr, [x32 check], one jeq per denied
	// syscall (to EPERM), clone3 (to ENOSYS), clone (to the flag check),
	// allow, then the shared return blocks.
	denied := seccompDenied
	var p []unix.SockFilter
	p = append(p, stmt(ldW, seccompArch), jump(jeqK, seccompAuditArch, 1, 0), kill, stmt(ldW, seccompNr))
	// Instructions after this point, up to the return blocks:
	// [x32] + len(denied) + clone3 + clone + allow.
	n := len(denied) + 3
	if seccompX32Bit != 0 {
		n++
	}
	// Return blocks, in order: eperm (at n), enosys (n+1), clone flag
	// check: ld arg0, jset → eperm', allow' (n+2 .. n+5).
	idx := 0 // instructions emitted since the nr load
	to := func(target int) uint8 { return uint8(target - idx - 1) }
	if seccompX32Bit != 0 {
		p = append(p, jump(jgeK, seccompX32Bit, to(n), 0))
		idx++
	}
	for _, nr := range denied {
		p = append(p, jump(jeqK, uint32(nr), to(n), 0))
		idx++
	}
	p = append(p, jump(jeqK, uint32(seccompClone3), to(n+1), 0))
	idx++
	if blockNS {
		p = append(p, jump(jeqK, uint32(seccompClone), to(n+2), 0))
	} else {
		p = append(p, jump(jeqK, uint32(seccompClone), 0, 0))
	}
	idx++
	p = append(p, allow) // n-1
	idx++
	p = append(p, eperm, enosys, // n, n+1
		stmt(ldW, seccompArg0),                 // n+2
		jump(jset, uint32(cloneNSFlags), 0, 1), // n+3
		eperm,                                  // n+4
		allow)                                  // n+5
	if len(p) > 4096 {
		return nil, fmt.Errorf("seccomp filter of %d instructions is too long", len(p))
	}
	return p, nil
}

// installSeccomp confines the calling thread (and so the child it forks)
// with the filter. no_new_privs must be set already (Landlock sets it).
func installSeccomp(blockNS bool) error {
	prog, err := seccompProgram(blockNS)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}
