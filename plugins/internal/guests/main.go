// Command guests builds the example guests of examples/guests, one folder
// per language, with that language's own toolchain:
//
//	c/               clang --target=wasm32-wasi with Debian's wasi-libc
//	rust/            rustc --target wasm32-wasip1 (or wasm32-wasi), std only
//	assemblyscript/  npm ci, then asc with the Extism AssemblyScript PDK
//
// A toolchain that is not installed is reported and its guest skipped, so
// `make` works on a machine with Go alone; with AGENTHOST_REQUIRE_GUESTS=1
// (CI sets it) a skipped guest is an error. It is what `make guests` runs
// before the digests are rewritten:
//
//	go run ./plugins/internal/guests [-dir examples/guests]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// guest is one example guest: its folder, what it needs and how to build it.
type guest struct {
	dir   string
	out   string
	needs string // the Debian / npm packages to install, for the skip message
	build func(ctx context.Context, dir string) ([][]string, error)
}

var guests = []guest{
	{dir: "c", out: "slug.wasm", needs: "clang lld wasi-libc libclang-rt-14-dev-wasm32 (Debian)", build: buildC},
	{dir: "rust", out: "wrap.wasm", needs: "rustc libstd-rust-dev-wasm32 (Debian), or a rustup toolchain with the wasm32-wasip1 target", build: buildRust},
	{dir: "assemblyscript", out: "vowels.wasm", needs: "node and npm", build: buildAssemblyScript},
}

// errMissing marks a toolchain that is not installed.
var errMissing = errors.New("toolchain not installed")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("guests", flag.ContinueOnError)
	fset.SetOutput(stderr)
	root := fset.String("dir", "examples/guests", "folder of the example guests")
	if err := fset.Parse(args); err != nil || fset.NArg() > 0 {
		return 2
	}
	require := os.Getenv("AGENTHOST_REQUIRE_GUESTS") == "1"
	code := 0
	for _, g := range guests {
		dir := filepath.Join(*root, g.dir)
		steps, err := g.build(ctx, dir)
		if errors.Is(err, errMissing) {
			fmt.Fprintf(stderr, "guests: skipping %s: %v; install %s\n", g.dir, err, g.needs)
			if require {
				code = 1
			}
			continue
		}
		if err == nil {
			err = runSteps(ctx, dir, steps, stderr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "guests: %s: %v\n", g.dir, err)
			code = 1
			continue
		}
		st, err := os.Stat(filepath.Join(dir, g.out))
		if err != nil {
			fmt.Fprintf(stderr, "guests: %s: %v\n", g.dir, err)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "%-40s %9d bytes\n", filepath.Join(dir, g.out), st.Size())
	}
	return code
}

func runSteps(ctx context.Context, dir string, steps [][]string, stderr io.Writer) error {
	for _, s := range steps {
		cmd := exec.CommandContext(ctx, s[0], s[1:]...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(s, " "), err)
		}
	}
	return nil
}

func buildC(_ context.Context, _ string) ([][]string, error) {
	cc, err := exec.LookPath("clang")
	if err != nil {
		return nil, fmt.Errorf("clang: %w", errMissing)
	}
	if _, err := os.Stat("/usr/lib/wasm32-wasi/crt1-command.o"); err != nil {
		return nil, fmt.Errorf("wasi-libc: %w", errMissing)
	}
	return [][]string{{cc, "--target=wasm32-wasi", "--sysroot=/usr", "-O2", "-s", "-Wl,--strip-all", "-o", "slug.wasm", "slug.c"}}, nil
}

// buildRust picks the first rustc that has a WASI standard library: the
// one on PATH (rustup) and Debian's /usr/bin/rustc, each with the new and
// the old name of the target.
func buildRust(ctx context.Context, dir string) ([][]string, error) {
	var candidates []string
	if p, err := exec.LookPath("rustc"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/bin/rustc")
	for _, rc := range candidates {
		for _, target := range []string{"wasm32-wasip1", "wasm32-wasi"} {
			out, err := exec.CommandContext(ctx, rc, "--target", target, "--print", "target-libdir").Output()
			if err != nil {
				continue
			}
			libs, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "libstd-*.rlib"))
			if len(libs) == 0 {
				continue
			}
			abs, _ := filepath.Abs(dir)
			return [][]string{{rc, "--target", target, "-C", "opt-level=2", "-C", "strip=symbols", "-C", "debuginfo=0",
				"--remap-path-prefix=" + abs + "=.", "-o", "wrap.wasm", "wrap.rs"}}, nil
		}
	}
	return nil, fmt.Errorf("rustc with a wasm32-wasi standard library: %w", errMissing)
}

func buildAssemblyScript(_ context.Context, _ string) ([][]string, error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return nil, fmt.Errorf("npm: %w", errMissing)
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		return nil, fmt.Errorf("npx: %w", errMissing)
	}
	return [][]string{
		{npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"},
		{npx, "asc", "assembly/index.ts", "--outFile", "vowels.wasm", "--use", "abort=assembly/index/myAbort", "--optimize", "--runtime", "stub"},
	}, nil
}
