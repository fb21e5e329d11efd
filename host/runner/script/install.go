package script

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/host/internal/isolate"
)

// installer runs a tool's dependency installers (pip, npm) inside the same
// sandbox as a call: as the unprivileged per-call user of a root host,
// under Landlock (the tool's folder read-only, the dependency folder
// read-write, the runtime's own files read-only), in fresh network and
// PID namespaces, with rlimits and an empty environment. Nothing a tool
// ships runs outside its sandbox or as root, even while installing.
type installer struct {
	r       *Runner
	toolDir string
	dir     string
	in      *interpreter
	uid     uint32
	took    bool
	// work is the installers' working folder, HOME and TMPDIR: under the
	// runner's scratch folder, which the per-call user can reach before it
	// holds any capability (the dependency folder, in the host's private
	// cache, it reaches only through its capabilities after exec).
	work string
}

// installerFiles are the system files pip and npm read besides the
// interpreter's (the distribution's name for pip's user agent, the
// certificate store npm loads at start-up). Missing ones are skipped.
var installerFiles = []isolate.Rule{
	{Path: "/etc/os-release", Access: isolate.Read},
	{Path: "/usr/lib/os-release", Access: isolate.Read},
	{Path: "/etc/debian_version", Access: isolate.Read},
	{Path: "/etc/lsb-release", Access: isolate.Read},
	{Path: "/etc/ssl/certs", Access: isolate.Read},
	{Path: "/etc/nsswitch.conf", Access: isolate.Read},
	{Path: "/etc/passwd", Access: isolate.Read},
	{Path: "/etc/mime.types", Access: isolate.Read},
}

// Install limits: generous, since installers unpack archives.
var installLimits = isolate.Limits{
	AddressSpace: 4 << 30,
	Data:         2 << 30,
	Processes:    64,
	FileSize:     1 << 30,
	OpenFiles:    1024,
	CPUSeconds:   300,
}

// run runs prog with args in the sandbox and returns the tail of its
// output as the error on failure.
func (inst *installer) run(ctx context.Context, prog string, args ...string) error {
	r := inst.r
	if err := inst.claim(ctx); err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return fmt.Errorf("installer %s: %w", prog, err)
	}
	rules := append([]isolate.Rule{}, runtimeFiles...)
	rules = append(rules, installerFiles...)
	for _, root := range inst.in.roots {
		rules = append(rules, isolate.Rule{Path: root, Access: isolate.Read | isolate.Exec})
	}
	rules = append(rules,
		// the installer's own package (npm is a node script in its folder)
		isolate.Rule{Path: filepath.Dir(filepath.Dir(real)), Access: isolate.Read | isolate.Exec},
		isolate.Rule{Path: inst.toolDir, Access: isolate.Read},
		isolate.Rule{Path: inst.dir, Access: isolate.Read | isolate.Write | isolate.Exec},
		isolate.Rule{Path: inst.work, Access: isolate.Read | isolate.Write},
	)
	if node, err := exec.LookPath("node"); err == nil && inst.in.lang != LangPython {
		if nr, err := filepath.EvalSymlinks(node); err == nil {
			rules = append(rules, isolate.Rule{Path: filepath.Dir(filepath.Dir(nr)), Access: isolate.Read | isolate.Exec})
		}
	}
	var out bytes.Buffer
	cfg := &isolate.Config{
		Path: real, Args: args,
		Env: []string{"PATH=" + systemPath, "HOME=" + inst.work, "TMPDIR=" + inst.work, "LANG=C.UTF-8",
			"npm_config_cache=" + filepath.Join(inst.work, ".npm-cache"), "npm_config_update_notifier=false",
			"PIP_NO_INPUT=1", "PYTHONDONTWRITEBYTECODE=1"},
		Dir:    inst.work,
		Stdin:  bytes.NewReader(nil),
		Stdout: &out, Stderr: &out,
		UID: inst.uid,

		UserNamespaces: &r.userns,
	}
	f := *r.feat()
	if f.LandlockABI > 0 {
		cfg.Landlock, cfg.Rules = true, rules
	}
	cfg.Namespaces = f.Namespaces
	if f.Root && cfg.Landlock {
		base, _ := r.scratch.dirFor(true)
		cfg.PrivateFS, cfg.Scratch = true, base
	}
	cfg.Seccomp = f.Seccomp
	if f.Prlimit != "" {
		cfg.Prlimit, cfg.Limits = f.Prlimit, installLimits
	}
	ex, err := isolate.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(prog), err)
	}
	if ex.Code != 0 || ctx.Err() != nil {
		tail := strings.TrimSpace(out.String())
		if len(tail) > 2000 {
			tail = "…" + tail[len(tail)-2000:]
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w: %s", filepath.Base(prog), strings.Join(args, " "), ctx.Err(), tail)
		}
		return fmt.Errorf("%s %s: exit status %d: %s", filepath.Base(prog), strings.Join(args, " "), ex.Code, tail)
	}
	return nil
}

// claim makes the working folder and, on a root host, takes a per-call uid
// for the whole install and hands it the dependency and working folders.
func (inst *installer) claim(ctx context.Context) error {
	if inst.work == "" {
		base, err := inst.r.scratch.dirFor(inst.r.uids != nil)
		if err != nil {
			return fmt.Errorf("install: %w", err)
		}
		if inst.work, err = os.MkdirTemp(base, "agenthost-install-"); err != nil {
			return fmt.Errorf("install: %w", err)
		}
	}
	if inst.took || inst.r.uids == nil {
		return nil
	}
	select {
	case inst.uid = <-inst.r.uids:
	case <-ctx.Done():
		return fmt.Errorf("install: wait for a sandbox slot: %w", ctx.Err())
	}
	inst.took = true
	if err := chownTree(inst.work, int(inst.uid)); err != nil {
		return err
	}
	return chownTree(inst.dir, int(inst.uid))
}

// finish gives the dependency folder back to the host's user, so a later
// call running as the same uid cannot change what later calls load, and
// returns the uid.
func (inst *installer) finish() error {
	if inst.work != "" {
		_ = os.RemoveAll(inst.work)
		inst.work = ""
	}
	if !inst.took {
		return nil
	}
	inst.r.uids <- inst.uid
	inst.took = false
	return chownTree(inst.dir, os.Geteuid())
}

func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}
