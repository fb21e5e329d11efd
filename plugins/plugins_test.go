// Package plugins_test builds every first-party plugin for wasip1, checks
// the digests of the committed manifests against the fresh builds, and
// runs every example of the wasi-command tools on raw wazero (no agenthost
// runner), with plugins/testdata/workspace mounted read-only at
// /workspace, the manifest's folder at /tool and a scratch folder at /tmp:
// as the reactors `make toolpacks` builds (the runner's fast path) and, for
// some, as commands.
// (Extism plugins are run by host/runner/extism's tests.)
package plugins_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/plugins/internal/toolpack"
)

// workspace is the folder mounted at /workspace for the examples.
const workspace = "testdata/workspace"

// built is one freshly built module and the manifests that use it.
type built struct {
	target toolpack.Target
	wasm   []byte
}

// buildAll builds every plugin into a temporary folder.
func buildAll(t *testing.T) []built {
	t.Helper()
	if testing.Short() {
		t.Skip("building the plugins for wasip1 is slow; skipped with -short")
	}
	targets, unused, err := toolpack.Targets("../toolpacks", ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(unused) > 0 {
		t.Errorf("no manifest uses the plugins %v, so `make toolpacks` does not build them", unused)
	}
	n := 0
	for _, tg := range targets {
		if tg.ABI == toolpack.ABIWasiCommand {
			n++
		}
	}
	if n < 9 {
		t.Fatalf("found %d wasi-command plugin modules, want at least 9", n)
	}
	dir := t.TempDir()
	out := make([]built, 0, len(targets))
	for _, tg := range targets {
		// Build relative to the module root so the package path is the
		// same as `make toolpacks` uses.
		tg.Plugin = filepath.Join("plugins", tg.Plugin)
		file := filepath.Join(dir, filepath.Base(tg.Out))
		if err := toolpack.Build(context.Background(), "..", tg, file); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, built{target: tg, wasm: b})
	}
	return out
}

func readManifest(t *testing.T, path string) *manifest.Tool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest.Tool
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("manifest %s: %v", path, err)
	}
	m.Path = path
	m.Dir = filepath.Dir(path)
	return &m
}

// runtimes hands out wazero runtimes by memory cap, sharing wazero's
// on-disk compilation cache (keyed by module digest and wazero version),
// so repeated test runs skip the compiler.
type runtimes struct {
	cache wazero.CompilationCache
	byCap map[uint32]wazero.Runtime
}

func newRuntimes(t *testing.T) *runtimes {
	t.Helper()
	cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(os.TempDir(), "agenthost-plugins-test-wazero"))
	if err != nil {
		t.Fatal(err)
	}
	r := &runtimes{cache: cache, byCap: map[uint32]wazero.Runtime{}}
	t.Cleanup(func() {
		for _, rt := range r.byCap {
			_ = rt.Close(context.Background())
		}
	})
	return r
}

// forTool returns a runtime whose memory cap is the tool's requested
// limits.memoryMb (wazero's 4 GiB default if none).
func (r *runtimes) forTool(m *manifest.Tool) wazero.Runtime {
	pages := uint32(65536)
	if m.SecurityContext != nil && m.SecurityContext.Limits != nil && m.SecurityContext.Limits.MemoryMb > 0 {
		pages = uint32(m.SecurityContext.Limits.MemoryMb * 16) // 64 KiB pages
	}
	if rt, ok := r.byCap[pages]; ok {
		return rt
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(r.cache).WithMemoryLimitPages(pages))
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	// The code tools import agenthost_tools.call (tools as functions);
	// their examples call no tool, so a call here is a test failure.
	_, err := rt.NewHostModuleBuilder("agenthost_tools").NewFunctionBuilder().
		WithFunc(func(_ context.Context, _, _, _, _, _, _ uint32) uint64 { panic("an example called a tool") }).
		Export("call").Instantiate(ctx)
	if err != nil {
		panic(err)
	}
	r.byCap[pages] = rt
	return rt
}

func TestToolpacks(t *testing.T) {
	mods := buildAll(t)
	rts := newRuntimes(t)
	for _, mod := range mods {
		sum := sha256.Sum256(mod.wasm)
		digest := hex.EncodeToString(sum[:])
		for _, path := range mod.target.Manifests {
			m := readManifest(t, path)
			if mod.target.ABI != toolpack.ABIWasiCommand {
				t.Run(m.ToolID, func(t *testing.T) { checkDigest(t, m, digest) })
				continue
			}
			t.Run(m.ToolID, func(t *testing.T) {
				checkManifest(t, m, digest)
				runExamples(t, rts.forTool(m), mod.wasm, m)
			})
		}
	}
}

// TestCommandBuilds builds some plugins as WASI commands (_start, the
// runner's slow path) instead of the reactors `make toolpacks` builds, and
// runs their examples: the same plugin source must behave the same either
// way.
func TestCommandBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("building the plugins for wasip1 is slow; skipped with -short")
	}
	rts := newRuntimes(t)
	dir := t.TempDir()
	for _, name := range []string{"echo", "fs-read", "json-query"} {
		t.Run(name, func(t *testing.T) {
			tg := toolpack.Target{Plugin: filepath.Join("plugins", name), ABI: toolpack.ABIWasiCommand}
			file := filepath.Join(dir, name+".wasm")
			if err := toolpack.Build(context.Background(), "..", tg, file); err != nil {
				t.Fatal(err)
			}
			wasm, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			paths, err := filepath.Glob(filepath.Join("../toolpacks/*", name+".tool.json"))
			if err != nil || len(paths) != 1 {
				t.Fatalf("manifest of %s: %v %v", name, paths, err)
			}
			m := readManifest(t, paths[0])
			runExamples(t, rts.forTool(m), wasm, m)
		})
	}
}

