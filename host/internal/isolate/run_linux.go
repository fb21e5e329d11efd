//go:build linux

package isolate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Run starts the child described by c, waits for it and returns how it
// ended. When ctx ends first the child is killed with SIGKILL (with
// Namespaces, that tears down its PID namespace and so every descendant,
// including those that called setsid; without, its process group) and Run
// still waits for it. The error is non-nil only when the child could not
// be started.
func Run(ctx context.Context, c *Config) (Exit, error) {
	type started struct {
		proc    *os.Process
		err     error
		cleanup func() // removes the private root's mount point
	}
	type waited struct {
		state *os.ProcessState
		err   error
		full  []string // the tmpfs mounts left full
	}
	startc := make(chan started, 1)
	waitc := make(chan waited, 1)
	go func() {
		// This goroutine's thread is confined below and must never run
		// anything else: it is locked and never unlocked, so the Go
		// runtime terminates the thread when the goroutine returns.
		runtime.LockOSThread()
		cmd, err := c.command()
		var port int
		if err == nil && c.Egress != nil {
			var l net.Listener
			l, err = egressListener()
			if err == nil {
				defer l.Close()
				port = l.Addr().(*net.TCPAddr).Port
				cmd.Env = append(cmd.Env, c.Egress(l)...)
			}
		}
		var cleanup func()
		var pfs *privateFS
		rules := c.Rules
		if err == nil && c.PrivateFS {
			pfs, err = privateRoot(c.Scratch, c.Rules, c.UID, c.UserNamespaces)
			if err == nil {
				cleanup, rules = pfs.cleanup, pfs.rules
				cmd.SysProcAttr.Chroot = pfs.root
				if pfs.idmapped {
					// The host's files appear owned by the call's uid:
					// it needs no capability at all.
					cmd.SysProcAttr.AmbientCaps = nil
				}
			}
		}
		if err == nil && !c.Landlock {
			// restrictThread sets it otherwise.
			if perr := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); perr != nil {
				err = fmt.Errorf("set no_new_privs: %w", perr)
			}
		}
		if err == nil && c.Landlock {
			abi, aerr := landlockABI()
			if aerr != nil {
				err = fmt.Errorf("landlock: %w", aerr)
			} else {
				err = restrictThread(abi, rules, port)
			}
		}
		if err == nil && c.Seccomp {
			// Last: the filter also binds this thread, which still has
			// to fork the child (with CLONE_NEWUSER on an unprivileged
			// host, which the clone check would refuse).
			err = installSeccomp(os.Geteuid() == 0)
		}
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			startc <- started{err: err, cleanup: cleanup}
			return
		}
		startc <- started{proc: cmd.Process, cleanup: cleanup}
		// Waiting on this thread keeps it alive as long as the child:
		// Pdeathsig fires when the forking thread exits.
		werr := cmd.Wait()
		w := waited{state: cmd.ProcessState, err: werr}
		if pfs != nil {
			w.full = pfs.full()
		}
		waitc <- w
	}()
	s := <-startc
	if s.cleanup != nil {
		// From this goroutine's thread, outside the private mount
		// namespace, the mount point is an empty folder.
		defer s.cleanup()
	}
	if s.err != nil {
		return Exit{}, fmt.Errorf("start %s: %w", c.Path, s.err)
	}
	var killed bool
	var w waited
	select {
	case w = <-waitc:
	case <-ctx.Done():
		select {
		case w = <-waitc:
			// It exited on its own just as ctx ended.
		default:
			killed = true
			kill(s.proc, c.Namespaces)
			w = <-waitc
		}
	}
	if w.state == nil {
		return Exit{}, fmt.Errorf("wait %s: %w", c.Path, w.err)
	}
	ex := Exit{Code: w.state.ExitCode(), Killed: killed, TmpfsFull: w.full}
	if ws, ok := w.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ex.Signal = ws.Signal()
		ex.CPULimit = ex.Signal == syscall.SIGXCPU
		ex.FileSizeLimit = ex.Signal == syscall.SIGXFSZ
	}
	if ru, ok := w.state.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > 0 {
		ex.MaxRSS = uint64(ru.Maxrss) << 10 // Linux reports KiB
	}
	return ex, nil
}

// kill ends the child and, without a PID namespace, its process group.
// In a PID namespace the child is its init: killing it makes the kernel
// kill every other process of the namespace before the child is reaped.
func kill(p *os.Process, pidns bool) {
	if !pidns {
		_ = unix.Kill(-p.Pid, unix.SIGKILL)
	}
	// Through the pidfd: never a recycled pid.
	_ = p.Kill()
}

// command builds the exec.Cmd for c: the prlimit wrapper when rlimits are
// asked for, the namespaces and credentials, and the plumbing.
func (c *Config) command() (*exec.Cmd, error) {
	if c.Path == "" || c.Path[0] != '/' {
		return nil, fmt.Errorf("program path %q is not absolute", c.Path)
	}
	path, args := c.Path, c.Args
	if c.Prlimit != "" {
		path = c.Prlimit
		args = append(c.Limits.prlimitArgs(), "--")
		args = append(args, c.Path)
		args = append(args, c.Args...)
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   append([]string{path}, args...),
		Env:    c.Env,
		Dir:    c.Dir,
		Stdin:  c.Stdin,
		Stdout: c.Stdout,
		Stderr: c.Stderr,
		// A descendant that somehow kept a pipe open must not block Wait.
		WaitDelay: time.Second,
	}
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	// os/exec opens /dev/null for nil streams, which would happen after
	// the thread is confined: use pipes instead.
	if cmd.Stdin == nil {
		cmd.Stdin = strings.NewReader("")
	}
	if cmd.Stdout == nil {
		cmd.Stdout = io.Discard
	}
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if c.Egress != nil && !c.Namespaces {
		return nil, errors.New("egress needs namespaces")
	}
	if c.Namespaces {
		attr.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
		if c.Egress == nil {
			// With Egress the thread already moved into the network
			// namespace the child inherits.
			attr.Cloneflags |= syscall.CLONE_NEWNET
		}
		if os.Geteuid() != 0 {
			attr.Cloneflags |= syscall.CLONE_NEWUSER
		}
	}
	if os.Geteuid() == 0 && c.UID != 0 {
		attr.Credential = &syscall.Credential{Uid: c.UID, Gid: c.UID, Groups: []uint32{}}
		attr.AmbientCaps = []uintptr{unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH}
	}
	cmd.SysProcAttr = attr
	return cmd, nil
}

// prlimitArgs renders l as prlimit(1) options (soft = hard).
func (l Limits) prlimitArgs() []string {
	var a []string
	add := func(name string, v uint64) {
		if v != 0 {
			a = append(a, "--"+name+"="+strconv.FormatUint(v, 10))
		}
	}
	add("as", l.AddressSpace)
	add("data", l.Data)
	add("nproc", l.Processes)
	add("fsize", l.FileSize)
	add("nofile", l.OpenFiles)
	add("cpu", l.CPUSeconds)
	return a
}

// egressListener moves the calling (locked, doomed) thread into a new
// network namespace, brings its loopback up and listens on it. The
// listener's socket belongs to that namespace, so host goroutines on
// other threads can accept on it while dialing out from the host's
// namespace.
func egressListener() (net.Listener, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("egress: unshare network namespace: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return nil, fmt.Errorf("egress: loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return nil, fmt.Errorf("egress: loopback up: %w", err)
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress: listen: %w", err)
	}
	return l, nil
}

// errNoPrlimit is returned by Probe's rlimit check when prlimit(1) is absent.
var errNoPrlimit = errors.New("prlimit(1) from util-linux not found")
