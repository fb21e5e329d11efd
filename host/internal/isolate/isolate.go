package isolate

import (
	"io"
	"net"
	"sync"
	"syscall"
)

// Access is a set of rights on a path hierarchy.
type Access uint8

// The rights a [Rule] can grant.
const (
	// Read allows reading files and listing directories.
	Read Access = 1 << iota
	// Write allows writing, truncating, creating, renaming and removing.
	Write
	// Exec allows executing files (and mapping them executable).
	Exec
	// Device allows ioctl on device files (e.g. /dev/null).
	Device
)

// Rule grants Access to Path and, when Path is a directory, to
// everything beneath it.
type Rule struct {
	Path   string
	Access Access
	// TmpfsBytes, when set and the child gets a file system of its own
	// (Config.PrivateFS), puts a fresh in-memory file system (tmpfs) of
	// at most TmpfsBytes bytes at Path instead of the host's folder: owned
	// by the child's uid, mode 0700, with at most one inode per 16 KiB of
	// it (1,024 at least), gone with the child. What the child writes
	// there never reaches the host's disk, and a write past the size fails
	// with ENOSPC. Without PrivateFS the host's folder is used.
	TmpfsBytes uint64
	// KeepOwner marks a path the child needs but nobody granted it (the
	// system's runtime files, a program's folder): with PrivateFS and a
	// per-call UID it is never idmapped, so its files keep their real
	// owner and the child reaches only what their modes give every user.
	// (An idmapping would hand it the host's root-only files there.)
	KeepOwner bool
}

// Limits are the rlimits of the child. Zero leaves a limit unset.
type Limits struct {
	AddressSpace uint64 // RLIMIT_AS, bytes
	Data         uint64 // RLIMIT_DATA, bytes
	Processes    uint64 // RLIMIT_NPROC, processes and threads of the child's uid
	FileSize     uint64 // RLIMIT_FSIZE, bytes
	OpenFiles    uint64 // RLIMIT_NOFILE
	CPUSeconds   uint64 // RLIMIT_CPU, seconds
}

// Config describes one confined child.
type Config struct {
	// Path is the absolute path of the program; Args its arguments
	// (without argv[0]). There is never a shell.
	Path string
	Args []string
	// Env is the complete environment ("K=V"); nothing is inherited.
	Env []string
	// Dir is the working directory.
	Dir string

	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	// Landlock confines the child to Rules (and denies all TCP) when
	// set; the caller checks availability with [Probe] first.
	Landlock bool
	Rules    []Rule
	// Namespaces puts the child in fresh network and PID namespaces
	// (and a user namespace when the host is not root), so it has no
	// network interface but a down loopback and its whole process tree
	// dies with it.
	Namespaces bool
	// UID, when the host runs as root, is the unprivileged uid (and gid)
	// the child runs as. With PrivateFS its root-owned paths are mounted
	// idmapped (they appear owned by UID) and the child has no capability
	// at all; otherwise it keeps CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
	// as ambient capabilities so that Landlock, not file modes, decides
	// which files it may reach. Ignored when the host is not root.
	UID uint32
	// UserNamespaces, with PrivateFS and UID on a root host, caches the
	// user namespaces of the idmapped mounts per uid for its owner, who
	// closes it; nil makes one for this child and closes it once its
	// mounts are made.
	UserNamespaces *UserNamespaces
	// Egress, when set, replaces the empty network namespace with one
	// whose loopback holds a single TCP listener, handed to Egress before
	// the child starts: Egress serves it (an allowlisting proxy) on its
	// own goroutines and returns variables to add to the child's
	// environment (the proxy's address). Landlock then allows the child
	// to connect to that port only. Needs Features.Egress; Run closes the
	// listener when the child has exited.
	Egress func(l net.Listener) []string
	// PrivateFS, on a root host, gives the child a file system of its own:
	// a private mount namespace whose root holds only the paths of Rules,
	// bind-mounted read-only unless the rule allows Write (see
	// Features.PrivateFS). Scratch is where its mount point is made: a
	// folder every user can pass through.
	PrivateFS bool
	Scratch   string
	// Seccomp adds a system-call filter for what namespaces and Landlock
	// leave open (mounts and namespaces, ptrace, keyctl, bpf, userfaultfd,
	// perf events, kernel modules, file handles...; see Features.Seccomp).
	Seccomp bool
	// Prlimit is the path of the util-linux prlimit(1) program used to
	// set Limits before the program runs; empty leaves rlimits unset.
	Prlimit string
	Limits  Limits
}

// Exit is how a child ended.
type Exit struct {
	// Code is the exit status, or -1 when a signal ended the child.
	Code int
	// Signal is the signal that ended the child, if any.
	Signal syscall.Signal
	// Killed is set when Run killed the child because its context ended.
	Killed bool
	// CPULimit and FileSizeLimit are set when RLIMIT_CPU (SIGXCPU) or
	// RLIMIT_FSIZE (SIGXFSZ) ended the child.
	CPULimit      bool
	FileSizeLimit bool
	// TmpfsFull lists the paths of the rules with TmpfsBytes whose file
	// system was full when the child ended.
	TmpfsFull []string
	// MaxRSS is the peak resident set of the child (and of the
	// descendants it waited for), in bytes; 0 when unknown.
	MaxRSS uint64
}

// Features is what the running kernel and system offer.
type Features struct {
	// LandlockABI is the Landlock ABI version, 0 when unavailable
	// (LandlockErr says why).
	LandlockABI int
	LandlockErr error
	// Namespaces reports whether a child can be started in fresh
	// network and PID namespaces (NamespacesErr says why not).
	Namespaces    bool
	NamespacesErr error
	// Root is set when the host runs as root: the child then gets a
	// per-call unprivileged uid instead of a user namespace.
	Root bool
	// Egress reports whether Config.Egress works: a root host with
	// namespaces (an unprivileged host cannot give the child a network
	// namespace that the host's proxy listens in).
	Egress bool
	// Prlimit is the path of prlimit(1), empty when absent
	// (PrlimitErr says why).
	Prlimit    string
	PrlimitErr error
	// Seccomp reports whether Config.Seccomp works here (the filter has a
	// syscall table for this architecture).
	Seccomp bool
}

// UserNamespaces holds the user namespaces (one open descriptor per uid)
// that give a root host's per-call uids their idmapped mounts, so that a
// runner makes each once and releases them all when it closes
// ([UserNamespaces.Close]). The zero value is ready to use; it is safe
// for concurrent use.
type UserNamespaces struct {
	mu     sync.Mutex
	fds    map[uint32]int
	users  int // mounts being made with one of fds now
	closed bool
}
