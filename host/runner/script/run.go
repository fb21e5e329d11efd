package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/isolate"
	"github.com/agenthost/agenthost/host/internal/limitio"
	"github.com/agenthost/agenthost/host/internal/netguard"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// Defaults for limits the grant leaves at zero, and fixed limits the
// grant has no field for.
const (
	defaultTimeout   = 10 * time.Second
	defaultMemory    = 256 << 20
	defaultMaxOutput = 1 << 20
	// maxProcesses caps processes plus threads of the call (node alone
	// starts about a dozen threads).
	maxProcesses = 128
	maxOpenFiles = 256
	// maxFileSize caps every file the script writes.
	maxFileSize = 1 << 30
	// jsReservation is address space V8 and JavaScriptCore reserve but
	// never touch; node does not start under a 256 MiB RLIMIT_AS.
	jsReservation = 1 << 30
)

// systemPath is the PATH a script gets: system directories only.
const systemPath = "/usr/local/bin:/usr/bin:/bin"

// prepared is one tool ready to run.
type prepared struct {
	r       *Runner
	tool    *manifest.Tool
	grant   *policy.Grant
	script  string
	code    []byte // the script's bytes, checked at Prepare (verified.go)
	toolDir string
	interp  *interpreter
	deps    *deps
	missing []string
}

// Cancellation causes that Run maps to error codes.
var (
	errTimeout     = errors.New("timeout")
	errOutputLimit = errors.New("output limit")
)

