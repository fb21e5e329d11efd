//go:build linux

package isolate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// prlimitPaths are where util-linux installs prlimit(1). The host's PATH
// is not searched: it is operator environment, not system layout.
var prlimitPaths = [...]string{"/usr/bin/prlimit", "/bin/prlimit"}

// Probe inspects the kernel: it asks Landlock for its ABI version and
// starts prlimit(1) once in fresh namespaces to see whether they work.
// It takes a few milliseconds; callers cache its result.
func Probe() Features {
	f := Features{Root: os.Geteuid() == 0}
	f.LandlockABI, f.LandlockErr = landlockABI()
	for _, p := range prlimitPaths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			f.Prlimit = p
			break
		}
	}
	if f.Prlimit == "" {
		f.PrlimitErr = errNoPrlimit
	}
	f.NamespacesErr = probeNamespaces(f.Prlimit)
	f.Namespaces = f.NamespacesErr == nil
	f.Egress = f.Namespaces && f.Root
	_, serr := seccompProgram(true)
	f.Seccomp = serr == nil
	return f
}

// probeNamespaces starts a trivial program in the namespaces Run uses.
func probeNamespaces(prog string) error {
	args := []string{"--version"}
	if prog == "" {
		prog = "/bin/true"
		args = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out strings.Builder
	c := &Config{Path: prog, Args: args, Dir: "/", Stdout: &out, Stderr: &out, Namespaces: true, UID: probeUID}
	ex, err := Run(ctx, c)
	if err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			return ee
		}
		return fmt.Errorf("clone into new network and pid namespaces: %w", err)
	}
	if ex.Code != 0 {
		return fmt.Errorf("namespace probe exited %d: %s", ex.Code, strings.TrimSpace(out.String()))
	}
	return nil
}

// probeUID is the unprivileged uid of the namespace probe when root.
const probeUID = 65534
