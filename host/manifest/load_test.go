package manifest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
)

// writeTool writes a manifest (from base, patched) and returns its path.
func writeTool(t *testing.T, dir string, patch func(m map[string]any)) string {
	t.Helper()
	m := base()
	if patch != nil {
		patch(m)
	}
	p := filepath.Join(dir, "stats.tool.json")
	if err := os.WriteFile(p, encode(t, m), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

func TestLoad(t *testing.T) {
	const module = "\x00asm\x01\x00\x00\x00stats"
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string) func(m map[string]any)
		pointer string
		reason  string
	}{
		{name: "module ok", setup: func(t *testing.T, dir string) func(map[string]any) {
			writeFile(t, filepath.Join(dir, "stats.wasm"), module)
			return nil
		}},
		{name: "module in subfolder", setup: func(t *testing.T, dir string) func(map[string]any) {
			writeFile(t, filepath.Join(dir, "bin", "stats.wasm"), module)
			return func(m map[string]any) { handler(m)["module"] = "bin/stats.wasm" }
		}},
		{name: "digest matches", setup: func(t *testing.T, dir string) func(map[string]any) {
			sum := writeFile(t, filepath.Join(dir, "stats.wasm"), module)
			return func(m map[string]any) { handler(m)["sha256"] = sum }
		}},
		{name: "digest mismatch", setup: func(t *testing.T, dir string) func(map[string]any) {
			writeFile(t, filepath.Join(dir, "stats.wasm"), module)
			return func(m map[string]any) { handler(m)["sha256"] = strings.Repeat("0", 64) }
		}, pointer: "/handler/sha256", reason: "changed since its manifest was written (its sha256 is " + sha(module) + ", the manifest pins " + strings.Repeat("0", 64) + "), so it is not loaded"},
		{name: "module missing", pointer: "/handler/module", reason: "does not exist"},
		{name: "a component is refused with how to build a core module", setup: func(t *testing.T, dir string) func(map[string]any) {
			writeFile(t, filepath.Join(dir, "stats.wasm"), "\x00asm\x0d\x00\x01\x00component")
			return nil
		}, pointer: "/handler/module", reason: "is a WebAssembly component (component-model binary, version 0xd, layer 1), not a core module: agenthost runs core WebAssembly modules"},
		{name: "a component's advice names the core targets", setup: func(t *testing.T, dir string) func(map[string]any) {
			writeFile(t, filepath.Join(dir, "stats.wasm"), "\x00asm\x0d\x00\x01\x00component")
			return nil
		}, pointer: "/handler/module", reason: "cargo build --target wasm32-wasip1` (not wasm32-wasip2"},
		{name: "an unknown binary version is refused", setup: func(t *testing.T, dir string) func(map[string]any) {
			writeFile(t, filepath.Join(dir, "stats.wasm"), "\x00asm\x02\x00\x00\x00x")
			return nil
		}, pointer: "/handler/module", reason: "version 0x2, layer 0; only core modules of version 1 run"},
		{name: "a component is refused for an Extism plugin too", setup: func(t *testing.T, dir string) func(map[string]any) {
			writeFile(t, filepath.Join(dir, "stats.wasm"), "\x00asm\x0d\x00\x01\x00component")
			return func(m map[string]any) { handler(m)["abi"] = "extism"; handler(m)["entryPoint"] = "call" }
		}, pointer: "/handler/module", reason: "is a WebAssembly component"},
		{name: "module is a folder", setup: func(t *testing.T, dir string) func(map[string]any) {
			if err := os.Mkdir(filepath.Join(dir, "stats.wasm"), 0o755); err != nil {
				t.Fatal(err)
			}
			return nil
		}, pointer: "/handler/module", reason: "not a regular file"},
		{name: "symlink inside ok", setup: func(t *testing.T, dir string) func(map[string]any) {
			writeFile(t, filepath.Join(dir, "real", "stats.wasm"), module)
			if err := os.Symlink(filepath.Join("real", "stats.wasm"), filepath.Join(dir, "stats.wasm")); err != nil {
				t.Skip(err)
			}
			return nil
		}},
		{name: "symlink escapes", setup: func(t *testing.T, dir string) func(map[string]any) {
			outside := filepath.Join(filepath.Dir(dir), "outside.wasm")
			writeFile(t, outside, module)
			if err := os.Symlink(outside, filepath.Join(dir, "stats.wasm")); err != nil {
				t.Skip(err)
			}
			return nil
		}, pointer: "/handler/module", reason: "outside the manifest's folder"},
		{name: "symlinked folder escapes", setup: func(t *testing.T, dir string) func(map[string]any) {
			outside := filepath.Join(filepath.Dir(dir), "elsewhere")
			writeFile(t, filepath.Join(outside, "stats.wasm"), module)
			if err := os.Symlink(outside, filepath.Join(dir, "bin")); err != nil {
				t.Skip(err)
			}
			return func(m map[string]any) { handler(m)["module"] = "bin/stats.wasm" }
		}, pointer: "/handler/module", reason: "outside the manifest's folder"},
		{name: "symlink to /etc/passwd", setup: func(t *testing.T, dir string) func(map[string]any) {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "stats.wasm")); err != nil {
				t.Skip(err)
			}
			return nil
		}, pointer: "/handler/module", reason: "outside"},
		{name: "dotdot", setup: func(t *testing.T, dir string) func(map[string]any) {
			writeFile(t, filepath.Join(filepath.Dir(dir), "x.wasm"), module)
			return func(m map[string]any) { handler(m)["module"] = "../x.wasm" }
		}, pointer: "/handler/module"},
		{name: "script ok", setup: func(t *testing.T, dir string) func(map[string]any) {
			writeFile(t, filepath.Join(dir, "run.py"), "print(1)\n")
			return func(m map[string]any) {
				m["handler"] = map[string]any{"type": "external-script", "scriptPath": "run.py", "language": "python"}
			}
		}},
		{name: "script missing", setup: func(t *testing.T, dir string) func(map[string]any) {
			return func(m map[string]any) {
				m["handler"] = map[string]any{"type": "external-script", "scriptPath": "run.py", "language": "python"}
			}
		}, pointer: "/handler/scriptPath", reason: "does not exist"},
		{name: "service method needs no file", setup: func(t *testing.T, dir string) func(map[string]any) {
			return func(m map[string]any) {
				m["handler"] = map[string]any{"type": "service-method", "serviceName": "S", "methodName": "M"}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pack")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			var patch func(map[string]any)
			if tc.setup != nil {
				patch = tc.setup(t, dir)
			}
			p := writeTool(t, dir, patch)
			tool, err := manifest.Load(p)
			if tc.pointer == "" && tc.reason == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				checkLoaded(t, tool, dir)
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			var me *manifest.Error
			if !errors.As(err, &me) || !errors.Is(err, abi.ErrLoadError) {
				t.Fatalf("error %T %v", err, err)
			}
			if me.Path != p {
				t.Errorf("Path = %q, want %q", me.Path, p)
			}
			if tc.pointer != "" && me.Pointer != tc.pointer {
				t.Errorf("Pointer = %q, want %q (%v)", me.Pointer, tc.pointer, err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not contain %q", err, tc.reason)
			}
		})
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func checkLoaded(t *testing.T, tool *manifest.Tool, dir string) {
	t.Helper()
	realDir, _ := filepath.EvalSymlinks(dir)
	var file string
	switch tool.Handler.Type {
	case manifest.HandlerWasm:
		file = tool.ModulePath()
		if tool.ScriptFile() != "" {
			t.Error("ScriptFile of a wasm tool")
		}
	case manifest.HandlerScript:
		file = tool.ScriptFile()
		if tool.ModulePath() != "" {
			t.Error("ModulePath of a script tool")
		}
	default:
		if tool.Digest() != "" {
			t.Errorf("Digest = %q without a file", tool.Digest())
		}
		return
	}
	if !filepath.IsAbs(file) || !strings.HasPrefix(file, realDir+string(filepath.Separator)) {
		t.Errorf("file %q not inside %q", file, realDir)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if tool.Digest() != sha(string(b)) {
		t.Errorf("Digest = %q, want sha of %s", tool.Digest(), file)
	}
	got, err := tool.ReadModule()
	if err != nil || string(got) != string(b) {
		t.Errorf("ReadModule = %q, %v", got, err)
	}
}

func TestReadModule_changedAfterLoad(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "stats.wasm"), "one")
	tool, err := manifest.Load(writeTool(t, dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "stats.wasm"), "two")
	if _, err := tool.ReadModule(); err == nil || !errors.Is(err, abi.ErrLoadError) || !strings.Contains(err.Error(), "changed since load") {
		t.Fatalf("ReadModule after a change: %v", err)
	}
	parsed, err := manifest.Parse(encode(t, base()), filepath.Join(dir, "x.tool.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parsed.ReadModule(); err == nil {
		t.Error("ReadModule of a parsed (not loaded) tool succeeded")
	}
	if parsed.ModulePath() != filepath.Join(dir, "stats.wasm") {
		t.Errorf("ModulePath of a parsed tool = %q", parsed.ModulePath())
	}
}

func TestLoad_fileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := manifest.Load(filepath.Join(dir, "none.tool.json")); err == nil || !errors.Is(err, os.ErrNotExist) || !errors.Is(err, abi.ErrLoadError) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := manifest.Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("folder: %v", err)
	}
	big := filepath.Join(dir, "big.tool.json")
	writeFile(t, big, strings.Repeat(" ", manifest.MaxManifestBytes+1))
	if _, err := manifest.Load(big); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("big file: %v", err)
	}
}

