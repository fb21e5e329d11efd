package script

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// Languages of handler.language.
const (
	LangPython = "python"
	LangNode   = "nodejs"
	LangBun    = "bun"
)

// interpreter is a resolved language runtime.
type interpreter struct {
	lang string
	// exe is the real executable (shims and symlinks resolved).
	exe string
	// roots are the folders holding its runtime files, granted read and
	// execute in the sandbox.
	roots []string
}

// interpreters resolves and caches each language's runtime once per
// Runner.
type interpreters struct {
	mu    sync.Mutex
	found map[string]*interpreter
	errs  map[string]error
	// lookPath finds a program in the host's PATH (a seam for tests).
	lookPath func(string) (string, error)
}

// programs maps a language to the program looked up in the host's PATH.
var programs = map[string]string{LangPython: "python3", LangNode: "node", LangBun: "bun"}

func (is *interpreters) get(ctx context.Context, lang string) (*interpreter, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if in, ok := is.found[lang]; ok {
		return in, nil
	}
	if err, ok := is.errs[lang]; ok {
		return nil, err
	}
	in, err := is.resolve(ctx, lang)
	if err != nil {
		is.errs[lang] = err
		return nil, err
	}
	is.found[lang] = in
	return in, nil
}

// resolve finds the interpreter of lang. The program on the host's PATH
// may be a shim (pyenv's is a bash script), which could not run in the
// sandbox and would cost a shell per call, so python and node are asked
// once, outside the sandbox, for their real executable and prefixes.
func (is *interpreters) resolve(ctx context.Context, lang string) (*interpreter, error) {
	prog, ok := programs[lang]
	if !ok {
		return nil, fmt.Errorf("unsupported language %q (want python, nodejs or bun)", lang)
	}
	path, err := is.lookPath(prog)
	if err != nil {
		return nil, fmt.Errorf("language %s needs %s on PATH: %w", lang, prog, err)
	}
	in := &interpreter{lang: lang}
	var roots []string
	switch lang {
	case LangPython:
		var info struct {
			Exe        string `json:"exe"`
			Prefix     string `json:"prefix"`
			BasePrefix string `json:"base_prefix"`
			ExecPrefix string `json:"base_exec_prefix"`
		}
		if err := askJSON(ctx, path, &info, "-c",
			`import sys,json;print(json.dumps({"exe":sys.executable,"prefix":sys.prefix,"base_prefix":sys.base_prefix,"base_exec_prefix":sys.base_exec_prefix}))`); err != nil {
			return nil, err
		}
		in.exe = info.Exe
		roots = []string{info.Prefix, info.BasePrefix, info.ExecPrefix}
	case LangNode:
		var exe string
		if err := askJSON(ctx, path, &exe, "-p", "JSON.stringify(process.execPath)"); err != nil {
			return nil, err
		}
		in.exe = exe
	default:
		in.exe = path
	}
	real, err := filepath.EvalSymlinks(in.exe)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", in.exe, err)
	}
	in.exe = real
	// The install prefix (…/bin/exe → …) holds the runtime's own files.
	roots = append(roots, filepath.Dir(filepath.Dir(real)))
	for _, r := range roots {
		if r == "" || r == "/" {
			continue
		}
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			in.roots = append(in.roots, rr)
		}
	}
	return in, nil
}

// askJSON runs prog with args outside the sandbox (it is the operator's
// own interpreter, asked about itself) and decodes its stdout into v.
func askJSON(ctx context.Context, prog string, v any, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = os.Environ()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("query %s: %w: %s", prog, err, bytes.TrimSpace(stderr.Bytes()))
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("query %s: %w", prog, err)
	}
	return nil
}
