package script

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"github.com/agenthost/agenthost/host/internal/isolate"
	"github.com/agenthost/agenthost/host/internal/limitio"
	"github.com/agenthost/agenthost/host/internal/netguard"
	"github.com/agenthost/agenthost/host/policy"
)

// SpawnConfig is a long-running process to start under the bridge's
// isolation (an MCP server spoken to over stdio).
type SpawnConfig struct {
	// Command is a program name (looked up in the system PATH) or an
	// absolute path; Args its arguments; Env variables added to the
	// scrubbed environment.
	Command string
	Args    []string
	Env     map[string]string
	// Dir is the working directory; the process may read (and execute)
	// it.
	Dir string
	// Grant is the process's grant (files, network, limits; its timeout
	// does not apply: the process lives until ctx ends).
	Grant *policy.Grant
	// Protected are files the process must never reach (the policy, its
	// lock file, the auth file): Spawn refuses to start it when Dir, the
	// program's folder or a path of the grant holds one of them.
	Protected []string
}

// Process is a spawned process: write to Stdin, read Stdout; Wait returns
// when it has exited (ctx ended or it stopped).
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	// Stderr holds its last log lines.
	Stderr *limitio.Lines
	done   chan struct{}
	err    error
}

// Wait waits for the process to exit.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Spawn starts c under the same protections as a script call: its own
// uid, private file system, Landlock rules of the grant plus the system's
// runtime files and Dir, no network unless the grant has hosts (then the
// allowlisting proxy), seccomp and rlimits. The process is killed when ctx
// ends.
func (r *Runner) Spawn(ctx context.Context, c SpawnConfig) (*Process, error) {
	exe := c.Command
	if !filepath.IsAbs(exe) {
		found := ""
		for _, d := range filepath.SplitList(systemPath) {
			if p := filepath.Join(d, exe); isExecutable(p) {
				found = p
				break
			}
		}
		if found == "" {
			if p, err := exec.LookPath(exe); err == nil && filepath.IsAbs(p) {
				found = p
			}
		}
		if found == "" {
			return nil, fmt.Errorf("spawn: %q is not in %s", exe, systemPath)
		}
		exe = found
	}
	// The program's folder is needed to run it, not granted: it keeps
	// its owner (never idmapped). Dir is the operator's grant.
	progDir := isolate.Rule{Path: filepath.Dir(exe), Access: isolate.Read | isolate.Exec, KeepOwner: true}
	reach := map[string]string{progDir.Path: "its program's folder"}
	if c.Dir != "" {
		reach[c.Dir] = "its folder (cwd)"
	}
	grantRules, _ := fileRules(c.Grant, "")
	for _, g := range grantRules {
		if _, ok := reach[g.Path]; !ok {
			reach[g.Path] = "its file grant"
		}
	}
	if err := exposes(reach, c.Protected); err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	base, err := r.scratch.dirFor(r.uids != nil)
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	tmp, err := os.MkdirTemp(base, "agenthost-mcp-")
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	var uid uint32
	release := func() {}
	if r.uids != nil {
		select {
		case uid = <-r.uids:
			release = func() { r.uids <- uid }
		case <-ctx.Done():
			os.RemoveAll(tmp)
			return nil, ctx.Err()
		}
		if err := os.Chown(tmp, int(uid), int(uid)); err != nil {
			release()
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("spawn: %w", err)
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		release()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		release()
		inR.Close()
		inW.Close()
		return nil, err
	}
	logs := limitio.NewLines(limitio.DefaultLogBytes)
	env := map[string]string{"LANG": "C.UTF-8"}
	for k, v := range c.Grant.Env {
		env[k] = v
	}
	for k, v := range c.Env {
		env[k] = v
	}
	env["PATH"], env["HOME"], env["TMPDIR"] = systemPath, tmp, tmp
	var envList []string
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	sort.Strings(envList)
	grantRules, _ = fileRules(c.Grant, tmp)
	rules := append([]isolate.Rule{}, runtimeFiles...)
	rules = append(rules, progDir)
	if c.Dir != "" {
		rules = append(rules, isolate.Rule{Path: c.Dir, Access: isolate.Read | isolate.Exec})
	}
	rules = mergeRules(append(rules, grantRules...))
	dir := c.Dir
	if dir == "" {
		dir = tmp
	}
	cfg := &isolate.Config{Path: exe, Args: c.Args, Env: envList, Dir: dir, Stdin: inR, Stdout: outW, Stderr: logs, UID: uid, UserNamespaces: &r.userns}
	if len(c.Grant.Hosts) > 0 {
		guard := netguard.ForGrant(c.Grant, netguard.Options{})
		cfg.Egress = func(l net.Listener) []string {
			go func() { _ = guard.ServeProxy(l) }()
			u := "http://" + l.Addr().String()
			return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u, "ALL_PROXY=" + u}
		}
	}
	f := *r.feat()
	if f.LandlockABI > 0 {
		cfg.Landlock, cfg.Rules = true, rules
	}
	cfg.Namespaces = f.Namespaces
	if f.Root && cfg.Landlock {
		cfg.PrivateFS, cfg.Scratch = true, base
	}
	cfg.Seccomp = f.Seccomp
	if f.Prlimit != "" {
		lim := c.Grant.Limits
		cfg.Prlimit = f.Prlimit
		cfg.Limits = isolate.Limits{Data: lim.MemoryBytes, Processes: maxProcesses, FileSize: maxFileSize, OpenFiles: maxOpenFiles}
	}
	p := &Process{Stdin: inW, Stdout: outR, Stderr: logs, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer release()
		defer os.RemoveAll(tmp)
		_, p.err = isolate.Run(ctx, cfg)
		inR.Close()
		outW.Close()
	}()
	return p, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// exposes returns an error naming a protected file that one of the paths
// of reach (path → what it is to the process) reaches: the path is the
// file or a folder above it, after symbolic links on both sides.
func exposes(reach map[string]string, protected []string) error {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return filepath.Clean(p)
	}
	paths := make([]string, 0, len(reach))
	for p := range reach {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, f := range protected {
		if f == "" {
			continue
		}
		rf := real(f)
		for _, p := range paths {
			if within(rf, real(p)) {
				return fmt.Errorf("%s %s holds %s, which a server's process never reaches; give the server a folder, program and grants apart from the policy, its lock file and the application's secrets", reach[p], p, f)
			}
		}
	}
	return nil
}

// mergeRules joins the rules of one path into one with the union of their
// rights (a folder granted read by the grant and read-execute as the
// program's folder is one read-execute mount). The joined rule keeps its
// owner only if every rule of the path does (a grant wins).
func mergeRules(rules []isolate.Rule) []isolate.Rule {
	idx := map[string]int{}
	var out []isolate.Rule
	for _, r := range rules {
		p := filepath.Clean(r.Path)
		if i, ok := idx[p]; ok {
			out[i].Access |= r.Access
			out[i].KeepOwner = out[i].KeepOwner && r.KeepOwner
			continue
		}
		idx[p] = len(out)
		r.Path = p
		out = append(out, r)
	}
	return out
}
