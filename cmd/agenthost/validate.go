package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/registry"
	"github.com/agenthost/agenthost/host/workflow"
)

func validateCommand() command {
	return command{
		name: "validate", usage: "validate PATH... [--write-digests] [--run-examples] [--json]", summary: "check manifests: schema, paths, digest, examples (--run-examples runs them)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.writeDigests, "write-digests", false, "first rewrite each wasm manifest's handler.sha256 from its module")
			fs.BoolVar(&e.runExamples, "run-examples", false, "also run each example and compare its expectedOutput")
			fs.BoolVar(&e.asJSON, "json", false, "print JSON: each manifest's result, and the examples' with --run-examples")
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
	var rep validateReport
	out := e.stdout
	if e.asJSON {
		out = io.Discard
	}
	for _, p := range paths {
		if e.writeDigests && !strings.HasSuffix(p, workflow.Suffix) {
			changed, err := manifest.WriteDigest(p)
			if err != nil {
				fmt.Fprintf(out, "FAIL %s: %s\n", p, err)
				rep.Manifests = append(rep.Manifests, validated{Path: p, Error: err.Error()})
				failed++
				continue
			}
			if changed {
				fmt.Fprintf(e.messages(), "agenthost: updated sha256 in %s\n", p)
			}
		}
		t, err := registry.LoadFile(p)
		if err != nil {
			fmt.Fprintf(out, "FAIL %s: %s\n", p, escapeText(err.Error()))
			rep.Manifests = append(rep.Manifests, validated{Path: p, Error: err.Error()})
			failed++
			continue
		}
		fmt.Fprintf(out, "ok   %s (%s %s)\n", p, t.ToolID, escapeText(t.Version))
		rep.Manifests = append(rep.Manifests, validated{Path: p, OK: true, ToolID: t.ToolID, Version: t.Version})
		valid = append(valid, t)
	}
	fmt.Fprintf(out, "%d manifests, %d invalid\n", len(paths), failed)
	rep.Invalid = failed
	var exErr error
	if e.runExamples && len(valid) > 0 {
		rep.Examples, exErr = e.runManifestExamples(ctx, out, args, valid)
	}
	if e.asJSON {
		if err := e.printJSON(rep); err != nil {
			return err
		}
	}
	if exErr != nil {
		return exErr
	}
	if failed > 0 || (rep.Examples != nil && rep.Examples.Failed > 0) {
		return exitError{1}
	}
	return nil
}

// validateReport is what validate --json prints.
type validateReport struct {
	Manifests []validated `json:"manifests"`
	Invalid   int         `json:"invalid"`
	Examples  *testReport `json:"examples,omitempty"`
}

type validated struct {
	Path    string `json:"path"`
	OK      bool   `json:"ok"`
	ToolID  string `json:"toolId,omitempty"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
}

// runManifestExamples runs the examples of the valid manifests through a
// host over the validated folders (so the policy applies as in use) and
// prints one line per example and a "N passed, M failed" total.
func (e *env) runManifestExamples(ctx context.Context, out io.Writer, args []string, tools []*manifest.Tool) (*testReport, error) {
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
		return nil, err
	}
	defer h.Close(ctx)
	rep := &testReport{Failures: []testFailure{}, Skips: []testFailure{}}
	var loaded []*manifest.Tool
	for _, t := range tools {
		mt, err := h.Tool(t.ToolID + "@" + t.Version)
		if err != nil {
			rep.add(out, t.ToolID, outcomeFail, err.Error())
			continue
		}
		loaded = append(loaded, mt)
	}
	if err := e.runExamplesInto(ctx, out, h, loaded, rep); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "examples: %d passed, %d failed, %d skipped\n", rep.Passed, rep.Failed, rep.Skipped)
	return rep, nil
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
