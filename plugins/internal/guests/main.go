// Command guests builds the example guests of examples/guests, one folder
// per language, with that language's own toolchain:
//
//	c/               clang --target=wasm32-wasi with Debian's wasi-libc
//	rust/            rustc --target wasm32-wasip1 (or wasm32-wasi), std only
//	assemblyscript/  npm ci, then asc with the Extism AssemblyScript PDK
//
// The command lines are internal/toolchain's, which `agenthost build`
// uses too. A toolchain that is not installed is reported and its guest skipped, so
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
	"os/signal"
	"path/filepath"

	"github.com/agenthost/agenthost/internal/toolchain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// guest is one example guest: its folder, language, source and module.
type guest struct {
	dir  string
	lang toolchain.Lang
	src  string
	out  string
}

var guests = []guest{
	{dir: "c", lang: toolchain.C, src: "slug.c", out: "slug.wasm"},
	{dir: "rust", lang: toolchain.Rust, src: "wrap.rs", out: "wrap.wasm"},
	{dir: "assemblyscript", lang: toolchain.AssemblyScript, src: "assembly/index.ts", out: "vowels.wasm"},
}

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
		steps, err := toolchain.Steps(ctx, g.lang, dir, g.src, g.out)
		if errors.Is(err, toolchain.ErrMissing) {
			fmt.Fprintf(stderr, "guests: skipping %s: %v; install %s\n", g.dir, err, toolchain.Needs(g.lang))
			if require {
				code = 1
			}
			continue
		}
		if err == nil {
			err = toolchain.Run(ctx, dir, steps, stderr)
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