// Run executes one call in a fresh $TMP.
func (p *prepared) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	lim := p.limits()
	base, err := p.r.scratch.dirFor(p.r.uids != nil)
	if err != nil {
		return runner.Result{}, fmt.Errorf("script %s: %w", p.tool.ToolID, err)
	}
	tmp, err := os.MkdirTemp(base, "agenthost-call-")
	if err != nil {
		return runner.Result{}, fmt.Errorf("script %s: create $TMP: %w", p.tool.ToolID, err)
	}
	defer os.RemoveAll(tmp)
	staged, err := p.stage(base)
	if err != nil {
		return runner.Result{}, fmt.Errorf("script %s: %w", p.tool.ToolID, err)
	}
	defer os.RemoveAll(staged)

	var uid uint32
	if p.r.uids != nil {
		select {
		case uid = <-p.r.uids:
			defer func() { p.r.uids <- uid }()
		case <-ctx.Done():
			return runner.Result{}, fmt.Errorf("script %s: wait for a sandbox slot: %w", p.tool.ToolID, ctx.Err())
		}
	}

	if uid != 0 {
		// The child changes its working directory before exec, while it
		// holds no capability yet: it must own its $TMP.
		if err := os.Chown(tmp, int(uid), int(uid)); err != nil {
			return runner.Result{}, fmt.Errorf("script %s: chown $TMP: %w", p.tool.ToolID, err)
		}
	}

	logs := limitio.NewLines(limitio.DefaultLogBytes)
	logs.Add("isolation: " + p.isolationSummary())
	rules, widenings := fileRules(p.grant, tmp)
	rules = append(rules, isolate.Rule{Path: staged, Access: isolate.Read})
	for _, w := range widenings {
		logs.Add("isolation: " + w.String())
	}

	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tctx, tcancel := context.WithTimeoutCause(cctx, lim.Timeout, errTimeout)
	defer tcancel()
	stdout := limitio.NewWriter(lim.MaxOutputBytes, func() { cancel(errOutputLimit) })

	cfg := &isolate.Config{
		Path:   p.exe(),
		Args:   p.args(filepath.Join(staged, filepath.Base(p.script))),
		Env:    p.env(tmp, req.Env),
		Dir:    tmp,
		Stdin:  bytes.NewReader(req.Input),
		Stdout: stdout,
		Stderr: logs,
		UID:    uid,

		UserNamespaces: &p.r.userns,
	}
	var guard *netguard.Guard
	if len(p.grant.Hosts) > 0 {
		guard = netguard.ForGrant(p.grant, netguard.Options{Timeout: lim.Timeout, Logger: req.Logger})
		cfg.Egress = func(l net.Listener) []string {
			go func() { _ = guard.ServeProxy(l) }()
			u := "http://" + l.Addr().String()
			return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u, "ALL_PROXY=" + u, "AGENTHOST_PROXY=" + u}
		}
	}
	f := *p.r.feat()
	if f.LandlockABI > 0 {
		cfg.Landlock = true
		cfg.Rules = p.rules(rules)
	}
	cfg.Namespaces = f.Namespaces
	if f.Root && cfg.Landlock {
		cfg.PrivateFS, cfg.Scratch = true, base
	}
	cfg.Seccomp = f.Seccomp
	if f.Prlimit != "" {
		cfg.Prlimit = f.Prlimit
		cfg.Limits = p.rlimits(lim)
	}
	start := time.Now()
	ex, err := isolate.Run(tctx, cfg)
	if err != nil {
		return runner.Result{}, fmt.Errorf("script %s: %w", p.tool.ToolID, err)
	}
	if len(ex.TmpfsFull) > 0 {
		logs.Add(fmt.Sprintf("denied: write $TMP: full (its files may hold %d bytes, the call's memory limit)", tmpBytes(p.grant)))
	}
	res := runner.Result{Output: stdout.Bytes(), Usage: abi.Usage{MemoryBytes: ex.MaxRSS}}
	res.Err = p.classify(ex, context.Cause(tctx), lim, time.Since(start), res.Output, logs, cfg.Rules)
	if stdout.Exceeded() && (res.Err == nil || res.Err.Code != abi.CodeOutputLimit) {
		// The script may have exited on its own right after the excess.
		res.Err = abi.Errorf(abi.CodeOutputLimit, "output exceeded %d bytes", lim.MaxOutputBytes)
	}
	if guard != nil && guard.Denials() > 0 {
		last := guard.LastDenial()
		logs.Add(fmt.Sprintf("network: %d request(s) refused by the egress proxy; last: %s", guard.Denials(), last.Message))
		if res.Err != nil && res.Err.Code != abi.CodeTimeout && res.Err.Code != abi.CodeOutputLimit {
			res.Err = abi.Errorf(abi.CodePermissionDenied, "%s (the tool then failed: %s)", last.Message, res.Err.Message)
		}
	}
	if res.Err != nil {
		res.Output = nil
	}
	res.Logs = logs.Lines()
	if res.Logs == nil {
		res.Logs = []string{}
	}
	// Paths in the staged copy read as the script's own.
	res.Rewrite(strings.NewReplacer(staged, filepath.Dir(p.script)))
	p.hidePaths(tmp, &res)
	return res, nil
}

// classify maps how the child ended to an error code (nil on success).
func (p *prepared) classify(ex isolate.Exit, cause error, lim policy.Limits, took time.Duration, stdout []byte, logs *limitio.Lines, visible []isolate.Rule) *abi.Error {
	switch {
	case ex.Killed && errors.Is(cause, errOutputLimit):
		return abi.Errorf(abi.CodeOutputLimit, "output exceeded %d bytes; the script was stopped", lim.MaxOutputBytes)
	case ex.Killed && errors.Is(cause, errTimeout):
		return abi.Errorf(abi.CodeTimeout, "timed out after %s; the script and every process it started were killed", lim.Timeout)
	case ex.Killed:
		return abi.Errorf(abi.CodeTimeout, "call cancelled after %s: %s", took.Round(time.Millisecond), cause.Error())
	case ex.CPULimit:
		return abi.Errorf(abi.CodeTimeout, "CPU time limit reached (RLIMIT_CPU)")
	case ex.FileSizeLimit:
		return abi.Errorf(abi.CodeToolError, "file size limit of %d bytes reached (RLIMIT_FSIZE)", maxFileSize)
	case ex.Signal != 0:
		if memoryExhausted(logs.Lines()) {
			return abi.Errorf(abi.CodeMemoryLimit, "memory limit of %d MiB reached (killed by %s)", lim.MemoryBytes>>20, ex.Signal)
		}
		return abi.Errorf(abi.CodeToolError, "script killed by signal %s", ex.Signal)
	case ex.Code != 0:
		if memoryExhausted(logs.Lines()) {
			return abi.Errorf(abi.CodeMemoryLimit, "memory limit of %d MiB reached (exit status %d)", lim.MemoryBytes>>20, ex.Code)
		}
		e := toolError(ex.Code, stdout, logs)
		if refusedAccess(e.Message, logs.Lines(), visible) {
			e.Code = abi.CodePermissionDenied
			if !strings.Contains(e.Message, "Permission denied") {
				// The script's own file system hides or freezes what is
				// outside the grant; say what that means.
				e.Message = "Permission denied by the sandbox (outside the grant): " + e.Message
			}
		}
		return e
	}
	return nil
}

