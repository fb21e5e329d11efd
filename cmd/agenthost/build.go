package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/internal/toolchain"
)

func buildCommand() command {
	return command{
		name: "build", usage: "build DIR",
		summary: "build a tool folder's module with its language's toolchain, pin its sha256 in the manifest, then run its examples (as test)",
		run:     runBuild,
	}
}

// runBuild builds the WebAssembly module of each wasm manifest in DIR
// (the folder's language is told by its files, toolchain.Detect), writes
// the module's digest into the manifest, and runs the examples of the
// folder as `agenthost test DIR` does. A script tool has nothing to
// build. A missing toolchain is a usage error naming what to install.
func runBuild(ctx context.Context, e *env, args []string) error {
	if len(args) != 1 {
		return usageError{"build takes one tool folder"}
	}
	dir := args[0]
	paths, err := filepath.Glob(filepath.Join(dir, "*"+manifestSuffix))
	if err != nil || len(paths) == 0 {
		return usageError{fmt.Sprintf("%s holds no *%s", dir, manifestSuffix)}
	}
	sort.Strings(paths)
	log := e.messages()
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		t, err := manifest.Parse(data, p)
		if err != nil {
			return err
		}
		if t.Handler.Type != manifest.HandlerWasm {
			fmt.Fprintf(log, "agenthost: %s: handler %s, nothing to build\n", t.ToolID, t.Handler.Type)
			continue
		}
		lang, src, err := toolchain.Detect(dir)
		if err != nil {
			return usageError{err.Error()}
		}
		steps, err := toolchain.Steps(ctx, lang, dir, src, filepath.FromSlash(t.Handler.Module))
		if errors.Is(err, toolchain.ErrMissing) {
			return usageError{fmt.Sprintf("build %s: %v; install %s", t.ToolID, err, toolchain.Needs(lang))}
		}
		if err != nil {
			return usageError{err.Error()}
		}
		for _, s := range steps {
			fmt.Fprintf(log, "agenthost: %s: %s\n", t.ToolID, escapeText(fmt.Sprint(s.Args)))
		}
		if err := toolchain.Run(ctx, dir, steps, log); err != nil {
			return fmt.Errorf("build %s: %w", t.ToolID, err)
		}
		changed, err := manifest.WriteDigest(p)
		if err != nil {
			return err
		}
		if changed {
			fmt.Fprintf(log, "agenthost: %s: pinned the new module's sha256 in %s\n", t.ToolID, p)
		}
	}
	return runTest(ctx, e, []string{dir})
}
