package policy_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/policy"
)

const fullYAML = `# every key of the policy file
workspace: ./work
fileAccess:
  allowRead: ["**"]
  allowWrite: ["out/**"]
networkAccess:
  allowHosts: ["api.example.com", "*.wikipedia.org"]
  allowPrivateAddresses: false
env: [LANG]
limits:
  default: { timeoutMs: 5000, memoryMb: 128, maxOutputBytes: 65536, fuel: 0, deterministic: false }
  max:     { timeoutMs: 30000, memoryMb: 512, maxOutputBytes: 1048576, fuel: 0 }
isolation: { allowDegraded: false }
tools:
  "core:echo": { deny: true }
  "web:fetch": { networkAccess: { allowHosts: ["api.example.com"] }, config: { key: "v" } }
pool: { memoryMb: 32 }
cacheDir: ./cache
requireSignature: false
trustedKeys: []
`

const fullJSON = `{
  "workspace": "./work",
  "fileAccess": {"allowRead": ["**"], "allowWrite": ["out/**"]},
  "networkAccess": {"allowHosts": ["api.example.com", "*.wikipedia.org"], "allowPrivateAddresses": false},
  "env": ["LANG"],
  "limits": {
    "default": {"timeoutMs": 5000, "memoryMb": 128, "maxOutputBytes": 65536, "fuel": 0, "deterministic": false},
    "max": {"timeoutMs": 30000, "memoryMb": 512, "maxOutputBytes": 1048576, "fuel": 0}
  },
  "isolation": {"allowDegraded": false},
  "tools": {
    "core:echo": {"deny": true},
    "web:fetch": {"networkAccess": {"allowHosts": ["api.example.com"]}, "config": {"key": "v"}}
  },
  "pool": {"memoryMb": 32},
  "cacheDir": "./cache",
  "requireSignature": false,
  "trustedKeys": []
}`

