package registry_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/registry"
)

func loadPacks(t *testing.T) (*registry.Registry, []registry.Failure) {
	t.Helper()
	r := registry.New()
	n, failures := r.LoadDir(filepath.Join("testdata", "packs"))
	if n != 5 {
		t.Errorf("loaded %d tools, want 5 (failures: %v)", n, failures)
	}
	return r, failures
}

func ids(tools []*manifest.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.ToolID+"@"+t.Version)
	}
	return out
}

func TestLoadDir(t *testing.T) {
	r, failures := loadPacks(t)
	if got, want := ids(r.Tools()), []string{"core:echo@2.0.0", "py:hello@1.0.0", "text:stats@1.0.0", "text:word-count@0.1.0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Tools = %v, want %v", got, want)
	}
	byPath := map[string]registry.Failure{}
	for _, f := range failures {
		rel, _ := filepath.Rel(filepath.Join("testdata", "packs"), f.Path)
		byPath[filepath.ToSlash(rel)] = f
		if !errors.Is(f, abi.ErrLoadError) {
			t.Errorf("%s: failure is not a LOAD_ERROR: %v", rel, f.Err)
		}
	}
	want := map[string]string{
		"broken/garbage.tool.json": "",
		"broken/read.tool.json":    "fs:read",
		"digest/digest.tool.json":  "hash:digest",
		"text/stats.tool.json":     "text:stats",
	}
	if len(byPath) != len(want) {
		t.Errorf("failures = %v", failures)
	}
	for p, id := range want {
		f, ok := byPath[p]
		if !ok {
			t.Errorf("no failure for %s", p)
			continue
		}
		if f.ToolID != id {
			t.Errorf("%s: ToolID = %q, want %q", p, f.ToolID, id)
		}
	}
	dup := byPath["text/stats.tool.json"].Err.Error()
	if !strings.Contains(dup, filepath.Join("text", "stats.tool.json")) || !strings.Contains(dup, filepath.Join("text", "dup", "stats.tool.json")) {
		t.Errorf("duplicate error does not name both files: %s", dup)
	}
	if !reflect.DeepEqual(r.Failures(), failures) {
		t.Error("Failures() differs from LoadDir's result")
	}
}

func TestLoadDir_missing(t *testing.T) {
	r := registry.New()
	n, failures := r.LoadDir(filepath.Join(t.TempDir(), "nope"))
	if n != 0 || len(failures) != 1 || !errors.Is(failures[0].Err, os.ErrNotExist) {
		t.Errorf("n=%d failures=%v", n, failures)
	}
}

func TestLookup(t *testing.T) {
	r, _ := loadPacks(t)
	tests := []struct {
		id      string
		version string // want this version
		code    abi.Code
		msg     string
		details any
	}{
		{id: "core:echo", version: "2.0.0"},
		{id: "core:echo@1.0.0", version: "1.0.0"},
		{id: "core:echo@2.0.0", version: "2.0.0"},
		{id: "core:echo@3.0.0", code: abi.CodeUnknownTool, msg: "unknown version '3.0.0' of tool 'core:echo'; available: 1.0.0, 2.0.0",
			details: registry.UnknownToolDetails{Versions: []string{"1.0.0", "2.0.0"}}},
		{id: "core:ecoh", code: abi.CodeUnknownTool, msg: "unknown tool 'core:ecoh'; did you mean 'core:echo'?",
			details: registry.UnknownToolDetails{Suggestions: []string{"core:echo"}}},
		{id: "echo", code: abi.CodeUnknownTool, msg: "unknown tool 'echo'; did you mean 'core:echo'?"},
		{id: "text:stat", code: abi.CodeUnknownTool, msg: "unknown tool 'text:stat'; did you mean 'text:stats'?"},
		{id: "zzz:qqq", code: abi.CodeUnknownTool, msg: "unknown tool 'zzz:qqq'"},
		{id: "", code: abi.CodeUnknownTool, msg: "unknown tool ''"},
		{id: "fs:read", code: abi.CodeLoadError, msg: "tool 'fs:read' failed to load: manifest "},
		{id: "fs:read@1.0.0", code: abi.CodeLoadError, msg: "missing required field 'abi'"},
		{id: "hash:digest", code: abi.CodeLoadError, msg: "changed since its manifest was written"},
		{id: "text:stats", version: "1.0.0"},
		{id: "skip:me", code: abi.CodeUnknownTool},
		{id: "skip:hidden", code: abi.CodeUnknownTool},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			tool, err := r.Lookup(tc.id)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tool.Version != tc.version {
					t.Errorf("version = %s, want %s", tool.Version, tc.version)
				}
				return
			}
			var ae *abi.Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %T %v is not *abi.Error", err, err)
			}
			if ae.Code != tc.code {
				t.Errorf("code = %s, want %s (%v)", ae.Code, tc.code, err)
			}
			if tc.msg != "" && !strings.Contains(ae.Message, tc.msg) {
				t.Errorf("message %q does not contain %q", ae.Message, tc.msg)
			}
			if tc.details != nil && !reflect.DeepEqual(ae.Details, tc.details) {
				t.Errorf("details = %#v, want %#v", ae.Details, tc.details)
			}
		})
	}
}

func TestVersionsAndFilter(t *testing.T) {
	r, _ := loadPacks(t)
	if got := ids(r.Versions("core:echo")); !reflect.DeepEqual(got, []string{"core:echo@1.0.0", "core:echo@2.0.0"}) {
		t.Errorf("Versions = %v", got)
	}
	if r.Versions("nope:x") != nil {
		t.Error("Versions of an unknown id is not nil")
	}
	tests := []struct {
		ns, tag string
		want    []string
	}{
		{"text", "", []string{"text:stats@1.0.0", "text:word-count@0.1.0"}},
		{"", "count", []string{"text:word-count@0.1.0"}},
		{"", "new", []string{"core:echo@2.0.0"}},
		{"core", "core", []string{"core:echo@2.0.0"}},
		{"tex", "", nil},
		{"", "nope", nil},
	}
	for _, tc := range tests {
		if got := ids(r.Filter(tc.ns, tc.tag)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Filter(%q, %q) = %v, want %v", tc.ns, tc.tag, got, tc.want)
		}
	}
}