// toolError builds TOOL_ERROR for a non-zero exit, using the message of
// a {"error":{"code","message"}} object on stdout when there is one.
func toolError(code int, stdout []byte, logs *limitio.Lines) *abi.Error {
	var body struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(bytes.TrimSpace(stdout), &body) == nil && body.Error != nil && body.Error.Message != "" {
		e := abi.Errorf(abi.CodeToolError, "%s", body.Error.Message)
		if body.Error.Code != "" {
			e = e.WithDetails(map[string]string{"toolCode": body.Error.Code})
		}
		return e
	}
	msg := fmt.Sprintf("script exited with status %d", code)
	if ls := logs.Lines(); len(ls) > 1 {
		msg += ": " + ls[len(ls)-1]
	}
	return abi.Errorf(abi.CodeToolError, "%s", msg)
}

// refusedAccess recognises the interpreters' reports of an access the
// kernel refused (Landlock answers EACCES; the host is not told, so the
// bridge reads the tool's own error).
//
// In its file system of its own, a path outside the grant does not exist
// (ENOENT) and a read-only one cannot change (EROFS): a "no such file"
// naming a path that lies outside every visible folder, or any "read-only
// file system", is a refused access too. A missing file inside a granted
// folder stays the tool's own error.
func refusedAccess(msg string, lines []string, visible []isolate.Rule) bool {
	for _, l := range append(lines, msg) {
		if strings.Contains(l, "Permission denied") || strings.Contains(l, "EACCES") ||
			strings.Contains(l, "Operation not permitted") || strings.Contains(l, "EPERM") ||
			strings.Contains(l, "Read-only file system") || strings.Contains(l, "EROFS") {
			return true
		}
		if visible == nil {
			continue
		}
		for _, m := range missingPath.FindAllStringSubmatch(l, -1) {
			if !insideAny(m[1], visible) {
				return true
			}
		}
	}
	return false
}

// missingPath finds the path of a Python or Node "no such file" error.
var missingPath = regexp.MustCompile(`(?:No such file or directory|ENOENT)[^'\n]*'(/[^'\n]*)'`)

// insideAny reports whether path lies in (or is) one of the rules' paths.
func insideAny(path string, rules []isolate.Rule) bool {
	for _, r := range rules {
		if path == r.Path || strings.HasPrefix(path, strings.TrimSuffix(r.Path, "/")+"/") {
			return true
		}
	}
	return false
}

// memoryExhausted recognises the interpreters' out-of-memory reports.
func memoryExhausted(lines []string) bool {
	for _, l := range lines {
		if strings.Contains(l, "MemoryError") || strings.Contains(l, "heap out of memory") ||
			strings.Contains(l, "std::bad_alloc") || strings.Contains(l, "Cannot allocate memory") {
			return true
		}
	}
	return false
}

