package host_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/toolpack"
)

// copyDir copies a toolpack folder (plain files) into a new folder.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestRequireSignature pins requireSignature: a folder signed by a
// trusted key loads; an unsigned one, one signed by another key, and one
// changed after signing (also after a first verified load, on reload) do
// not: their tools are LOAD_ERRORs naming the reason.
func TestRequireSignature(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	sshPub, _ := ssh.NewPublicKey(pub)
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ssh.NewSignerFromKey(otherPriv)
	line := "reviewer@example.com " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	doc, _ := json.Marshal(map[string]any{"requireSignature": true, "trustedKeys": []string{line}})
	pol := hosttest.Policy(t, string(doc))
	core := filepath.Join(hosttest.Toolpacks(t), "core")

	signed := copyDir(t, core)
	if _, err := toolpack.Sign(signed, signer); err != nil {
		t.Fatal(err)
	}
	h := hosttest.NewHost(t, pol, signed)
	if env := h.Call(context.Background(), "core:echo", json.RawMessage(`{"a":1}`)); env.Error != nil {
		t.Fatalf("signed: %+v", env.Error)
	}
	// Tampered after the first load: a reload keeps the verified version
	// and says why the new one did not load.
	os.WriteFile(filepath.Join(signed, "README.md"), []byte("changed"), 0o644)
	if err := h.Reload(); err == nil || !strings.Contains(err.Error(), "files changed") || !strings.Contains(err.Error(), "changed README.md") {
		t.Fatalf("reload of a tampered folder: %v", err)
	}

	unsigned := copyDir(t, core)
	wrong := copyDir(t, core)
	if _, err := toolpack.Sign(wrong, other); err != nil {
		t.Fatal(err)
	}
	tampered := copyDir(t, core)
	toolpack.Sign(tampered, signer)
	os.WriteFile(filepath.Join(tampered, "extra.tool.json"), []byte("{}"), 0o644)
	for dir, want := range map[string]string{unsigned: "unsigned", wrong: "untrusted key", tampered: "added extra.tool.json"} {
		h2, err := host.New(context.Background(), host.Options{Dirs: []string{dir}, Policy: pol, CacheDir: hosttest.CacheDir(t)})
		if err != nil {
			t.Fatal(err)
		}
		env := h2.Call(context.Background(), "core:echo", nil)
		if env.Error == nil || env.Error.Code != "LOAD_ERROR" || !strings.Contains(env.Error.Message, want) || !strings.Contains(env.Error.Message, "requires signed toolpacks") {
			t.Errorf("%s: %+v", want, env.Error)
		}
		h2.Close(context.Background())
	}
}

// TestRequireSignatureRelativeDir: a signed toolpack named by a relative
// folder (the CLI's default is ./toolpacks) loads under requireSignature,
// and a tool changed after signing is still refused.
func TestRequireSignatureRelativeDir(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	sshPub, _ := ssh.NewPublicKey(pub)
	line := "reviewer@example.com " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	doc, _ := json.Marshal(map[string]any{"requireSignature": true, "trustedKeys": []string{line}})
	pol := hosttest.Policy(t, string(doc))
	core := filepath.Join(hosttest.Toolpacks(t), "core")
	cache := hosttest.CacheDir(t)

	root := t.TempDir()
	for _, name := range []string{"signed", "changed"} {
		dir := filepath.Join(root, "toolpacks", name)
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(copyDir(t, core), dir); err != nil {
			t.Fatal(err)
		}
		if _, err := toolpack.Sign(dir, signer); err != nil {
			t.Fatal(err)
		}
	}
	// A file of "changed" edited after signing: the folder no longer
	// verifies, relative or not.
	if err := os.WriteFile(filepath.Join(root, "toolpacks", "changed", "README.md"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)

	tests := []struct {
		dir, want string // want "" = the call succeeds
	}{
		{"toolpacks/signed", ""},
		{"./toolpacks/signed", ""},
		{"toolpacks/../toolpacks/signed", ""},
		{"toolpacks/changed", "changed README.md"},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			h, err := host.New(context.Background(), host.Options{Dirs: []string{tc.dir}, Policy: pol, CacheDir: cache})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close(context.Background())
			env := h.Call(context.Background(), "core:echo", json.RawMessage(`{"a":1}`))
			switch {
			case tc.want == "" && env.Error != nil:
				t.Fatalf("signed folder %q: %+v", tc.dir, env.Error)
			case tc.want != "" && (env.Error == nil || env.Error.Code != "LOAD_ERROR" || !strings.Contains(env.Error.Message, tc.want)):
				t.Fatalf("folder %q: got %+v, want a LOAD_ERROR containing %q", tc.dir, env.Error, tc.want)
			}
		})
	}
}

