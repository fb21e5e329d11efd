package toolpack_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/plugins/internal/toolpack"
)

// tree writes files (path → content) under a new temporary folder.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func manifest(id, typ, module, abi string) string {
	return `{"toolId":"` + id + `","handler":{"type":"` + typ + `","module":"` + module + `","abi":"` + abi + `"}}`
}

func TestTargets(t *testing.T) {
	root := tree(t, map[string]string{
		"plugins/echo/main.go":            "package main",
		"plugins/echo/main_test.go":       "package main",
		"plugins/fetch/fetch.go":          "package main",
		"plugins/orphan/main.go":          "package main",
		"plugins/onlytests/x_test.go":     "package main",
		"plugins/internal/lib/lib.go":     "package lib",
		"plugins/testdata/x/main.go":      "package main",
		"toolpacks/core/echo.tool.json":   manifest("core:echo", "wasm", "echo.wasm", "wasi-command"),
		"toolpacks/core/echo2.tool.json":  manifest("core:echo2", "wasm", "echo.wasm", "wasi-command"),
		"toolpacks/web/deep/f.tool.json":  manifest("web:fetch", "wasm", "fetch.wasm", "extism"),
		"toolpacks/third/party.tool.json": manifest("x:party", "wasm", "party.wasm", "wasi-command"),
		"toolpacks/third/sub.tool.json":   manifest("x:sub", "wasm", "lib/sub.wasm", "wasi-command"),
		"toolpacks/scripts/py.tool.json":  `{"toolId":"py:x","handler":{"type":"external-script","scriptPath":"x.py"}}`,
		"toolpacks/core/README.md":        "not a manifest",
	})
	t.Chdir(root)
	targets, unused, err := toolpack.Targets("toolpacks", "plugins")
	if err != nil {
		t.Fatal(err)
	}
	want := []toolpack.Target{
		{Plugin: "plugins/echo", Out: "toolpacks/core/echo.wasm", ABI: "wasi-command", Reactor: true,
			Manifests: []string{"toolpacks/core/echo.tool.json", "toolpacks/core/echo2.tool.json"}, ToolIDs: []string{"core:echo", "core:echo2"}},
		{Plugin: "plugins/fetch", Out: "toolpacks/web/deep/fetch.wasm", ABI: "extism", Reactor: true,
			Manifests: []string{"toolpacks/web/deep/f.tool.json"}, ToolIDs: []string{"web:fetch"}},
	}
	for i := range want {
		want[i].Plugin = filepath.FromSlash(want[i].Plugin)
		want[i].Out = filepath.FromSlash(want[i].Out)
		for j := range want[i].Manifests {
			want[i].Manifests[j] = filepath.FromSlash(want[i].Manifests[j])
		}
	}
	if !reflect.DeepEqual(targets, want) {
		t.Errorf("targets =\n %+v\nwant\n %+v", targets, want)
	}
	if !reflect.DeepEqual(unused, []string{"orphan"}) {
		t.Errorf("unused = %v, want [orphan]", unused)
	}
}

func TestTargetsErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"bad json", map[string]string{"plugins/a/main.go": "", "toolpacks/a.tool.json": "{"}, "manifest toolpacks/a.tool.json"},
		{"unknown abi", map[string]string{"plugins/a/main.go": "", "toolpacks/a.tool.json": manifest("a:a", "wasm", "a.wasm", "wasi-reactor")}, `cannot build a Go plugin for handler.abi "wasi-reactor"`},
		{"abi conflict", map[string]string{
			"plugins/a/main.go":     "",
			"toolpacks/a.tool.json": manifest("a:a", "wasm", "a.wasm", "wasi-command"),
			"toolpacks/b.tool.json": manifest("a:b", "wasm", "a.wasm", "extism"),
		}, "is also used by"},
		{"no plugins folder", map[string]string{"toolpacks/a.tool.json": "{}"}, "read plugins"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(tree(t, tc.files))
			_, _, err := toolpack.Targets("toolpacks", "plugins")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestBuildArgs(t *testing.T) {
	tests := []struct {
		target toolpack.Target
		want   string
	}{
		{toolpack.Target{Plugin: "plugins/echo", ABI: toolpack.ABIWasiCommand}, "build -trimpath -buildvcs=false -ldflags=-s -w -o out.wasm ./plugins/echo"},
		{toolpack.Target{Plugin: "plugins/fetch/", ABI: toolpack.ABIExtism, Reactor: true}, "build -trimpath -buildvcs=false -ldflags=-s -w -buildmode=c-shared -o out.wasm ./plugins/fetch"},
		{toolpack.Target{Plugin: "plugins/echo", ABI: toolpack.ABIWasiCommand, Reactor: true}, "build -trimpath -buildvcs=false -ldflags=-s -w -buildmode=c-shared -o out.wasm ./plugins/echo"},
	}
	for _, tc := range tests {
		if got := strings.Join(toolpack.BuildArgs(tc.target, "out.wasm"), " "); got != tc.want {
			t.Errorf("BuildArgs(%+v) = %q, want %q", tc.target, got, tc.want)
		}
	}
}