func service(id, version string) *manifest.Tool {
	return &manifest.Tool{
		ToolID: id, DisplayName: id, Description: "A host tool.", Version: version,
		Handler:    manifest.Handler{Type: manifest.HandlerServiceMethod, ServiceName: "S", MethodName: "M"},
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
	}
}

func TestAdd(t *testing.T) {
	r, _ := loadPacks(t)
	tool := service("game:player", "1.0.0")
	if err := r.Add(tool); err != nil {
		t.Fatal(err)
	}
	if tool.ParametersSchema() == nil {
		t.Error("Add did not validate the tool")
	}
	got, err := r.Lookup("game:player")
	if err != nil || got != tool {
		t.Fatalf("Lookup = %v, %v", got, err)
	}
	err = r.Add(service("game:player", "1.0.0"))
	if err == nil || !errors.Is(err, abi.ErrLoadError) || !strings.Contains(err.Error(), "duplicate tool game:player version 1.0.0") {
		t.Errorf("duplicate Add: %v", err)
	}
	if err := r.Add(service("core:echo", "1.5.0")); err != nil {
		t.Fatal(err)
	}
	if got := ids(r.Versions("core:echo")); !reflect.DeepEqual(got, []string{"core:echo@1.0.0", "core:echo@1.5.0", "core:echo@2.0.0"}) {
		t.Errorf("Versions = %v", got)
	}
	if err := r.Add(service("Bad ID", "1.0.0")); err == nil {
		t.Error("Add accepted an invalid ID")
	}
	if err := r.Add(service("mcp:x", "1.0.0")); err == nil {
		t.Error("Add accepted a reserved namespace")
	}
	if err := r.Add(nil); err == nil {
		t.Error("Add(nil) succeeded")
	}
	// a newer version replaces the bare-ID answer
	if err := r.Add(service("core:echo", "10.0.0-rc.1")); err != nil {
		t.Fatal(err)
	}
	if latest, _ := r.Lookup("core:echo"); latest.Version != "10.0.0-rc.1" {
		t.Errorf("latest = %s", latest.Version)
	}
}

func TestRegistry_concurrent(t *testing.T) {
	r, _ := loadPacks(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if g == 0 {
					if err := r.Add(service(fmt.Sprintf("gen:t%d", i), "1.0.0")); err != nil {
						t.Error(err)
					}
					continue
				}
				if _, err := r.Lookup("core:echo"); err != nil {
					t.Error(err)
				}
				_, _ = r.Lookup(fmt.Sprintf("gen:t%d", i))
				_ = r.Tools()
				_ = r.Filter("gen", "")
				_ = r.Failures()
			}
		}()
	}
	wg.Wait()
	if n := len(r.Filter("gen", "")); n != 50 {
		t.Errorf("%d gen tools, want 50", n)
	}
}

func TestRegistries_independent(t *testing.T) {
	a, b := registry.New(), registry.New()
	if err := a.Add(service("x:y", "1.0.0")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lookup("x:y"); !errors.Is(err, abi.ErrUnknownTool) {
		t.Errorf("second registry sees the first's tool: %v", err)
	}
}

func TestLoadDir_symlinks(t *testing.T) {
	abs, err := filepath.Abs(filepath.Join("testdata", "packs"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	link := filepath.Join(tmp, "packs-link")
	if err := os.Symlink(abs, link); err != nil {
		t.Skip(err)
	}
	r := registry.New()
	if n, _ := r.LoadDir(link); n != 5 {
		t.Errorf("through a linked root: loaded %d, want 5", n)
	}
	// a link cycle inside the scanned folder is not followed
	root := filepath.Join(tmp, "root")
	if err := os.MkdirAll(filepath.Join(root, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(root, "a", "loop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(root, "linked-packs")); err != nil {
		t.Fatal(err)
	}
	r2 := registry.New()
	if n, failures := r2.LoadDir(root); n != 0 || len(failures) != 0 {
		t.Errorf("linked folders followed: loaded %d, failures %v", n, failures)
	}
}

// TestLoadDirTwice pins reloading: loading the same folder again is not a
// duplicate error naming one path twice; an unchanged tool keeps its
// identity (a no-op), a changed one replaces it.
func TestLoadDirTwice(t *testing.T) {
	dir := t.TempDir()
	write := func(desc string) {
		m := `{"toolId":"t:one","displayName":"One","description":"` + desc + `","version":"1.0.0","handler":{"type":"service-method","serviceName":"s","methodName":"m"}}`
		if err := os.WriteFile(filepath.Join(dir, "one.tool.json"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("first")
	r := registry.New()
	if _, f := r.LoadDir(dir); len(f) != 0 {
		t.Fatal(f)
	}
	before, _ := r.Lookup("t:one")
	if _, f := r.LoadDir(dir); len(f) != 0 {
		t.Fatalf("loading the same folder again failed: %v", f)
	}
	if same, _ := r.Lookup("t:one"); same != before {
		t.Fatal("an unchanged reload replaced the tool")
	}
	write("second")
	if _, f := r.LoadDir(dir); len(f) != 0 {
		t.Fatal(f)
	}
	after, _ := r.Lookup("t:one")
	if after.Description != "second" {
		t.Fatalf("a changed manifest was not reloaded: %q", after.Description)
	}
}
