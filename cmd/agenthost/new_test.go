package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"golang.org/x/crypto/ssh"

	"github.com/agenthost/agenthost/internal/toolchain"
)

// requireGuests is set in CI, which installs every toolchain: there a
// missing one fails instead of skipping.
var requireGuests = os.Getenv("AGENTHOST_REQUIRE_GUESTS") == "1"

// toolchainMissing says why lang's template cannot be built here ("" if
// it can).
func toolchainMissing(t *testing.T, lang toolchain.Lang) string {
	t.Helper()
	var err error
	switch lang {
	case toolchain.Python:
		_, err = exec.LookPath("python3")
	case toolchain.JS:
		_, err = exec.LookPath("node")
	default:
		_, err = toolchain.Steps(context.Background(), lang, t.TempDir(), "x", "x.wasm")
	}
	if err == nil {
		return ""
	}
	return err.Error() + "; install " + toolchain.Needs(lang)
}

// TestNewToolEveryLanguage runs each `agenthost new --lang` template the
// way its author would: new, build (which pins the digest and runs the
// examples, one with its fixture), test, sign, push to a registry on
// loopback, then load it pinned by digest under a policy that requires
// the author's signature, call it, and pull it into a folder that
// verifies. A language whose toolchain is absent is skipped with the
// reason, except in CI.
func TestNewToolEveryLanguage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a tool in every language; skipped with -short")
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")
	tmp := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "author")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(tmp, "author_key")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, _ := ssh.NewSignerFromKey(priv)
	line, _ := json.Marshal("author@example.com " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))))
	policy := filepath.Join(tmp, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"requireSignature": true, "trustedKeys": [`+string(line)+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := func(t *testing.T, args ...string) (int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--cache-dir", filepath.Join(tmp, "cache")}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	for _, lang := range toolchain.Langs {
		t.Run(string(lang), func(t *testing.T) {
			if why := toolchainMissing(t, lang); why != "" {
				if requireGuests {
					t.Fatalf("AGENTHOST_REQUIRE_GUESTS=1 and %s", why)
				}
				t.Skip(why)
			}
			dir := filepath.Join(tmp, string(lang))
			id := "my:wc_" + string(lang)
			steps := [][]string{
				{"new", "tool", id, "--lang", string(lang), "-o", dir},
				{"build", dir},
				{"test", dir},
				{"sign", dir, "--key", key},
			}
			for _, s := range steps {
				if code, out := cli(t, s...); code != 0 {
					t.Fatalf("agenthost %s: exit %d\n%s", strings.Join(s, " "), code, out)
				} else if s[0] == "build" || s[0] == "test" {
					if !strings.Contains(out, "2 passed, 0 failed, 0 skipped") {
						t.Fatalf("agenthost %s:\n%s", s[0], out)
					}
				}
			}
			code, out := cli(t, "push", dir, reg+"/tools/wc-"+string(lang)+":0.1.0")
			_, pinned, _ := strings.Cut(out, "pin it as: ")
			if pinned = strings.TrimSpace(pinned); code != 0 || !strings.Contains(pinned, "@sha256:") {
				t.Fatalf("push: exit %d\n%s", code, out)
			}
			code, out = cli(t, "--policy", policy, "--dir", "oci://"+pinned, "invoke", id, `{"text": "hello tool world\n"}`)
			if code != 0 || !strings.Contains(out, `"words": 3`) || !strings.Contains(out, `"bytes": 17`) {
				t.Fatalf("invoke the pulled tool: exit %d\n%s", code, out)
			}
			pulled := filepath.Join(tmp, "pulled-"+string(lang))
			if code, out := cli(t, "pull", pinned, "-o", pulled); code != 0 {
				t.Fatalf("pull: exit %d\n%s", code, out)
			}
			if code, out := cli(t, "--policy", policy, "verify", pulled); code != 0 || !strings.Contains(out, "signed by author@example.com") {
				t.Fatalf("verify the pulled folder: exit %d\n%s", code, out)
			}
		})
	}
}

// TestNewAndBuildRefuse checks the usage errors of new and build: each
// names what to change.
func TestNewAndBuildRefuse(t *testing.T) {
	tmp := t.TempDir()
	exists := filepath.Join(tmp, "exists")
	if err := os.Mkdir(exists, 0o755); err != nil {
		t.Fatal(err)
	}
	cDir := filepath.Join(tmp, "c")
	if code := run(context.Background(), []string{"new", "tool", "my:cc", "--lang", "c", "-o", cDir}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
		t.Fatalf("new --lang c: exit %d", code)
	}
	tests := []struct {
		name string
		args []string
		path string // PATH for the run; "" keeps it
		want string
	}{
		{"no language", []string{"new", "tool", "my:x"}, "", `--lang "": want one of go, rust, c, assemblyscript, python, js`},
		{"unknown language", []string{"new", "tool", "my:x", "--lang", "cobol"}, "", `--lang "cobol"`},
		{"bad tool ID", []string{"new", "tool", "My:X", "--lang", "go", "-o", filepath.Join(tmp, "bad")}, "", `tool ID "My:X"`},
		{"folder exists", []string{"new", "tool", "my:x", "--lang", "go", "-o", exists}, "", "already exists"},
		{"not a tool", []string{"new", "workflow", "x", "--lang", "go"}, "", "new takes: tool ID --lang LANGUAGE"},
		{"no manifest", []string{"build", exists}, "", "holds no *.tool.json"},
		{"toolchain missing", []string{"build", cDir}, tmp, "clang: toolchain not installed; install clang"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path != "" {
				t.Setenv("PATH", tc.path)
			}
			var out bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(""), &out, &out)
			if code != 2 || !strings.Contains(out.String(), tc.want) {
				t.Fatalf("exit %d, want 2 with %q:\n%s", code, tc.want, out.String())
			}
		})
	}
	if _, err := os.Stat(filepath.Join(tmp, "bad")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused new left a folder: %v", err)
	}
}
