package script

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// deps is a tool's installed dependencies.
type deps struct {
	// dir is the folder granted read and execute to the script.
	dir string
	// nodePath is NODE_PATH for node and bun tools.
	nodePath string
	// python is the venv interpreter for Python tools with a venv.
	python string
}

// Marker files in a dependency cache folder.
const (
	markerOK     = ".agenthost-ok"
	markerFailed = ".agenthost-failed"
)

// installTimeout bounds one dependency installation.
const installTimeout = 5 * time.Minute

// depError is a remembered dependency failure: the tool does not load.
type depError struct{ msg string }

func (e *depError) Error() string { return e.msg }

// installDeps installs the tool's dependencies, once per digest of its
// dependency files, into cacheRoot. It returns nil deps when the tool has
// none. A failure is written next to the cache folder and returned as a
// *depError on every later Prepare without retrying; remove the folder to
// retry.
func (r *Runner) installDeps(ctx context.Context, toolID, toolDir, lang string, in *interpreter) (*deps, error) {
	var files []string
	var kind string
	switch lang {
	case LangNode, LangBun:
		kind, files = "npm", []string{"package.json", "package-lock.json", "npm-shrinkwrap.json"}
	case LangPython:
		kind, files = "venv", []string{"requirements.txt"}
	}
	digest, present, err := digestFiles(toolDir, files)
	if err != nil {
		return nil, err
	}
	if !present {
		return nil, nil
	}
	dir := filepath.Join(r.cacheDir, kind, safeName(toolID), digest[:16])
	d := &deps{dir: dir}
	switch kind {
	case "npm":
		d.nodePath = filepath.Join(dir, "node_modules")
	case "venv":
		d.python = filepath.Join(dir, "bin", "python3")
	}
	r.installMu.Lock()
	defer r.installMu.Unlock()
	if msg, err := os.ReadFile(filepath.Join(dir, markerFailed)); err == nil {
		return nil, &depError{msg: string(msg)}
	}
	if _, err := os.Stat(filepath.Join(dir, markerOK)); err == nil {
		return d, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clear dependency cache: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create dependency cache: %w", err)
	}
	r.log.Debug("installing script dependencies", "tool", toolID, "kind", kind, "dir", dir)
	ictx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()
	inst := &installer{r: r, toolDir: toolDir, dir: dir, in: in}
	var ierr error
	switch kind {
	case "npm":
		ierr = installNpm(ictx, inst)
	case "venv":
		ierr = installVenv(ictx, inst)
	}
	if err := inst.finish(); err != nil && ierr == nil {
		ierr = err
	}
	if ierr != nil {
		if ctx.Err() != nil {
			// Cancelled by the caller: not the tool's fault, not remembered.
			return nil, fmt.Errorf("install dependencies: %w", ctx.Err())
		}
		msg := fmt.Sprintf("dependency install failed (%s, cached in %s; remove it to retry): %s", kind, dir, ierr)
		_ = os.WriteFile(filepath.Join(dir, markerFailed), []byte(msg), 0o644)
		return nil, &depError{msg: msg}
	}
	if err := os.WriteFile(filepath.Join(dir, markerOK), nil, 0o644); err != nil {
		return nil, fmt.Errorf("mark dependency cache: %w", err)
	}
	return d, nil
}

// installNpm copies package.json (and the lockfile) into dir and installs
// the production dependencies there, inside the sandbox (no network: only
// file: dependencies and packed tarballs in the tool's folder install).
// Lifecycle scripts are never run: they would be tool code.
func installNpm(ctx context.Context, inst *installer) error {
	toolDir, dir := inst.toolDir, inst.dir
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("npm not found: %w", err)
	}
	lock := false
	for _, f := range []string{"package.json", "package-lock.json", "npm-shrinkwrap.json"} {
		b, err := os.ReadFile(filepath.Join(toolDir, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		lock = lock || f != "package.json"
		if f == "package.json" {
			if b, err = absoluteFileDeps(b, toolDir); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	verb := "install"
	if lock {
		verb = "ci"
	}
	return inst.run(ctx, npm, verb, "--prefix", dir, "--omit=dev", "--ignore-scripts", "--offline", "--no-audit", "--no-fund", "--no-update-notifier")
}

// absoluteFileDeps rewrites relative "file:" dependency specs of a
// package.json so that they still point into the tool's folder once the
// file is copied into the cache.
func absoluteFileDeps(pkg []byte, toolDir string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(pkg, &m); err != nil {
		return nil, fmt.Errorf("package.json: %w", err)
	}
	changed := false
	for _, key := range []string{"dependencies", "optionalDependencies"} {
		deps, _ := m[key].(map[string]any)
		for name, v := range deps {
			spec, _ := v.(string)
			if rel, ok := strings.CutPrefix(spec, "file:"); ok && !filepath.IsAbs(rel) {
				deps[name] = "file:" + filepath.Join(toolDir, rel)
				changed = true
			}
		}
	}
	if !changed {
		return pkg, nil
	}
	return json.Marshal(m)
}

// installVenv creates a venv in dir and installs requirements.txt from
// the tool's wheels/ folder only, binary wheels only: PyPI is never
// contacted and no setup.py ever runs (building a source distribution
// would run tool code). A requirement available only as a source
// distribution is a load error that says so.
func installVenv(ctx context.Context, inst *installer) error {
	toolDir, dir, python := inst.toolDir, inst.dir, inst.in.exe
	if err := inst.run(ctx, python, "-m", "venv", "--without-pip", dir); err != nil {
		return err
	}
	err := inst.run(ctx, python, "-m", "pip", "--python", filepath.Join(dir, "bin", "python3"),
		"install", "--only-binary=:all:", "--no-index", "--find-links", filepath.Join(toolDir, "wheels"),
		"--disable-pip-version-check", "--no-input", "--no-cache-dir", "-r", filepath.Join(toolDir, "requirements.txt"))
	if err != nil {
		if sdists := sourceDists(filepath.Join(toolDir, "wheels")); len(sdists) > 0 {
			return fmt.Errorf("wheels/ holds source distributions (%s) and agenthost installs binary wheels only, since building one runs its setup.py; ship a built wheel (.whl) instead: %w", strings.Join(sdists, ", "), err)
		}
	}
	return err
}

// sourceDists lists the source distributions in a wheels folder.
func sourceDists(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".tar.gz") || strings.HasSuffix(n, ".zip") || strings.HasSuffix(n, ".tar.bz2") {
			out = append(out, n)
		}
	}
	return out
}

// digestFiles hashes the named files of dir (name and content) and
// reports whether any exists.
func digestFiles(dir string, names []string) (string, bool, error) {
	h := sha256.New()
	present := false
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", false, fmt.Errorf("read %s: %w", n, err)
		}
		if n == names[0] {
			present = true
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), present, nil
}

// safeName maps a tool ID to a folder name.
func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, id)
}
