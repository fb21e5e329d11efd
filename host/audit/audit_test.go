package audit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/audit"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const testPolicy = `
workspace: /srv/work
cacheDir: /var/cache/agenthost
fileAccess: {allowRead: ["data/**", "docs/**"], allowWrite: ["out/**"]}
networkAccess: {allowHosts: ["api.example.com", "*.wikipedia.org"]}
env: [LANG, API_TOKEN]
limits: {max: {timeoutMs: 60000}}
isolation: {allowDegraded: true}
tools:
  "core:echo": {deny: true}
  "web:fetch": {networkAccess: {allowPrivateAddresses: true}}
`

const digest = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"

func testEntries(t *testing.T) ([]audit.Entry, audit.Environment) {
	t.Helper()
	p, err := policy.Parse([]byte(testPolicy), "/etc/agenthost/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) { return "secret-value-" + k, true }
	tools := []*manifest.Tool{
		{
			ToolID: "web:fetch", Version: "2.0.0", Path: "/tp/web/fetch.tool.json",
			Handler: manifest.Handler{Type: manifest.HandlerWasm, ABI: manifest.ABIExtism, Module: "fetch.wasm"},
			SecurityContext: &manifest.SecurityContext{
				NetworkAccess: &manifest.NetworkAccess{AllowHosts: []string{"api.example.com", "*.wikipedia.org", "evil.org"}},
				Env:           []string{"LANG", "API_TOKEN", "AWS_SECRET_ACCESS_KEY"},
				Limits:        &manifest.Limits{TimeoutMs: 120000, MemoryMb: 64},
			},
		},
		{
			ToolID: "core:echo", Version: "1.0.0", Path: "/tp/core/echo.tool.json",
			Handler: manifest.Handler{Type: manifest.HandlerWasm, Module: "echo.wasm", SHA256: digest},
		},
		{
			ToolID: "fs:write", Version: "1.2.0", Path: "/tp/fs/write.tool.json",
			Handler: manifest.Handler{Type: manifest.HandlerWasm, Module: "write.wasm", SHA256: digest},
			SecurityContext: &manifest.SecurityContext{
				FileAccess: &manifest.FileAccess{
					AllowRead:  []string{"**", "$CACHE/**"},
					AllowWrite: []string{"out/**", "data/**", "$TOOL/x"},
					Mounts:     map[string]string{"/mnt/out": "out", "/mnt/secret": "secret"},
				},
				Limits: &manifest.Limits{Fuel: 1000000, Deterministic: true},
			},
		},
		{
			ToolID: "text:stats", Version: "1.10.0", Path: "/tp/text/stats-new.tool.json",
			Handler: manifest.Handler{Type: manifest.HandlerWasm, Module: "stats.wasm", SHA256: digest},
		},
		{
			ToolID: "text:stats", Version: "1.9.0", Path: "/tp/text/stats.tool.json",
			Handler: manifest.Handler{Type: manifest.HandlerWasm, Module: "stats.wasm", SHA256: digest},
		},
		{
			ToolID: "py:csv", Version: "0.1.0", Path: "/tp/py/csv.tool.json",
			Handler:         manifest.Handler{Type: manifest.HandlerScript, Language: "python", ScriptPath: "csv_tool.py"},
			SecurityContext: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: []string{"data/*.csv"}}, Env: []string{"LANG"}},
		},
	}
	var entries []audit.Entry
	for _, tl := range tools {
		entries = append(entries, audit.Entry{Tool: tl, Grant: p.Grant(tl, env)})
	}
	entries = append(entries,
		audit.Entry{Path: "/tp/broken/bad|name.tool.json", LoadError: errors.New("manifest: /handler: missing property 'type' (see `docs`)")},
		audit.Entry{Path: "/tp/hash/digest.tool.json", Tool: &manifest.Tool{ToolID: "hash:digest"}, LoadError: errors.New("digest mismatch: module hash.wasm has sha256 0000, manifest says 1111")},
	)
	envr := audit.Environment{Protections: []audit.Protection{
		{Name: "landlock", Available: true, Detail: "ABI 4"},
		{Name: "user-namespace", Available: false, Detail: "kernel.unprivileged_userns_clone=0"},
		{Name: "rlimits", Available: true},
	}}
	return entries, envr
}

func TestReport_golden(t *testing.T) {
	entries, env := testEntries(t)
	r := audit.Build(entries, env)
	for _, tc := range []struct{ format, file string }{
		{audit.FormatText, "report.txt"},
		{audit.FormatJSON, "report.json"},
		{audit.FormatMarkdown, "report.md"},
		{audit.FormatHTML, "report.html"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := r.Write(&buf, tc.format); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got := buf.String(); got != string(want) {
				t.Errorf("%s output differs from %s (run go test -update to accept):\n%s", tc.format, path, got)
			}
		})
	}
}

func TestReport_deterministic(t *testing.T) {
	entries, env := testEntries(t)
	var first string
	for i := 0; i < 5; i++ {
		// Reverse the input order each other round: the output must not change.
		if i%2 == 1 {
			for l, r := 0, len(entries)-1; l < r; l, r = l+1, r-1 {
				entries[l], entries[r] = entries[r], entries[l]
			}
		}
		var buf bytes.Buffer
		if err := audit.Build(entries, env).Write(&buf, audit.FormatJSON); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = buf.String()
		} else if buf.String() != first {
			t.Fatalf("round %d differs from round 0", i)
		}
	}
}

func TestReport_neverShowsEnvValues(t *testing.T) {
	entries, env := testEntries(t)
	r := audit.Build(entries, env)
	for _, f := range []string{audit.FormatText, audit.FormatJSON, audit.FormatMarkdown, audit.FormatHTML} {
		var buf bytes.Buffer
		if err := r.Write(&buf, f); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(buf.String(), "secret-value") {
			t.Errorf("%s output contains an environment value", f)
		}
	}
}

// TestReport_htmlEscapes checks that the HTML page escapes what a
// toolpack controls (paths, IDs, error text), so a hostile toolpack
// cannot put markup or script into a reviewer's page.
func TestReport_htmlEscapes(t *testing.T) {
	entries, env := testEntries(t)
	entries = append(entries, audit.Entry{Path: "/tp/<script>alert(1)</script>.tool.json", LoadError: errors.New(`"><img src=x onerror=alert(2)>`)})
	var buf bytes.Buffer
	if err := audit.Build(entries, env).Write(&buf, audit.FormatHTML); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"<script>", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q unescaped", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;", `<table id="tools">`, `<table id="load-errors">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestReport_unknownFormat(t *testing.T) {
	var buf bytes.Buffer
	if err := (audit.Report{}).Write(&buf, "yaml"); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Fatalf("Write(yaml) = %v, want unknown format", err)
	}
}

func TestReport_jsonShape(t *testing.T) {
	r := audit.Build(nil, audit.Environment{})
	var buf bytes.Buffer
	if err := r.Write(&buf, audit.FormatJSON); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tools", "loadErrors", "environment"} {
		if v, ok := m[k].([]any); !ok || len(v) != 0 {
			t.Errorf("%s = %v, want an empty list (not null)", k, m[k])
		}
	}
}

func flags(rs []audit.Risk) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Flag)
	}
	return out
}

func TestRisks(t *testing.T) {
	wasm := manifest.Handler{Type: manifest.HandlerWasm, Module: "m.wasm", SHA256: digest}
	tests := []struct {
		name    string
		policy  string
		handler manifest.Handler
		sc      *manifest.SecurityContext
		env     audit.Environment
		want    []string
	}{
		{name: "nothing requested", handler: wasm, policy: `fileAccess: {allowRead: []}`},
		{name: "reads whole workspace", handler: wasm, sc: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: []string{"**"}}}, want: []string{audit.RiskWholeWorkspace}},
		{name: "reads part of the workspace", handler: wasm, sc: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: []string{"data/**"}}}},
		{name: "workspace write", handler: wasm, policy: `fileAccess: {allowRead: [], allowWrite: ["**"]}`, sc: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowWrite: []string{"out/**"}}}, want: []string{audit.RiskWorkspaceWrite}},
		{name: "tmp and cache writes are not flagged", handler: wasm, policy: `cacheDir: /c`, sc: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowWrite: []string{"$TMP/**", "$CACHE/**"}}}},
		{name: "denied write is not flagged", handler: wasm, sc: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowWrite: []string{"out/**"}}}},
		{name: "network", handler: wasm, policy: `networkAccess: {allowHosts: ["*"]}`, sc: &manifest.SecurityContext{NetworkAccess: &manifest.NetworkAccess{AllowHosts: []string{"api.example.com"}}}, want: []string{audit.RiskNetwork}},
		{name: "wildcard host", handler: wasm, policy: `networkAccess: {allowHosts: ["*"]}`, sc: &manifest.SecurityContext{NetworkAccess: &manifest.NetworkAccess{AllowHosts: []string{"*.example.com"}}}, want: []string{audit.RiskNetwork, audit.RiskWildcardHost}},
		{name: "private", handler: wasm, policy: `networkAccess: {allowHosts: ["10.0.0.7"], allowPrivateAddresses: true}`, sc: &manifest.SecurityContext{NetworkAccess: &manifest.NetworkAccess{AllowHosts: []string{"10.0.0.7"}}}, want: []string{audit.RiskNetwork, audit.RiskPrivate}},
		{name: "private without hosts is not flagged", handler: wasm, policy: `networkAccess: {allowPrivateAddresses: true}`},
		{name: "secrets", handler: wasm, policy: `env: [TOKEN]`, sc: &manifest.SecurityContext{Env: []string{"TOKEN"}}, want: []string{audit.RiskSecrets}},
		{name: "denied secret is not flagged", handler: wasm, sc: &manifest.SecurityContext{Env: []string{"TOKEN"}}},
		{name: "long timeout without fuel", handler: wasm, sc: &manifest.SecurityContext{Limits: &manifest.Limits{TimeoutMs: 30000}}, want: []string{audit.RiskNoFuel}},
		{name: "long timeout with fuel", handler: wasm, sc: &manifest.SecurityContext{Limits: &manifest.Limits{TimeoutMs: 30000, Fuel: 1e9}}},
		{name: "long timeout with policy fuel ceiling", handler: wasm, policy: `limits: {max: {fuel: 1000000000}}`, sc: &manifest.SecurityContext{Limits: &manifest.Limits{TimeoutMs: 30000}}},
		{name: "unpinned", handler: manifest.Handler{Type: manifest.HandlerWasm, Module: "m.wasm"}, want: []string{audit.RiskUnpinned}},
		{name: "script without degraded isolation", handler: manifest.Handler{Type: manifest.HandlerScript, Language: "python"}, want: []string{audit.RiskNativeCode}},
		{name: "degraded, protections unknown", handler: manifest.Handler{Type: manifest.HandlerScript, Language: "python"}, policy: `isolation: {allowDegraded: true}`, want: []string{audit.RiskNativeCode, audit.RiskDegraded}},
		{name: "degraded, protection missing", handler: manifest.Handler{Type: manifest.HandlerScript, Language: "python"}, policy: `isolation: {allowDegraded: true}`, env: audit.Environment{Protections: []audit.Protection{{Name: "landlock", Available: false}}}, want: []string{audit.RiskNativeCode, audit.RiskDegraded}},
		{name: "degraded allowed but all protections present", handler: manifest.Handler{Type: manifest.HandlerScript, Language: "python"}, policy: `isolation: {allowDegraded: true}`, env: audit.Environment{Protections: []audit.Protection{{Name: "landlock", Available: true}}}, want: []string{audit.RiskNativeCode}},
		{name: "denied tool", handler: wasm, policy: `{tools: {"t:x": {deny: true}}}`, sc: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: []string{"**"}}, Limits: &manifest.Limits{TimeoutMs: 60000}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := policy.Parse([]byte(tc.policy), "/etc/policy.yaml")
			if err != nil {
				t.Fatal(err)
			}
			tl := &manifest.Tool{ToolID: "t:x", Version: "1.0.0", Handler: tc.handler, SecurityContext: tc.sc}
			r := audit.Build([]audit.Entry{{Tool: tl, Grant: p.Grant(tl, func(string) (string, bool) { return "v", true })}}, tc.env)
			got := flags(r.Tools[0].Risks)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("risks = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBuild_nilGrant(t *testing.T) {
	tl := &manifest.Tool{ToolID: "t:x", Version: "1.0.0", Handler: manifest.Handler{Type: manifest.HandlerWasm, SHA256: digest},
		SecurityContext: &manifest.SecurityContext{Env: []string{"X"}}}
	r := audit.Build([]audit.Entry{{Tool: tl}}, audit.Environment{})
	got := r.Tools[0]
	if !got.Denied || len(got.Env.Granted) != 0 || len(got.Files.Granted.Read) != 0 || got.Limits.Granted != (audit.LimitValues{}) {
		t.Errorf("tool without grant = %+v, want denied with nothing granted", got)
	}
}

func TestBuild_widenings(t *testing.T) {
	tool := &manifest.Tool{ToolID: "py:x", Version: "1.0.0", Handler: manifest.Handler{Type: manifest.HandlerScript, Language: "python", ScriptPath: "x.py"}}
	g := &policy.Grant{ToolID: "py:x"}
	r := audit.Build([]audit.Entry{{Tool: tool, Grant: g, Widenings: []string{"read data/*.csv is enforced as data/"}}}, audit.Environment{})
	if len(r.Tools) != 1 || r.Summary.WithRisks != 1 {
		t.Fatalf("report %+v", r)
	}
	var found bool
	for _, risk := range r.Tools[0].Risks {
		found = found || (risk.Flag == audit.RiskWidened && strings.Contains(risk.Detail, "data/*.csv"))
	}
	if !found {
		t.Errorf("no %q risk in %+v", audit.RiskWidened, r.Tools[0].Risks)
	}
}
