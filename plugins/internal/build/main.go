// Command build builds every first-party plugin that a manifest under the
// toolpacks folder refers to (see package toolpack). It is what
// `make toolpacks` runs before the digests are rewritten:
//
//	go run ./plugins/internal/build [-toolpacks toolpacks] [-plugins plugins]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/agenthost/agenthost/plugins/internal/toolpack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, builds the targets and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("build", flag.ContinueOnError)
	fset.SetOutput(stderr)
	toolpacks := fset.String("toolpacks", "toolpacks", "folder of toolpack manifests (scanned recursively)")
	plugins := fset.String("plugins", "plugins", "folder of plugin packages")
	if err := fset.Parse(args); err != nil {
		return 2
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "build: unexpected arguments %q\n", fset.Args())
		return 2
	}
	targets, unused, err := toolpack.Targets(*toolpacks, *plugins)
	if err != nil {
		fmt.Fprintf(stderr, "build: %v\n", err)
		return 1
	}
	if len(unused) > 0 {
		fmt.Fprintf(stderr, "build: warning: no manifest under %s uses the plugins %s; they are not built (add <name>.tool.json with handler.module \"<name>.wasm\")\n", *toolpacks, strings.Join(unused, ", "))
	}
	for _, t := range targets {
		if err := toolpack.Build(ctx, ".", t, t.Out); err != nil {
			fmt.Fprintf(stderr, "build: %v\n", err)
			return 1
		}
		st, err := os.Stat(t.Out)
		if err != nil {
			fmt.Fprintf(stderr, "build: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%-40s %9d bytes  %s\n", t.Out, st.Size(), strings.Join(t.ToolIDs, ", "))
	}
	return 0
}