func TestWriteDigest(t *testing.T) {
	const stale = `{
    "toolId": "text:stats",
    "displayName": "Stats",
    "description": "Counts.",
    "version": "1.0.0",
    "handler": {
        "type":   "wasm",
        "sha256" :  "0000000000000000000000000000000000000000000000000000000000000000",
        "module": "stats.wasm",
        "abi": "wasi-command"
    },
    "tags": ["sha256"]
}
`
	const missing = "{\"toolId\":\"text:stats\",\"displayName\":\"Stats\",\"description\":\"Counts.\",\"version\":\"1.0.0\",\n\t\"handler\": {\n\t\t\"type\": \"wasm\",\n\t\t\"module\" : \"stats.wasm\",\n\t\t\"abi\": \"wasi-command\"\n\t}\n}"
	tests := []struct {
		name    string
		content string
		want    func(sum string) string
		changed bool
		err     string
	}{
		{name: "stale digest replaced", content: stale, changed: true, want: func(sum string) string {
			return strings.Replace(stale, strings.Repeat("0", 64), sum, 1)
		}},
		{name: "missing digest inserted", content: missing, changed: true, want: func(sum string) string {
			return strings.Replace(missing, `"stats.wasm",`, `"stats.wasm",`+"\n\t\t\"sha256\" : \""+sum+"\",", 1)
		}},
		{name: "invalid manifest", content: `{"toolId":"text:stats"}`, err: "missing required field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sum := writeFile(t, filepath.Join(dir, "stats.wasm"), "module bytes")
			p := filepath.Join(dir, "stats.tool.json")
			writeFile(t, p, tc.content)
			changed, err := manifest.WriteDigest(p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v", changed)
			}
			got, _ := os.ReadFile(p)
			if want := tc.want(sum); string(got) != want {
				t.Errorf("file:\n%s\nwant:\n%s", got, want)
			}
			tool, err := manifest.Load(p)
			if err != nil {
				t.Fatalf("load after WriteDigest: %v", err)
			}
			if tool.Handler.SHA256 != sum || tool.Digest() != sum {
				t.Errorf("sha256 %q digest %q, want %q", tool.Handler.SHA256, tool.Digest(), sum)
			}
			again, err := manifest.WriteDigest(p)
			if err != nil || again {
				t.Errorf("second WriteDigest = %v, %v; want unchanged", again, err)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 2 {
				t.Errorf("temporary files left behind: %v", entries)
			}
		})
	}
}

