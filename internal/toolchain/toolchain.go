// Package toolchain builds a tool's WebAssembly module from its source
// with the toolchain its language needs: Go for wasip1, rustc with a WASI
// standard library, clang with wasi-libc, and AssemblyScript from npm.
// `agenthost build` and the example-guest builder (plugins/internal/guests)
// share it, so a tool author's build and the project's own are the same
// command lines.
//
// A toolchain that is not installed is an error wrapping ErrMissing whose
// text says what to install; callers decide whether that is a skip.
package toolchain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Lang is a language a tool can be written in.
type Lang string

// The languages. Python and JS are script tools: nothing to build.
const (
	Go             Lang = "go"
	Rust           Lang = "rust"
	C              Lang = "c"
	AssemblyScript Lang = "assemblyscript"
	Python         Lang = "python"
	JS             Lang = "js"
)

// Langs lists every language, in the order the CLI documents them.
var Langs = []Lang{Go, Rust, C, AssemblyScript, Python, JS}

// ErrMissing marks a toolchain (or interpreter) that is not installed.
var ErrMissing = errors.New("toolchain not installed")

// Needs says what to install for lang, for error and skip messages.
func Needs(lang Lang) string {
	switch lang {
	case Go:
		return "Go 1.21 or later (GOOS=wasip1)"
	case Rust:
		return "rustc with a WASI standard library: Debian's rustc and libstd-rust-dev-wasm32, or rustup's wasm32-wasip1 target"
	case C:
		return "clang, lld, wasi-libc and libclang-rt-14-dev-wasm32 (Debian)"
	case AssemblyScript:
		return "node and npm (the build installs assemblyscript and @extism/as-pdk from npm)"
	case Python:
		return "python3"
	case JS:
		return "node"
	}
	return "an unknown language"
}

// Step is one command of a build: argv, and extra environment variables
// (KEY=VALUE) on top of the caller's.
type Step struct {
	Args []string
	Env  []string
}

// Steps returns the commands that build src into out, both relative to
// dir, for lang; nil for a script language. A missing toolchain is an
// error wrapping ErrMissing.
func Steps(ctx context.Context, lang Lang, dir, src, out string) ([]Step, error) {
	switch lang {
	case Go:
		return goSteps(out)
	case Rust:
		return rustSteps(ctx, dir, src, out)
	case C:
		return cSteps(src, out)
	case AssemblyScript:
		return asSteps(dir, src, out)
	case Python, JS:
		return nil, nil
	}
	return nil, fmt.Errorf("unknown language %q (want %s)", lang, langList())
}

func langList() string {
	names := make([]string, len(Langs))
	for i, l := range Langs {
		names[i] = string(l)
	}
	return strings.Join(names, ", ")
}

// goSteps builds the Go package in dir as a wasip1 command. The flags
// make the build reproducible (no paths, no VCS stamp, no symbol table),
// so a rebuild keeps the manifest's digest.
func goSteps(out string) ([]Step, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("go: %w", ErrMissing)
	}
	return []Step{{
		Args: []string{gobin, "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, "."},
		Env:  []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOWORK=off"},
	}}, nil
}

// cSteps compiles src with clang against Debian's wasi-libc.
func cSteps(src, out string) ([]Step, error) {
	cc, err := exec.LookPath("clang")
	if err != nil {
		return nil, fmt.Errorf("clang: %w", ErrMissing)
	}
	if _, err := os.Stat("/usr/lib/wasm32-wasi/crt1-command.o"); err != nil {
		return nil, fmt.Errorf("wasi-libc: %w", ErrMissing)
	}
	return []Step{{Args: []string{cc, "--target=wasm32-wasi", "--sysroot=/usr", "-O2", "-s", "-Wl,--strip-all", "-o", out, src}}}, nil
}

// rustSteps picks the first rustc that has a WASI standard library: the
// one on PATH (rustup) and Debian's /usr/bin/rustc, each with the new and
// the old name of the target.
func rustSteps(ctx context.Context, dir, src, out string) ([]Step, error) {
	var candidates []string
	if p, err := exec.LookPath("rustc"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/bin/rustc")
	for _, rc := range candidates {
		for _, target := range []string{"wasm32-wasip1", "wasm32-wasi"} {
			lib, err := exec.CommandContext(ctx, rc, "--target", target, "--print", "target-libdir").Output()
			if err != nil {
				continue
			}
			if libs, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(lib)), "libstd-*.rlib")); len(libs) == 0 {
				continue
			}
			abs, _ := filepath.Abs(dir)
			return []Step{{Args: []string{rc, "--target", target, "-C", "opt-level=2", "-C", "strip=symbols", "-C", "debuginfo=0",
				"--remap-path-prefix=" + abs + "=.", "-o", out, src}}}, nil
		}
	}
	return nil, fmt.Errorf("rustc with a wasm32-wasi standard library: %w", ErrMissing)
}

// asSteps installs the npm dependencies (from the lock file when there is
// one) and compiles src with asc as an Extism plugin; src must export its
// abort handler as myAbort.
func asSteps(dir, src, out string) ([]Step, error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return nil, fmt.Errorf("npm: %w", ErrMissing)
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		return nil, fmt.Errorf("npx: %w", ErrMissing)
	}
	install := []string{npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"}
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err != nil {
		install[1] = "install"
	}
	abort := "abort=" + strings.TrimSuffix(filepath.ToSlash(src), ".ts") + "/myAbort"
	return []Step{
		{Args: install},
		{Args: []string{npx, "asc", src, "--outFile", out, "--use", abort, "--optimize", "--runtime", "stub"}},
	}, nil
}

// Run runs steps in dir, their output going to log, and stops at the
// first that fails.
func Run(ctx context.Context, dir string, steps []Step, log io.Writer) error {
	for _, s := range steps {
		cmd := exec.CommandContext(ctx, s.Args[0], s.Args[1:]...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = log, log
		if len(s.Env) > 0 {
			cmd.Env = append(os.Environ(), s.Env...)
		}
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(s.Args, " "), err)
		}
	}
	return nil
}

// Detect tells a tool folder's language and main source (relative to
// dir) from its files: go.mod is Go (the package in dir), package.json
// with assembly/index.ts is AssemblyScript, a single *.rs file (or
// main.rs) is Rust, a single *.c file (or main.c) is C.
func Detect(dir string) (Lang, string, error) {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	switch {
	case has("go.mod"):
		return Go, ".", nil
	case has("package.json") && has(filepath.Join("assembly", "index.ts")):
		return AssemblyScript, "assembly/index.ts", nil
	}
	for _, c := range []struct {
		lang Lang
		ext  string
	}{{Rust, ".rs"}, {C, ".c"}} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"+c.ext))
		switch {
		case has("main" + c.ext):
			return c.lang, "main" + c.ext, nil
		case len(files) == 1:
			return c.lang, filepath.Base(files[0]), nil
		case len(files) > 1:
			return "", "", fmt.Errorf("%s holds several %s files and no main%s: say which is the tool's source by naming it main%s", dir, c.ext, c.ext, c.ext)
		}
	}
	return "", "", fmt.Errorf("%s has no source agenthost knows how to build (go.mod, package.json with assembly/index.ts, a .rs or a .c file)", dir)
}
