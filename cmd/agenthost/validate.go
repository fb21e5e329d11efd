package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/registry"
)

func validateCommand() command {
	return command{
		name: "validate", usage: "validate PATH... [--write-digests]", summary: "check manifests: schema, paths, digest, examples",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.writeDigests, "write-digests", false, "first rewrite each wasm manifest's handler.sha256 from its module")
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
		fmt.Fprintf(e.stdout, "ok   %s (%s %s)\n", p, t.ToolID, t.Version)
	}
	fmt.Fprintf(e.stdout, "%d manifests, %d invalid\n", len(paths), failed)
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