// TestRequireSignatureScriptEditedAfterLoad: under requireSignature a
// script tool whose file is edited after the signed folder loaded never
// runs the edit: a call before the edit and every call after it run the
// signed script (or fail with a LOAD_ERROR), whether the tool had been
// prepared before the edit or not.
func TestRequireSignatureScriptEditedAfterLoad(t *testing.T) {
	for _, prog := range []string{"python3", "node"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s not installed", prog)
		}
	}
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	sshPub, _ := ssh.NewPublicKey(pub)
	line := "reviewer@example.com " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	doc, _ := json.Marshal(map[string]any{"requireSignature": true, "trustedKeys": []string{line},
		"isolation": map[string]any{"allowDegraded": true}})
	pol := hosttest.Policy(t, string(doc))
	dir := copyDir(t, filepath.Join(hosttest.Toolpacks(t), "scripts"))
	if _, err := toolpack.Sign(dir, signer); err != nil {
		t.Fatal(err)
	}
	h := hosttest.NewHost(t, pol, dir)
	ctx := context.Background()

	tests := []struct {
		name, tool, file, args, edited string
		callFirst                      bool
	}{
		{"prepared, then edited", "py:markdown-outline", "markdown_outline.py", `{"markdown":"# Signed"}`,
			"import sys\nsys.stdout.write('{\"headings\":[],\"count\":0,\"toc\":\"EDITED\"}')\n", true},
		{"edited before the first call", "node:semver-compare", "semver_compare.js", `{"a":"1.0.0","b":"2.0.0"}`,
			"process.stdout.write('{\"EDITED\":true}');\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before string
			if tc.callFirst {
				env := h.Call(ctx, tc.tool, json.RawMessage(tc.args))
				if env.Error != nil {
					t.Fatalf("signed script: %+v", env.Error)
				}
				before = string(env.Output)
			}
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.edited), 0o644); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				env := h.Call(ctx, tc.tool, json.RawMessage(tc.args))
				if strings.Contains(string(env.Output), "EDITED") {
					t.Fatalf("the edited script ran: %s", env.Output)
				}
				if env.Error != nil && env.Error.Code != "LOAD_ERROR" {
					t.Fatalf("after the edit: %+v, want the signed script's answer or a LOAD_ERROR", env.Error)
				}
				if env.Error == nil && tc.callFirst && string(env.Output) != before {
					t.Fatalf("after the edit: %s, want the signed script's %s", env.Output, before)
				}
			}
		})
	}
}

// TestRequireSignatureModuleEditedAfterLoad: under requireSignature a
// WebAssembly module whose manifest pins no digest (the signed index
// does), replaced after the folder loaded and before its first call,
// does not run, for either ABI: the call is a LOAD_ERROR saying the
// module changed.
func TestRequireSignatureModuleEditedAfterLoad(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	sshPub, _ := ssh.NewPublicKey(pub)
	line := "reviewer@example.com " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	doc, _ := json.Marshal(map[string]any{"requireSignature": true, "trustedKeys": []string{line}})
	pol := hosttest.Policy(t, string(doc))
	packs := hosttest.Toolpacks(t)
	tests := []struct {
		name, pack, manifest, module, replacement, tool, args string
	}{
		{"wasi-command", "core", "echo.tool.json", "echo.wasm", "data/hash-digest.wasm", "core:echo", `{"a":1}`},
		{"extism", "web", "web-links.tool.json", "web-links.wasm", "web/web-fetch.wasm", "web:extract-links", `{"html":"<a href=\"https://example.com/\">x</a>"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, filepath.Join(packs, tc.pack))
			// The manifest without its pin: only the signature vouches
			// for the module.
			path := filepath.Join(dir, tc.manifest)
			var m map[string]any
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			delete(m["handler"].(map[string]any), "sha256")
			if b, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := toolpack.Sign(dir, signer); err != nil {
				t.Fatal(err)
			}
			// A cache folder of its own: a rewrite cached under the loaded
			// digest would run the signed module without reading the file.
			h, err := host.New(context.Background(), host.Options{Dirs: []string{dir}, Policy: pol, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close(context.Background())
			other, err := os.ReadFile(filepath.Join(packs, filepath.FromSlash(tc.replacement)))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, tc.module), other, 0o644); err != nil {
				t.Fatal(err)
			}
			env := h.Call(context.Background(), tc.tool, json.RawMessage(tc.args))
			if env.Error == nil || env.Error.Code != "LOAD_ERROR" || !strings.Contains(env.Error.Message, "changed since load") {
				t.Fatalf("the replaced module: %+v %s, want a LOAD_ERROR saying it changed", env.Error, env.Output)
			}
		})
	}
}
