package host_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/credential"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/manifest"
)

// TestCredentials pins per-call credentials: a Go tool that asks for one
// gets a valid, tenant- and tool-scoped token in its environment; a tool
// printing it (plain or base64) hands back [REDACTED], in its output and
// in its error; arguments carrying a live token are refused; a script
// tool gets it too; a host without an issuer does not load such tools.
func TestCredentials(t *testing.T) {
	issuer, err := credential.NewHMAC([]byte(strings.Repeat("s", 32)))
	if err != nil {
		t.Fatal(err)
	}
	type in struct {
		Fail bool   `json:"fail,omitempty"`
		Echo string `json:"echo,omitempty"`
	}
	leak := host.Func("cal:leak", "Leaks its credential.", func(ctx context.Context, a in) (map[string]any, error) {
		tok := host.Env(ctx)[credential.EnvName("calendar")]
		_, verr := issuer.Verify(tok, "acme", "cal:leak")
		if a.Fail {
			return nil, errors.New("cannot use " + tok)
		}
		return map[string]any{"valid": verr == nil, "token": tok, "b64": base64.StdEncoding.EncodeToString([]byte(tok)), "echo": a.Echo}, nil
	}, host.WithSecurityContext(manifest.SecurityContext{Credentials: []string{"calendar"}}))
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{CacheDir: hosttest.CacheDir(t), Tools: []host.Tool{leak}, Credentials: issuer, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	env := h.Call(ctx, "cal:leak", nil)
	var out map[string]any
	json.Unmarshal(env.Output, &out)
	if env.Error != nil || out["valid"] != true || out["token"] != "[REDACTED]" || out["b64"] != "[REDACTED]" {
		t.Fatalf("%+v %s", env.Error, env.Output)
	}
	env = h.Call(ctx, "cal:leak", json.RawMessage(`{"fail":true}`))
	if env.Error == nil || strings.Contains(env.Error.Message, credential.Prefix) || !strings.Contains(env.Error.Message, "[REDACTED]") {
		t.Fatalf("the error leaks: %+v", env.Error)
	}
	live, _ := issuer.Mint(ctx, credential.Request{Tenant: "acme", Tool: "cal:leak", Name: "calendar"})
	args, _ := json.Marshal(map[string]string{"echo": "use " + live.Token})
	if env := h.Call(ctx, "cal:leak", args); env.Error == nil || env.Error.Code != "INVALID_ARGUMENTS" {
		t.Fatalf("a token in the arguments: %+v", env)
	}
	if env := h.Call(ctx, "cal:leak", json.RawMessage(`{"echo":"ahc1.not.atoken"}`)); env.Error != nil {
		t.Fatalf("a token-shaped string that is no token: %+v", env.Error)
	}

	// Without an issuer the tool does not load.
	h2, err := host.New(ctx, host.Options{CacheDir: hosttest.CacheDir(t), Tools: []host.Tool{leak}})
	if err == nil {
		defer h2.Close(ctx)
		if env := h2.Call(ctx, "cal:leak", nil); env.Error == nil || !strings.Contains(env.Error.Message, "no credential issuer") {
			t.Fatalf("no issuer: %+v", env)
		}
	} else if !strings.Contains(err.Error(), "no credential issuer") {
		t.Fatalf("no issuer: %v", err)
	}

	// A script tool gets it in its environment, and printing it is redacted.
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is missing")
		}
		t.Skip("python3 is not installed")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "leak.py"), []byte("import json, os\ntok = os.environ['AGENTHOST_CREDENTIAL_CALENDAR']\nprint(json.dumps({'token': tok, 'prefix': tok[:5]}))\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "leak.tool.json"), []byte(`{"toolId":"py:leak","displayName":"Leak","description":"Prints its credential.","version":"1.0.0",
		"handler":{"type":"external-script","scriptPath":"leak.py","language":"python"},
		"securityContext":{"credentials":["calendar"]}}`), 0o644)
	h3, err := host.New(ctx, host.Options{Dirs: []string{dir}, CacheDir: hosttest.CacheDir(t), Credentials: issuer, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	defer h3.Close(ctx)
	env = h3.Call(ctx, "py:leak", nil)
	if env.Error != nil || !strings.Contains(string(env.Output), `"token":"[REDACTED]"`) || !strings.Contains(string(env.Output), `"prefix":"ahc1."`) {
		t.Fatalf("script: %+v %s", env.Error, env.Output)
	}
}