// TestWriteDigest_notWasm: only wasm handlers carry a digest; other
// manifests are left byte for byte as they are.
func TestWriteDigest_notWasm(t *testing.T) {
	const content = `{"toolId":"text:stats","displayName":"S","description":"C.","version":"1.0.0","handler":{"type":"service-method","serviceName":"a","methodName":"b"}}`
	p := filepath.Join(t.TempDir(), "svc.tool.json")
	writeFile(t, p, content)
	changed, err := manifest.WriteDigest(p)
	if err != nil || changed {
		t.Fatalf("WriteDigest = %v, %v; want unchanged, nil", changed, err)
	}
	if got, _ := os.ReadFile(p); string(got) != content {
		t.Errorf("file changed:\n%s", got)
	}
}

// TestLoad_digestFollowsContent: a module's digest is remembered between
// loads of an unchanged file, never for a changed one, even rewritten to
// the same size with its modification time set back.
func TestLoad_digestFollowsContent(t *testing.T) {
	dir := t.TempDir()
	module := filepath.Join(dir, "stats.wasm")
	writeFile(t, module, "one")
	fi, err := os.Stat(module)
	if err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{"one", "one", "two", "two", "six"} {
		if content != "one" {
			writeFile(t, module, content)
			if err := os.Chtimes(module, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}
		tool, err := manifest.Load(writeTool(t, dir, nil))
		if err != nil {
			t.Fatal(err)
		}
		if tool.Digest() != sha(content) {
			t.Fatalf("digest of %q: %s, want %s", content, tool.Digest(), sha(content))
		}
	}
}
