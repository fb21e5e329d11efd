package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/registry"
)

func validateCommand() command {
	return command{
		name: "validate", usage: "validate PATH... [--write-digests] [--run-examples]", summary: "check manifests: schema, paths, digest, examples (--run-examples runs them)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.writeDigests, "write-digests", false, "first rewrite each wasm manifest's handler.sha256 from its module")
			fs.BoolVar(&e.runExamples, "run-examples", false, "also run each example and compare its expectedOutput")
		},
		run: runValidate,
	}
}

func runValidate(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usageError{"validate takes one or more manifest files or folders"}
	}
	var paths []string
	for _, a := range args {
		found, err := manifestPaths(a)
		if err != nil {
			return usageError{err.Error()}
		}
		paths = append(paths, found...)
	}
	failed := 0
	var valid []*manifest.Tool
	for _, p := range paths {
		if e.writeDigests {
			changed, err := manifest.WriteDigest(p)
			if err != nil {
				fmt.Fprintf(e.stdout, "FAIL %s: %s\n", p, err)
				failed++
				continue
			}
			if changed {
				fmt.Fprintf(e.messages(), "agenthost: updated sha256 in %s\n", p)
			}
		}
		t, err := manifest.Load(p)
		if err != nil {
			fmt.Fprintf(e.stdout, "FAIL %s: %s\n", p, err)
			failed++
			continue
		}
		fmt.Fprintf(e.stdout, "ok   %s (%s %s)\n", p, t.ToolID, escapeText(t.Version))
		valid = append(valid, t)
	}
	fmt.Fprintf(e.stdout, "%d manifests, %d invalid\n", len(paths), failed)
	if e.runExamples && len(valid) > 0 {
		if err := e.runManifestExamples(ctx, args, valid); err != nil {
			return err
		}
	}
	if failed > 0 {
		return exitError{1}
	}
	return nil
}

// runManifestExamples runs the examples of the valid manifests through a
// host over the validated folders (so the policy applies as in use) and
// prints one line per example and a "N passed, M failed" total.
func (e *env) runManifestExamples(ctx context.Context, args []string, tools []*manifest.Tool) error {
	var dirs []string
	for _, a := range args {
		if st, err := os.Stat(a); err == nil && !st.IsDir() {
			a = filepath.Dir(a)
		}
		dirs = append(dirs, a)
	}
	saved := e.dirs
	e.dirs = dirs
	h, err := e.newHost(ctx)
	e.dirs = saved
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	passed, failed := 0, 0
	for _, t := range tools {
		results, err := h.RunExamples(ctx, t.ToolID+"@"+t.Version)
		if err != nil {
			fmt.Fprintf(e.stdout, "FAIL %s: %s\n", t.ToolID, escapeText(err.Error()))
			failed++
			continue
		}
		for _, r := range results {
			if r.Passed {
				passed++
				fmt.Fprintf(e.stdout, "ok   %s example %d: %s\n", r.ToolID, r.Index+1, escapeText(r.Description))
				continue
			}
			failed++
			fmt.Fprintf(e.stdout, "FAIL %s example %d: %s: %s\n", r.ToolID, r.Index+1, escapeText(r.Description), escapeText(r.Reason))
		}
	}
	fmt.Fprintf(e.stdout, "examples: %d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return exitError{1}
	}
	return nil
}

// manifestPaths expands a file or a folder (recursively) into manifest paths.
func manifestPaths(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	paths, failures := registry.Scan(p)
	if len(failures) > 0 {
		return nil, failures[0]
	}
	return paths, nil
}