// runExamples runs every example of m on wasm: the input must match
// parameters, the output must match output and expectedOutput.
func runExamples(t *testing.T, rt wazero.Runtime, wasm []byte, m *manifest.Tool) {
	t.Helper()
	compiled, err := rt.CompileModule(context.Background(), wasm)
	if err != nil {
		t.Fatalf("compile %s: %v", m.Handler.Module, err)
	}
	params := compileSchema(t, m.Parameters)
	output := compileSchema(t, m.Output)
	if len(m.Examples) == 0 {
		t.Fatal("manifest has no examples")
	}
	for i, ex := range m.Examples {
		t.Run(exampleName(i, ex), func(t *testing.T) {
			validate(t, "example input", params, ex.Input)
			got, code, logs := runWasm(t, rt, compiled, m.Dir, ex.Input)
			if code != 0 {
				t.Fatalf("exit code %d, stdout %s, stderr %s", code, got, logs)
			}
			validate(t, "output", output, got)
			if ex.ExpectedOutput != nil {
				validate(t, "expectedOutput", output, ex.ExpectedOutput)
				if !jsonEqual(t, got, ex.ExpectedOutput) {
					t.Errorf("output\n got: %s\nwant: %s", bytes.TrimSpace(got), ex.ExpectedOutput)
				}
			}
		})
	}
}

// checkDigest checks the committed digest against a fresh build.
func checkDigest(t *testing.T, m *manifest.Tool, digest string) {
	t.Helper()
	if m.Handler.SHA256 != digest {
		t.Errorf("handler.sha256 = %s, but a fresh build of %s is %s: run `make toolpacks` (see docs/TOOLS.md, digest policy)", m.Handler.SHA256, m.Handler.Module, digest)
	}
}

// checkManifest checks the digest and the house rules for first-party
// manifests.
func checkManifest(t *testing.T, m *manifest.Tool, digest string) {
	t.Helper()
	checkDigest(t, m, digest)
	if m.Version != "1.0.0" {
		t.Errorf("version = %q, want 1.0.0", m.Version)
	}
	if len(m.Description) < 80 {
		t.Errorf("description is %d characters; tell the model what the tool does and when to use it", len(m.Description))
	}
	if len(m.Tags) == 0 {
		t.Error("no tags")
	}
	if m.SecurityContext == nil {
		t.Error("no securityContext (say what the tool needs, even if nothing)")
	}
}

func exampleName(i int, ex manifest.Example) string {
	name := ex.Description
	if name == "" {
		name = "example " + strconv.Itoa(i+1)
	}
	return strings.ReplaceAll(name, " ", "_")
}

func compileSchema(t *testing.T, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	if raw == nil {
		t.Fatal("schema missing")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://schema.json")
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	return s
}

func validate(t *testing.T, what string, s *jsonschema.Schema, raw []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s is not JSON: %v: %s", what, err, raw)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s does not match its schema: %v", what, err)
	}
}

// runWasm runs one call: args (re-encoded compact with sorted keys, as the
// host sends them) on stdin, a fresh instance, the standard mounts, memory
// capped by the runtime. A command runs _start; a reactor runs
// _initialize, then agenthost_init and agenthost_call, whose result is
// the exit code.
func runWasm(t *testing.T, rt wazero.Runtime, compiled wazero.CompiledModule, toolDir string, args json.RawMessage) (stdout []byte, exit uint32, stderr string) {
	t.Helper()
	ctx := context.Background()
	in := canonical(t, args)
	var out, errOut bytes.Buffer
	fsc := wazero.NewFSConfig().
		WithReadOnlyDirMount(workspace, "/workspace").
		WithReadOnlyDirMount(toolDir, "/tool").
		WithDirMount(t.TempDir(), "/tmp")
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("tool").
		WithStdin(bytes.NewReader(in)).
		WithStdout(&out).
		WithStderr(&errOut).
		WithFSConfig(fsc)
	_, reactor := compiled.ExportedFunctions()["_initialize"]
	if reactor {
		cfg = cfg.WithStartFunctions("_initialize")
	}
	mod, err := rt.InstantiateModule(ctx, compiled, cfg)
	if err == nil && reactor {
		var res []uint64
		if res, err = mod.ExportedFunction("agenthost_init").Call(ctx); err == nil && res[0] != 0 {
			t.Fatalf("agenthost_init returned %d (stderr %s)", res[0], errOut.String())
		}
		if err == nil {
			if res, err = mod.ExportedFunction("agenthost_call").Call(ctx); err == nil {
				exit = uint32(res[0])
			}
		}
	}
	if mod != nil {
		_ = mod.Close(ctx)
	}
	var exitErr *sys.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		exit = exitErr.ExitCode()
	default:
		t.Fatalf("run: %v (stderr %s)", err, errOut.String())
	}
	return out.Bytes(), exit, errOut.String()
}

// canonical re-encodes a JSON value compactly with sorted object keys,
// keeping numbers as written.
func canonical(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("output is not JSON: %v: %s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(va, vb)
}
