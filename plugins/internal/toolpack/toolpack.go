package toolpack

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Target is one module to build.
type Target struct {
	// Plugin is the plugin's package folder, e.g. "plugins/echo".
	Plugin string
	// Out is the module path, e.g. "toolpacks/core/echo.wasm".
	Out string
	// Manifests are the manifests that use the module.
	Manifests []string
	// ToolIDs are their tool IDs, in the same order.
	ToolIDs []string
	// ABI is the guest ABI the manifests declare: "wasi-command" or
	// "extism".
	ABI string
	// Reactor builds a WASI reactor (-buildmode=c-shared: _initialize
	// instead of _start) instead of a command. Targets sets it for every
	// plugin: extism needs it, and a wasi-command plugin written with
	// abi/guest then runs on the runner's fast path (docs/POOLS.md).
	Reactor bool
}

// The guest ABIs a plugin can be built for.
const (
	ABIWasiCommand = "wasi-command"
	ABIExtism      = "extism"
)

// manifestHead is the part of a manifest this package reads.
type manifestHead struct {
	ToolID  string `json:"toolId"`
	Handler struct {
		Type   string `json:"type"`
		Module string `json:"module"`
		ABI    string `json:"abi"`
	} `json:"handler"`
}

// Targets returns the modules to build, sorted by Out, and the names of
// the plugin folders no manifest uses, sorted. toolpacksDir and pluginsDir
// are paths relative to (or under) the module root.
func Targets(toolpacksDir, pluginsDir string) (targets []Target, unused []string, err error) {
	plugins, err := pluginDirs(pluginsDir)
	if err != nil {
		return nil, nil, err
	}
	byOut := map[string]*Target{}
	used := map[string]bool{}
	err = filepath.WalkDir(toolpacksDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".tool.json") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var m manifestHead
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("manifest %s: %w", p, err)
		}
		if m.Handler.Type != "wasm" {
			return nil
		}
		mod := m.Handler.Module
		if filepath.Base(mod) != mod || !strings.HasSuffix(mod, ".wasm") {
			return nil // not a first-party layout; the loader validates it
		}
		name := strings.TrimSuffix(mod, ".wasm")
		if !plugins[name] {
			return nil
		}
		if m.Handler.ABI != ABIWasiCommand && m.Handler.ABI != ABIExtism {
			return fmt.Errorf("manifest %s: module %s: cannot build a Go plugin for handler.abi %q (want %s or %s)", p, mod, m.Handler.ABI, ABIWasiCommand, ABIExtism)
		}
		out := filepath.Join(filepath.Dir(p), mod)
		t := byOut[out]
		if t == nil {
			t = &Target{Plugin: filepath.Join(pluginsDir, name), Out: out, ABI: m.Handler.ABI, Reactor: true}
			byOut[out] = t
		}
		if t.ABI != m.Handler.ABI {
			return fmt.Errorf("manifest %s: module %s is also used by %s with handler.abi %q", p, mod, t.Manifests[0], t.ABI)
		}
		t.Manifests = append(t.Manifests, p)
		t.ToolIDs = append(t.ToolIDs, m.ToolID)
		used[name] = true
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("scan %s: %w", toolpacksDir, err)
	}
	for name := range plugins {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	targets = make([]Target, 0, len(byOut))
	for _, t := range byOut {
		targets = append(targets, *t)
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Out < targets[j].Out })
	return targets, unused, nil
}

// pluginDirs returns the names of the folders under dir that hold Go
// source files other than tests (internal and testdata excluded).
func pluginDirs(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read plugins %s: %w", dir, err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "internal" || e.Name() == "testdata" {
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, e.Name(), "*.go"))
		if err != nil {
			return nil, fmt.Errorf("read plugins %s: %w", dir, err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				names[e.Name()] = true
				break
			}
		}
	}
	return names, nil
}

// BuildArgs are the go command's arguments that build t.Plugin into out.
// -trimpath and -buildvcs=false make the module depend only on the source
// and the toolchain, so a rebuild gives the same bytes (and digest).
// -ldflags=-s -w leaves out the symbol table and debug data: a host
// reads every byte of a module it compiles, and a guest's own stack
// traces come from the Go runtime's tables, which stay.
func BuildArgs(t Target, out string) []string {
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w"}
	if t.Reactor {
		args = append(args, "-buildmode=c-shared")
	}
	return append(args, "-o", out, "./"+filepath.ToSlash(filepath.Clean(t.Plugin)))
}

// Build builds t.Plugin into out (normally t.Out) with the go command
// found on PATH, running in moduleRoot. The go command's output is
// included in the error.
func Build(ctx context.Context, moduleRoot string, t Target, out string) error {
	cmd := exec.CommandContext(ctx, "go", BuildArgs(t, out)...)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", t.Plugin, err, b)
	}
	return nil
}
