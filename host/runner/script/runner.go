package script

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/isolate"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/hashicorp/go-hclog"
)

// Options configures a [Runner]. The zero value is valid.
type Options struct {
	// Logger receives diagnostics (dependency installs); nil means
	// silent. The caller names it (the host uses "runner.script").
	Logger hclog.Logger
	// CacheDir holds the per-tool dependency caches (npm installs and
	// venvs). Empty means <user cache dir>/agenthost/scripts.
	CacheDir string
}

// Protection is one kernel protection and whether it applies on this
// machine.
type Protection struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Detail    string `json:"detail"`
}

// Protections probes the running kernel and lists which protections a
// script call gets on this machine: Landlock (with its ABI version),
// no_new_privs, user, network and PID namespaces, rlimits and, for a
// root host, the per-call unprivileged uid. It starts one short process
// and takes a few milliseconds.
func Protections() []Protection {
	return convert(isolate.Probe().Protections())
}

func convert(ps []isolate.Protection) []Protection {
	out := make([]Protection, len(ps))
	for i, p := range ps {
		out[i] = Protection(p)
	}
	return out
}

// uidSlots is how many concurrent calls get distinct uids on a root host;
// further calls wait for a free slot.
const uidSlots = 64

// Runner runs external-script tools. It is safe for concurrent use.
type Runner struct {
	log      hclog.Logger
	cacheDir string
	// features are the kernel's protections, probed on first use (the
	// probe starts a process: a host that runs no script never pays it).
	features isolate.Features
	probe    sync.Once
	interps  *interpreters
	// installMu serialises dependency installs (npm and pip are not safe
	// to run twice on one folder).
	installMu sync.Mutex
	// uids hands out the per-call uids of a root host.
	uids chan uint32
	// scratch holds the per-call $TMP folders of a root host.
	scratch scratch
	// userns holds the user namespaces of the per-call uids' idmapped
	// mounts, released at Close.
	userns isolate.UserNamespaces
}

// New returns a Runner. It probes the kernel's protections once, when
// they are first needed.
func New(opts Options) (*Runner, error) {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	cache := opts.CacheDir
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("script runner: no cache dir: %w", err)
		}
		cache = filepath.Join(base, "agenthost", "scripts")
	}
	abs, err := filepath.Abs(cache)
	if err != nil {
		return nil, fmt.Errorf("script runner: cache dir: %w", err)
	}
	r := &Runner{
		log:      log,
		cacheDir: abs,
		interps:  &interpreters{found: map[string]*interpreter{}, errs: map[string]error{}, lookPath: exec.LookPath},
	}
	if os.Geteuid() == 0 {
		// A random base keeps two runners (or two host processes) from
		// sharing uids, and so RLIMIT_NPROC budgets.
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("script runner: %w", err)
		}
		base := uint32(2_000_000_000) + (binary.LittleEndian.Uint32(b[:])%(1_000_000))*uidSlots
		r.uids = make(chan uint32, uidSlots)
		for i := uint32(0); i < uidSlots; i++ {
			r.uids <- base + i
		}
	}
	return r, nil
}

// Protections lists the protections this Runner's calls get (as probed
// when it was created).
func (r *Runner) Protections() []Protection {
	return convert(r.feat().Protections())
}