func TestParse_full(t *testing.T) {
	for _, tc := range []struct{ name, doc string }{
		{"policy.yaml", fullYAML},
		{"policy.json", fullJSON},
		{"policy", fullYAML},
		{"policy", fullJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := policy.Parse([]byte(tc.doc), filepath.Join(dir, tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if p.Workspace != filepath.Join(dir, "work") || p.CacheDir != filepath.Join(dir, "cache") {
				t.Errorf("Workspace, CacheDir = %q, %q; want them relative to the file", p.Workspace, p.CacheDir)
			}
			if !slices.Equal(p.FileAccess.AllowWrite, []string{"out/**"}) || len(p.NetworkAccess.AllowHosts) != 2 {
				t.Errorf("FileAccess, NetworkAccess = %+v, %+v", p.FileAccess, p.NetworkAccess)
			}
			if p.Limits.Default.TimeoutMs != 5000 || p.Limits.Max.MemoryMb != 512 || p.Pool.MemoryMb != 32 {
				t.Errorf("Limits, Pool = %+v, %+v", p.Limits, p.Pool)
			}
			if !p.Tools["core:echo"].Deny || p.Tools["web:fetch"].Config["key"] != "v" {
				t.Errorf("Tools = %+v", p.Tools)
			}
			if p.PoolMemoryBytes() != 32<<20 {
				t.Errorf("PoolMemoryBytes = %d", p.PoolMemoryBytes())
			}
		})
	}
}

func TestParse_defaults(t *testing.T) {
	for _, doc := range []string{"", "# only a comment\n", "{}", "workspace: ."} {
		p, err := policy.Parse([]byte(doc), filepath.Join(t.TempDir(), "p.yaml"))
		if err != nil {
			t.Fatalf("Parse(%q): %v", doc, err)
		}
		d := policy.Default()
		if !slices.Equal(p.FileAccess.AllowRead, []string{"**"}) || len(p.FileAccess.AllowWrite) != 0 || len(p.NetworkAccess.AllowHosts) != 0 {
			t.Errorf("Parse(%q) file/network = %+v %+v, want the defaults", doc, p.FileAccess, p.NetworkAccess)
		}
		if p.Limits != d.Limits || p.Pool != d.Pool {
			t.Errorf("Parse(%q) limits = %+v pool %+v, want %+v %+v", doc, p.Limits, p.Pool, d.Limits, d.Pool)
		}
		if !filepath.IsAbs(p.Workspace) {
			t.Errorf("Workspace %q is not absolute", p.Workspace)
		}
	}
}

func TestDefault(t *testing.T) {
	p := policy.Default()
	wd, _ := os.Getwd()
	if p.Workspace != wd {
		t.Errorf("Workspace = %q, want %q", p.Workspace, wd)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	want := policy.LimitRange{
		Default: policy.DefaultLimits{TimeoutMs: 10000, MemoryMb: 256, MaxOutputBytes: 1 << 20},
		Max:     policy.MaxLimits{TimeoutMs: 60000, MemoryMb: 1024, MaxOutputBytes: 16 << 20},
	}
	if p.Limits != want {
		t.Errorf("Limits = %+v, want %+v", p.Limits, want)
	}
	if p.Pool.MemoryMb != 64 || p.RequireSignature || len(p.Env) != 0 {
		t.Errorf("Default() = %+v", p)
	}
}

func TestParse_errors(t *testing.T) {
	tests := []struct {
		name, file, doc string
		want            []string // substrings of the error
	}{
		{"unknown top-level key", "p.yaml", "workspce: ./x\n", []string{"p.yaml: /: additional properties 'workspce' not allowed ('workspce': did you mean 'workspace'?)"}},
		{"unknown key without suggestion", "p.yaml", "colour: blue\n", []string{"additional properties 'colour' not allowed"}},
		{"unknown nested key", "p.yaml", "fileAccess: {allowRaed: []}\n", []string{"/fileAccess: additional properties 'allowRaed' not allowed ('allowRaed': did you mean 'allowRead'?)"}},
		{"unknown tool key", "p.json", `{"tools": {"core:echo": {"dney": true}}}`, []string{"/tools/core:echo: additional properties 'dney' not allowed"}},
		{"wrong type", "p.yaml", "limits: {default: {timeoutMs: soon}}\n", []string{"/limits/default/timeoutMs: got string, want integer"}},
		{"deterministic under max", "p.yaml", "limits: {max: {deterministic: true}}\n", []string{"/limits/max: additional properties 'deterministic'"}},
		{"bad tool id", "p.yaml", "tools: {Echo: {deny: true}}\n", []string{"/tools/Echo: 'Echo' does not match pattern"}},
		{"bad env name", "p.yaml", "env: [\"A-B\"]\n", []string{"/env/0"}},
		{"zero timeout", "p.yaml", "limits: {max: {timeoutMs: 0}}\n", []string{"/limits/max/timeoutMs: minimum"}},
		{"duplicate yaml key", "p.yaml", "tools:\n  \"core:echo\": {deny: true}\n  \"core:echo\": {deny: false}\n", []string{"p.yaml", "already set"}},
		{"duplicate json key", "p.json", `{"tools": {"core:echo": {"deny": true, "deny": false}}}`, []string{"p.json", `/tools/core:echo/deny: duplicate key "deny"`}},
		{"json syntax", "p.json", `{"env": [}`, []string{"p.json", "json:"}},
		{"json trailing data", "p.json", `{} {}`, []string{"data after the top-level value"}},
		{"yaml syntax", "p.yaml", "env: [\n", []string{"p.yaml", "yaml:"}},
		{"not an object", "p.yaml", "- a\n- b\n", []string{"got array, want object"}},
		{"absolute pattern", "p.yaml", "fileAccess: {allowRead: [\"/etc/**\"]}\n", []string{"/fileAccess/allowRead/0", "absolute"}},
		{"dotdot pattern", "p.yaml", "fileAccess: {allowWrite: [\"../**\"]}\n", []string{"/fileAccess/allowWrite/0", "leaves its root"}},
		{"dollar root in ceiling", "p.yaml", "fileAccess: {allowWrite: [\"$TOOL/**\"]}\n", []string{"/fileAccess/allowWrite/0", "workspace-relative"}},
		{"bad host", "p.yaml", "networkAccess: {allowHosts: [\"ftp://x.org\"]}\n", []string{"/networkAccess/allowHosts/0", "not http or https"}},
		{"bad tool host", "p.yaml", "tools: {\"web:fetch\": {networkAccess: {allowHosts: [\"a.*.org\"]}}}\n", []string{"/tools/web:fetch/networkAccess/allowHosts/0"}},
		{"default above max", "p.yaml", "limits: {default: {timeoutMs: 90000}}\n", []string{"/limits/default/timeoutMs: 90000 exceeds the maximum 60000"}},
		{"fuel default above max", "p.yaml", "limits: {default: {fuel: 10}, max: {fuel: 5}}\n", []string{"/limits/default/fuel: 10 exceeds the maximum 5"}},
		{"per-tool max looser", "p.yaml", "tools: {\"a:b\": {limits: {max: {memoryMb: 4096}}}}\n", []string{"/tools/a:b/limits/max/memoryMb: 4096 is above the policy-wide maximum 1024"}},
		{"per-tool fuel looser", "p.yaml", "limits: {max: {fuel: 100}}\ntools: {\"a:b\": {limits: {max: {fuel: 1000}}}}\n", []string{"/tools/a:b/limits/max/fuel"}},
		{"per-tool default above own max", "p.yaml", "tools: {\"a:b\": {limits: {default: {timeoutMs: 5000}, max: {timeoutMs: 1000}}}}\n", []string{"/tools/a:b/limits/default/timeoutMs: 5000 exceeds the maximum 1000"}},
		{"requireSignature without keys", "p.yaml", "requireSignature: true\n", []string{"/requireSignature: requireSignature needs trustedKeys"}},
		{"trustedKeys not a signer line", "p.yaml", "trustedKeys: [\"ed25519:abc\"]\n", []string{"/trustedKeys: trusted key 1: \"ed25519:abc\" is not a key line"}},
		{"trustedKeys unenforced option", "p.yaml", "trustedKeys: [\"alice cert-authority ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIh1ZpHKmWuT8NDW6Ijvpk3vHw+RzbUrq4Hxf9n1UVRh\"]\n", []string{"/trustedKeys", "cert-authority"}},
		{"tilde", "p.yaml", "workspace: ~/work\n", []string{"/workspace", "not expanded"}},
		{"two problems", "p.yaml", "env: [\"1X\"]\npool: {memoryMb: -1}\n", []string{"/env/0", "/pool/memoryMb"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.Parse([]byte(tc.doc), tc.file)
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", tc.want)
			}
			var pe *policy.Error
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not a *policy.Error", err)
			} else if pe.File != tc.file {
				t.Errorf("Error.File = %q, want %q", pe.File, tc.file)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParse_trustedKeys(t *testing.T) {
	p, err := policy.Parse([]byte("requireSignature: true\ntrustedKeys: [\"alice@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIh1ZpHKmWuT8NDW6Ijvpk3vHw+RzbUrq4Hxf9n1UVRh\"]\n"), "p.yaml")
	if err != nil || !p.RequireSignature || len(p.Signers()) != 1 || p.Signers()[0].Principals[0] != "alice@example.com" {
		t.Fatalf("%v %+v", err, p)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conf", "policy.yml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("workspace: ../ws\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := policy.Load(path); err == nil || !strings.Contains(err.Error(), "/workspace: ") {
		t.Fatalf("Load with a missing workspace = %v, want a /workspace error", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "ws"); p.Workspace != want {
		t.Errorf("Workspace = %q, want %q", p.Workspace, want)
	}
	if p.Source() != path {
		t.Errorf("Source() = %q, want %q", p.Source(), path)
	}
	if _, err := policy.Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrNotExist", err)
	}
}

func TestValidate_handMade(t *testing.T) {
	yes := true
	p := &policy.Policy{
		FileAccess: policy.FileAccess{AllowRead: []string{"a/../b"}},
		Tools: map[string]policy.ToolPolicy{
			"x:y": {NetworkAccess: &policy.ToolNetworkAccess{AllowHosts: []string{"*.*"}, AllowPrivateAddresses: &yes}},
		},
		Limits: policy.LimitRange{Default: policy.DefaultLimits{MemoryMb: -1}},
	}
	err := p.Validate()
	for _, w := range []string{"policy: /fileAccess/allowRead/0", "/limits/default/memoryMb", "/tools/x:y/networkAccess/allowHosts/0"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %v, want it to mention %q", err, w)
		}
	}
	if err := (&policy.Policy{}).Validate(); err != nil {
		t.Errorf("zero Policy: Validate() = %v", err)
	}
}

// TestPolicy_jsonRoundTrip checks that a Policy marshals to a document its
// own schema accepts and that parsing it gives the same policy back, so
// the Go types and abi/policy.schema.json agree.
func TestPolicy_jsonRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, doc := range []string{"", fullYAML, `tools: {"a:b": {env: [], fileAccess: {allowRead: []}, networkAccess: {allowPrivateAddresses: false}}}`} {
		p, err := policy.Parse([]byte(doc), filepath.Join(dir, "p.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := policy.Parse(b, filepath.Join(dir, "p.json"))
		if err != nil {
			t.Fatalf("re-parse %s: %v", b, err)
		}
		b2, _ := json.Marshal(q)
		if string(b) != string(b2) {
			t.Errorf("round trip changed the policy:\n%s\n%s", b, b2)
		}
		if tp, ok := q.Tools["a:b"]; ok && (tp.Env == nil || tp.FileAccess.AllowRead == nil || tp.FileAccess.AllowWrite != nil || tp.NetworkAccess.AllowPrivateAddresses == nil) {
			t.Errorf("round trip lost the difference between absent and empty: %+v", tp)
		}
	}
}
