//go:build !linux

package isolate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

var errNotLinux = errors.New("kernel isolation needs Linux")

// Probe reports that no kernel protection is available off Linux.
func Probe() Features {
	return Features{LandlockErr: errNotLinux, NamespacesErr: errNotLinux, PrlimitErr: errNotLinux}
}

// Run starts the child unconfined (Landlock, Namespaces and Limits are
// Linux-only; the caller allowed degraded isolation) and kills it when
// ctx ends.
func Run(ctx context.Context, c *Config) (Exit, error) {
	if c.Path == "" || !strings.HasPrefix(c.Path, "/") {
		return Exit{}, fmt.Errorf("program path %q is not absolute", c.Path)
	}
	if c.Landlock || c.Namespaces || c.Prlimit != "" || c.Egress != nil {
		return Exit{}, errNotLinux
	}
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Env, cmd.Dir = c.Env, c.Dir
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	if cmd.Stdout == nil {
		cmd.Stdout = io.Discard
	}
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	ex := Exit{Killed: ctx.Err() != nil}
	if cmd.ProcessState == nil {
		return Exit{}, fmt.Errorf("start %s: %w", c.Path, err)
	}
	ex.Code = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ex.Signal = ws.Signal()
	}
	return ex, nil
}

// Close releases nothing: there are no idmapped mounts off Linux.
func (u *UserNamespaces) Close() error { return nil }