// Prepare checks the tool and its grant, resolves the interpreter and
// installs the tool's dependencies (once per dependency digest). It
// fails with LOAD_ERROR for an invalid handler or a script path leaving
// the tool's folder, and with PERMISSION_DENIED when the grant needs
// isolation this machine cannot give and does not allow degraded runs,
// or grants network hosts on a machine that cannot enforce the allowlist
// (see docs/SECURITY.md).
func (r *Runner) Prepare(ctx context.Context, tool *manifest.Tool, grant *policy.Grant) (runner.Prepared, error) {
	if tool == nil || grant == nil {
		return nil, abi.Errorf(abi.CodeInternal, "script runner: nil tool or grant")
	}
	fail := func(code abi.Code, format string, args ...any) error {
		return abi.Errorf(code, "%s: %s", tool.ToolID, fmt.Sprintf(format, args...))
	}
	if tool.Handler.Type != manifest.HandlerScript {
		return nil, fail(abi.CodeLoadError, "handler type %q is not %q", tool.Handler.Type, manifest.HandlerScript)
	}
	if grant.Denied {
		return nil, fail(abi.CodePermissionDenied, "the policy denies this tool")
	}
	toolDir := grant.ToolDir
	if toolDir == "" {
		toolDir = tool.Dir
	}
	script, err := resolveScript(toolDir, tool.Handler.ScriptPath)
	if err != nil {
		return nil, fail(abi.CodeLoadError, "%s", err)
	}
	if len(grant.Mounts) > 0 {
		return nil, fail(abi.CodeLoadError, "fileAccess.mounts maps guest paths for WASI guests; scripts see host paths, so mounts are refused rather than ignored")
	}
	if len(grant.Hosts) > 0 && !r.feat().Egress {
		return nil, fail(abi.CodePermissionDenied,
			"the grant lists network hosts, but this host cannot enforce a host allowlist on a subprocess (the egress proxy needs a root host with namespaces); the tool is refused rather than given an unfiltered network (docs/SECURITY.md, Script bridge)")
	}
	missing := r.missingProtections()
	if len(missing) > 0 && !grant.AllowDegraded {
		return nil, fail(abi.CodePermissionDenied, "kernel isolation unavailable (%s) and the policy does not allow degraded isolation (isolation.allowDegraded)", strings.Join(missing, "; "))
	}
	in, err := r.interps.get(ctx, tool.Handler.Language)
	if err != nil {
		return nil, fail(abi.CodeLoadError, "%s", err)
	}
	code, err := verifiedScript(tool, script)
	if err != nil {
		return nil, fail(abi.CodeLoadError, "%s", err)
	}
	p := &prepared{r: r, tool: tool, grant: grant, script: script, code: code, toolDir: toolDir, interp: in, missing: missing}
	d, err := r.installDeps(ctx, tool.ToolID, toolDir, tool.Handler.Language, in)
	if err != nil {
		// A failed install (remembered per digest, see installDeps) is a
		// load error: the tool cannot run until its dependencies change.
		return nil, fail(abi.CodeLoadError, "%s", err)
	}
	p.deps = d
	return p, nil
}

// missingProtections lists the protections this machine lacks.
func (r *Runner) missingProtections() []string {
	var m []string
	for _, p := range r.feat().Protections() {
		// The egress proxy matters only to grants with hosts, checked
		// on its own in Prepare.
		if !p.Available && p.Name != isolate.ProtEgress {
			m = append(m, p.Name+": "+p.Detail)
		}
	}
	return m
}

// resolveScript returns the absolute path of scriptPath inside toolDir,
// refusing absolute paths, ".." and symlinks that lead out.
func resolveScript(toolDir, scriptPath string) (string, error) {
	if scriptPath == "" {
		return "", errors.New("handler.scriptPath is empty")
	}
	if filepath.IsAbs(scriptPath) || strings.HasPrefix(scriptPath, "/") {
		return "", fmt.Errorf("scriptPath %q is absolute; it must be relative to the manifest's folder", scriptPath)
	}
	for _, seg := range strings.Split(filepath.ToSlash(scriptPath), "/") {
		if seg == ".." {
			return "", fmt.Errorf("scriptPath %q contains \"..\"; it must stay inside the manifest's folder", scriptPath)
		}
	}
	if toolDir == "" {
		return "", errors.New("the tool has no folder")
	}
	realDir, err := filepath.EvalSymlinks(toolDir)
	if err != nil {
		return "", fmt.Errorf("tool folder: %w", err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(realDir, scriptPath))
	if err != nil {
		return "", fmt.Errorf("scriptPath %q: %w", scriptPath, err)
	}
	if !within(real, realDir) || real == realDir {
		return "", fmt.Errorf("scriptPath %q resolves to %s, outside the manifest's folder", scriptPath, real)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("scriptPath %q: %w", scriptPath, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("scriptPath %q is not a regular file", scriptPath)
	}
	return real, nil
}

// Interface guards
var (
	_ runner.Runner   = (*Runner)(nil)
	_ runner.Prepared = (*prepared)(nil)
)

// feat returns the kernel's protections, probing them on first use.
func (r *Runner) feat() *isolate.Features {
	r.probe.Do(func() { r.features = isolate.Probe() })
	return &r.features
}