// limits fills the grant's zero limits with the defaults.
func (p *prepared) limits() policy.Limits {
	l := p.grant.Limits
	if l.Timeout <= 0 {
		l.Timeout = defaultTimeout
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = defaultMemory
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = defaultMaxOutput
	}
	return l
}

// rlimits derives the child's rlimits from the call's limits.
func (p *prepared) rlimits(l policy.Limits) isolate.Limits {
	as := l.MemoryBytes
	if p.interp.lang != LangPython {
		as += jsReservation
	}
	return isolate.Limits{
		AddressSpace: as,
		Data:         l.MemoryBytes,
		Processes:    maxProcesses,
		FileSize:     maxFileSize,
		OpenFiles:    maxOpenFiles,
		CPUSeconds:   uint64((l.Timeout+time.Second-1)/time.Second) + 1,
	}
}

// args is the interpreter's argv after the program, which runs script
// (the staged copy, verified.go).
//
// Node gets no --max-old-space-size: measured here, the flag alone costs
// node 8-10 ms of CPU at start-up (a quarter of an echo call), and
// RLIMIT_DATA already stops the heap, with V8's "heap out of memory"
// report that maps to MEMORY_LIMIT.
func (p *prepared) args(script string) []string {
	switch p.interp.lang {
	case LangPython:
		// -B: the tool folder is read-only, do not try to write .pyc.
		return []string{"-B", script}
	}
	return []string{script}
}

// exe is the program to start: the venv's interpreter when there is one.
func (p *prepared) exe() string {
	if p.deps != nil && p.deps.python != "" {
		return p.deps.python
	}
	return p.interp.exe
}

// env is the scrubbed environment of the child: the granted variables and
// this call's (credentials), then the fixed ones (which a grant cannot override, except LANG).
func (p *prepared) env(tmp string, call map[string]string) []string {
	m := map[string]string{"LANG": "C.UTF-8"}
	for k, v := range p.grant.Env {
		m[k] = v
	}
	for k, v := range call {
		m[k] = v
	}
	m["PATH"] = systemPath
	m["HOME"] = tmp
	m["TMPDIR"] = tmp
	m["AGENTHOST_WORKSPACE"] = p.grant.Workspace
	if p.deps != nil && p.deps.nodePath != "" {
		m["NODE_PATH"] = p.deps.nodePath
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// rules adds the runtime's files to the grant's file rules.
func (p *prepared) rules(grantRules []isolate.Rule) []isolate.Rule {
	rules := append([]isolate.Rule{}, runtimeFiles...)
	for _, root := range p.interp.roots {
		rules = append(rules, isolate.Rule{Path: root, Access: isolate.Read | isolate.Exec})
	}
	if p.deps != nil {
		rules = append(rules, isolate.Rule{Path: p.deps.dir, Access: isolate.Read | isolate.Exec})
	}
	return append(rules, grantRules...)
}

// isolationSummary says which protections apply to the call.
func (p *prepared) isolationSummary() string {
	f := *p.r.feat()
	var on []string
	if f.LandlockABI > 0 {
		on = append(on, fmt.Sprintf("landlock ABI %d", f.LandlockABI))
	}
	if runtime.GOOS == "linux" {
		on = append(on, isolate.ProtNoNewPrivs)
	}
	if f.Namespaces {
		if !f.Root {
			on = append(on, isolate.ProtUserNS)
		}
		on = append(on, isolate.ProtNetNS, isolate.ProtPidNS)
		if len(p.grant.Hosts) > 0 {
			on = append(on, isolate.ProtEgress)
		}
	}
	if f.Root {
		on = append(on, isolate.ProtUnprivileged)
	}
	if f.Prlimit != "" {
		on = append(on, isolate.ProtRlimits)
	}
	s := "applied " + strings.Join(on, ", ")
	if len(p.missing) > 0 {
		s += "; DEGRADED (allowed by policy), missing " + strings.Join(p.missing, "; ")
	}
	return s
}
