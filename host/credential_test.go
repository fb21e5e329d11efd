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

	"github.com/agenthost/agenthost/abi"
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
	leak := host.Func(host.FuncSpec{ID: "cal:leak", Description: "Leaks its credential.", SecurityContext: &manifest.SecurityContext{Credentials: []string{"calendar"}}}, func(ctx context.Context, a in) (map[string]any, error) {
		tok := host.Env(ctx)[credential.EnvName("calendar")]
		_, verr := issuer.Verify(tok, "acme", "cal:leak")
		if a.Fail {
			return nil, errors.New("cannot use " + tok)
		}
		return map[string]any{"valid": verr == nil, "token": tok, "b64": base64.StdEncoding.EncodeToString([]byte(tok)), "echo": a.Echo}, nil
	})
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

// TestCredentialRedactionHoles pins the ways a live token used to get
// past redaction and the arguments refusal: written with JSON escapes,
// in an error's details (a guest's toolCode) and in a workflow node's
// error, a live token of another tool than the one called, and a live
// token after 16 token-shaped decoys or glued to one.
func TestCredentialRedactionHoles(t *testing.T) {
	issuer, err := credential.NewHMAC([]byte(strings.Repeat("s", 32)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	other, _ := issuer.Mint(ctx, credential.Request{Tenant: "acme", Tool: "cal:other", Name: "calendar"})
	type in struct {
		Mode string `json:"mode,omitempty"`
		Echo string `json:"echo,omitempty"`
	}
	escaped := func(tok string) string { return `\u0061` + tok[1:] }
	leak := host.Func(host.FuncSpec{ID: "cal:leak", Description: "Leaks a credential.", SecurityContext: &manifest.SecurityContext{Credentials: []string{"calendar"}}}, func(ctx context.Context, a in) (json.RawMessage, error) {
		tok := host.Env(ctx)[credential.EnvName("calendar")]
		switch a.Mode {
		case "escaped":
			return json.RawMessage(`{"token":"` + escaped(tok) + `"}`), nil
		case "details":
			return nil, abi.Errorf(abi.CodeToolError, "failed").WithDetails(map[string]any{"toolCode": tok, "nested": []any{"x " + tok}})
		case "other":
			return json.RawMessage(`{"token":"` + other.Token + `","escaped":"` + escaped(other.Token) + `"}`), nil
		case "glued":
			return json.RawMessage(`{"token":"` + tok + `xyz","prefixed":"ahc1.` + tok + `"}`), nil
		}
		return json.RawMessage(`{}`), nil
	})
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "leak.workflow.json"), []byte(`{"id":"leak","name":"Leak","description":"Runs a leaking node.","version":"1.0.0",
		"interfaceInputs":{},"interfaceOutputs":{"token":{"description":"t","dataFlowType":"STRING"}},
		"nodes":[{"id":"n","tool":"cal:leak","args":{"mode":"details"}}],"outputs":{"token":"${nodes.n.output.token}"}}`), 0o644)
	h, err := host.New(ctx, host.Options{Dirs: []string{dir}, CacheDir: hosttest.CacheDir(t), Tools: []host.Tool{leak}, Credentials: issuer, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	for _, tc := range []struct{ name, tool, args string }{
		{"JSON escapes", "cal:leak", `{"mode":"escaped"}`},
		{"details", "cal:leak", `{"mode":"details"}`},
		{"another tool's token", "cal:leak", `{"mode":"other"}`},
		{"glued to text", "cal:leak", `{"mode":"glued"}`},
		{"a workflow node's error", "workflow:leak", `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := h.Call(ctx, tc.tool, json.RawMessage(tc.args))
			b, _ := json.Marshal(env)
			// Every token's payload is base64url JSON, starting "eyJ".
			if strings.Contains(decodeAll(t, b), credential.Prefix+"eyJ") {
				t.Fatalf("a token leaks: %s", b)
			}
			if !strings.Contains(string(b), "[REDACTED]") {
				t.Fatalf("nothing redacted: %s", b)
			}
		})
	}
	live, _ := issuer.Mint(ctx, credential.Request{Tenant: "beta", Tool: "x:y", Name: "n"})
	decoys := strings.Repeat("ahc1.AAAA.BBBB ", 16)
	for name, echo := range map[string]string{
		"after 16 decoys":         decoys + live.Token,
		"glued to a decoy":        "ahc1." + live.Token,
		"after a decoy's payload": "ahc1.x." + live.Token,
	} {
		args, _ := json.Marshal(map[string]string{"echo": echo})
		if env := h.Call(ctx, "cal:leak", args); env.Error == nil || env.Error.Code != abi.CodeInvalidArguments {
			t.Errorf("%s: a live token in the arguments passed: %+v", name, env.Error)
		}
	}
	if env := h.Call(ctx, "cal:leak", json.RawMessage(`{"echo":"`+decoys+`"}`)); env.Error != nil {
		t.Fatalf("decoys alone: %+v", env.Error)
	}
}

// decodeAll returns every string of a JSON document, decoded, joined.
func decodeAll(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			sb.WriteString(x + "\n")
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				sb.WriteString(k + "\n")
				walk(e)
			}
		}
	}
	walk(v)
	return sb.String()
}
