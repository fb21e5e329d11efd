package manifest_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
)

// base is a valid wasm manifest as a map, so cases can patch it.
func base() map[string]any {
	return map[string]any{
		"toolId":      "text:stats",
		"displayName": "Text statistics",
		"description": "Counts words and lines.",
		"version":     "1.2.3",
		"handler":     map[string]any{"type": "wasm", "module": "stats.wasm", "abi": "wasi-command"},
		"parameters": map[string]any{
			"type": "object", "additionalProperties": false, "required": []any{"text"},
			"properties": map[string]any{"text": map[string]any{"type": "string"}},
		},
	}
}

func encode(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func handler(m map[string]any) map[string]any { return m["handler"].(map[string]any) }

func security(m map[string]any, sc string) {
	var v any
	if err := json.Unmarshal([]byte(sc), &v); err != nil {
		panic(err)
	}
	m["securityContext"] = v
}

// fixture is an example of base's tool with the given fixtures.
func fixture(fixtures string) map[string]any {
	var f any
	if err := json.Unmarshal([]byte(fixtures), &f); err != nil {
		panic(err)
	}
	return map[string]any{"description": "d", "input": map[string]any{"text": "x"}, "fixtures": f}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		patch   func(m map[string]any)
		raw     string // used instead of base when set
		pointer string
		reason  string // substring of the error text
		check   func(t *testing.T, tool *manifest.Tool)
	}{
		{name: "valid wasm", check: func(t *testing.T, tool *manifest.Tool) {
			if tool.Handler.OutputFormat != "json" || tool.Handler.EntryPoint != "" {
				t.Errorf("defaults: %+v", tool.Handler)
			}
			if tool.ParametersSchema() == nil || tool.OutputSchema() != nil {
				t.Error("schemas not compiled as expected")
			}
			if !filepath.IsAbs(tool.Path) || tool.Dir != filepath.Dir(tool.Path) {
				t.Errorf("Path %q Dir %q", tool.Path, tool.Dir)
			}
		}},
		{name: "extism default entry point", patch: func(m map[string]any) { handler(m)["abi"] = "extism" },
			check: func(t *testing.T, tool *manifest.Tool) {
				if tool.Handler.EntryPoint != "call" {
					t.Errorf("entryPoint = %q", tool.Handler.EntryPoint)
				}
			}},
		{name: "extism entry point and config", patch: func(m map[string]any) {
			handler(m)["abi"] = "extism"
			handler(m)["entryPoint"] = "run"
			handler(m)["config"] = map[string]any{"k": "v"}
			handler(m)["outputFormat"] = "text"
		}},
		{name: "script", patch: func(m map[string]any) {
			m["handler"] = map[string]any{"type": "external-script", "scriptPath": "bin/run.py", "language": "python"}
		}},
		{name: "service method", patch: func(m map[string]any) {
			m["handler"] = map[string]any{"type": "service-method", "serviceName": "Game", "methodName": "Player"}
		}},
		{name: "workflow", patch: func(m map[string]any) {
			m["toolId"] = "workflow:summarize_text"
			m["handler"] = map[string]any{"type": "workflow", "workflow": "summarize.yaml"}
		}},
		{name: "full security context", patch: func(m map[string]any) {
			security(m, `{"fileAccess":{"allowRead":["data/**","$TOOL/**","$CACHE"],"allowWrite":["$TMP/**","out/*.json"],"mounts":{"/mnt/data":"data","/srv":"."}},
				"networkAccess":{"allowHosts":["api.example.com","*.wikipedia.org","https://x.org:443"]},"env":["LANG"],
				"limits":{"timeoutMs":5000,"memoryMb":64,"fuel":100000000,"maxOutputBytes":1048576,"deterministic":true}}`)
			m["tags"] = []any{"text", "stats"}
			m["examples"] = []any{map[string]any{"description": "count", "input": map[string]any{"text": "a b"}}}
		}},
		{name: "$schema for editors", patch: func(m map[string]any) { m["$schema"] = "../../abi/manifest.schema.json" }},

		// JSON level
		{name: "invalid JSON", raw: "{\n  \"toolId\": \"a:b\",\n  oops\n}", reason: "line 3, column 3"},
		{name: "empty file", raw: "", reason: "empty"},
		{name: "trailing data", raw: `{"toolId":"a:b"} {}`, reason: "data after the manifest object"},
		{name: "not an object", raw: `[]`, pointer: "", reason: "must be an object"},
		{name: "duplicate key", raw: `{"toolId":"a:b","handler":{"type":"wasm","type":"workflow"}}`, pointer: "/handler/type", reason: `duplicate key "type"`},
		{name: "too large", raw: `{"description":"` + strings.Repeat("x", manifest.MaxManifestBytes) + `"}`, reason: "limit"},

		// schema level: unknown fields at every level
		{name: "unknown top-level field", patch: func(m map[string]any) { m["toolID"] = "x:y" }, pointer: "/toolID", reason: "unknown field 'toolID', did you mean 'toolId'?"},
		{name: "unknown handler field", patch: func(m map[string]any) { handler(m)["modul"] = "x" }, pointer: "/handler/modul", reason: "did you mean 'module'?"},
		{name: "unknown security field", patch: func(m map[string]any) { security(m, `{"network":{}}`) }, pointer: "/securityContext/network", reason: "unknown field"},
		{name: "unknown limits field", patch: func(m map[string]any) { security(m, `{"limits":{"cpu":1}}`) }, pointer: "/securityContext/limits/cpu", reason: "unknown field"},
		{name: "unknown fileAccess field", patch: func(m map[string]any) { security(m, `{"fileAccess":{"allow":["x"]}}`) }, pointer: "/securityContext/fileAccess/allow", reason: "unknown field"},
		{name: "unknown example field", patch: func(m map[string]any) {
			m["examples"] = []any{map[string]any{"description": "d", "input": map[string]any{"text": "x"}, "output": 1}}
		}, pointer: "/examples/0/output", reason: "unknown field"},
		{name: "example fixtures", patch: func(m map[string]any) {
			m["examples"] = []any{fixture(`{"workspace":"testdata/ws","http":[{"url":"https://api.example.com/v1?q=1","status":404,"headers":{"Content-Type":"text/plain"},"body":"no"},
				{"url":"https://api.example.com/v1?q=1","method":"POST","bodyFile":"testdata/reply.json"}]}`)}
		}, check: func(t *testing.T, tool *manifest.Tool) {
			f := tool.Examples[0].Fixtures
			if f == nil || f.Workspace != "testdata/ws" || len(f.HTTP) != 2 || f.HTTP[0].Status != 404 || f.HTTP[1].BodyFile != "testdata/reply.json" {
				t.Errorf("fixtures = %+v", f)
			}
		}},
		{name: "fixture workspace escapes", patch: func(m map[string]any) { m["examples"] = []any{fixture(`{"workspace":"../other"}`)} },
			pointer: "/examples/0/fixtures/workspace", reason: "leaves its folder"},
		{name: "fixture workspace absolute", patch: func(m map[string]any) { m["examples"] = []any{fixture(`{"workspace":"/etc"}`)} },
			pointer: "/examples/0/fixtures/workspace", reason: "is absolute"},
		{name: "fixture URL not http", patch: func(m map[string]any) { m["examples"] = []any{fixture(`{"http":[{"url":"ftp://x.org/a"}]}`)} },
			pointer: "/examples/0/fixtures/http/0/url"},
		{name: "fixture URL with user", patch: func(m map[string]any) { m["examples"] = []any{fixture(`{"http":[{"url":"https://me@x.org/a"}]}`)} },
			pointer: "/examples/0/fixtures/http/0/url", reason: "without user or fragment"},
		{name: "fixture URL without host", patch: func(m map[string]any) { m["examples"] = []any{fixture(`{"http":[{"url":"http:///a"}]}`)} },
			pointer: "/examples/0/fixtures/http/0/url"},
		{name: "fixture body and bodyFile", patch: func(m map[string]any) {
			m["examples"] = []any{fixture(`{"http":[{"url":"https://x.org/a","body":"a","bodyFile":"b"}]}`)}
		}, pointer: "/examples/0/fixtures/http/0", reason: "exclusive"},
		{name: "fixture bodyFile escapes", patch: func(m map[string]any) {
			m["examples"] = []any{fixture(`{"http":[{"url":"https://x.org/a","bodyFile":"../../secret"}]}`)}
		}, pointer: "/examples/0/fixtures/http/0/bodyFile", reason: "leaves its folder"},
		{name: "fixture duplicate response", patch: func(m map[string]any) {
			m["examples"] = []any{fixture(`{"http":[{"url":"https://x.org/a"},{"url":"https://x.org/a","method":"GET"}]}`)}
		}, pointer: "/examples/0/fixtures/http/1", reason: "a second response for GET https://x.org/a"},
		{name: "fixture bad status", patch: func(m map[string]any) {
			m["examples"] = []any{fixture(`{"http":[{"url":"https://x.org/a","status":700}]}`)}
		},
			pointer: "/examples/0/fixtures/http/0/status"},
		{name: "fixture unknown field", patch: func(m map[string]any) { m["examples"] = []any{fixture(`{"files":"testdata"}`)} },
			pointer: "/examples/0/fixtures/files", reason: "unknown field"},
		{name: "missing description", patch: func(m map[string]any) { delete(m, "description") }, pointer: "/description", reason: "missing required field 'description'"},
		{name: "wrong type", patch: func(m map[string]any) { m["version"] = 1 }, pointer: "/version", reason: "must be a string"},
		{name: "bad $schema", patch: func(m map[string]any) { m["$schema"] = "https://example.com/other.json" }, pointer: "/$schema"},

		// tool IDs
		{name: "id without namespace", patch: func(m map[string]any) { m["toolId"] = "stats" }, pointer: "/toolId"},
		{name: "id upper case", patch: func(m map[string]any) { m["toolId"] = "Text:stats" }, pointer: "/toolId"},
		{name: "id digit first", patch: func(m map[string]any) { m["toolId"] = "text:1stats" }, pointer: "/toolId"},
		{name: "id two colons", patch: func(m map[string]any) { m["toolId"] = "a:b:c" }, pointer: "/toolId"},
		{name: "workflow namespace reserved", patch: func(m map[string]any) { m["toolId"] = "workflow:x" }, pointer: "/toolId", reason: "reserved for workflow tools"},
		{name: "mcp namespace reserved", patch: func(m map[string]any) { m["toolId"] = "mcp:x" }, pointer: "/toolId", reason: "reserved for tools imported from MCP servers"},
		{name: "workflow handler outside namespace", patch: func(m map[string]any) {
			m["handler"] = map[string]any{"type": "workflow", "workflow": "w.yaml"}
		}, pointer: "/toolId", reason: `must be in the "workflow" namespace`},

		// versions
		{name: "version v prefix", patch: func(m map[string]any) { m["version"] = "v1.0.0" }, pointer: "/version"},
		{name: "version two parts", patch: func(m map[string]any) { m["version"] = "1.0" }, pointer: "/version"},
		{name: "version leading zero", patch: func(m map[string]any) { m["version"] = "1.02.0" }, pointer: "/version"},
		{name: "version prerelease ok", patch: func(m map[string]any) { m["version"] = "1.0.0-rc.1+build.5" }},

		// handlers
		{name: "wasm without abi", patch: func(m map[string]any) { delete(handler(m), "abi") }, pointer: "/handler/abi", reason: "missing required field 'abi'"},
		{name: "wasm bad abi", patch: func(m map[string]any) { handler(m)["abi"] = "wasi" }, pointer: "/handler/abi", reason: `"wasi-command", "extism"`},
		{name: "wasm without module", patch: func(m map[string]any) { delete(handler(m), "module") }, pointer: "/handler/module"},
		{name: "wasi-command entry point", patch: func(m map[string]any) { handler(m)["entryPoint"] = "run" }, pointer: "/handler/entryPoint", reason: "applies only to abi"},
		{name: "script field on wasm", patch: func(m map[string]any) { handler(m)["language"] = "python" }, pointer: "/handler/language", reason: `language does not apply to handler type "wasm"`},
		{name: "bad sha256", patch: func(m map[string]any) { handler(m)["sha256"] = strings.Repeat("A", 64) }, pointer: "/handler/sha256"},
		{name: "short sha256", patch: func(m map[string]any) { handler(m)["sha256"] = strings.Repeat("a", 63) }, pointer: "/handler/sha256"},
		{name: "long sha256", patch: func(m map[string]any) { handler(m)["sha256"] = strings.Repeat("a", 65) }, pointer: "/handler/sha256"},
		{name: "bad output format", patch: func(m map[string]any) { handler(m)["outputFormat"] = "xml" }, pointer: "/handler/outputFormat"},
		{name: "config not strings", patch: func(m map[string]any) { handler(m)["config"] = map[string]any{"n": 1} }, pointer: "/handler/config/n"},
		{name: "module escapes", patch: func(m map[string]any) { handler(m)["module"] = "../x.wasm" }, pointer: "/handler/module"},
		{name: "module absolute", patch: func(m map[string]any) { handler(m)["module"] = "/etc/x.wasm" }, pointer: "/handler/module"},
		{name: "module backslash", patch: func(m map[string]any) { handler(m)["module"] = `..\x.wasm` }, pointer: "/handler/module"},
		{name: "script bad language", patch: func(m map[string]any) {
			m["handler"] = map[string]any{"type": "external-script", "scriptPath": "run.rb", "language": "ruby"}
		}, pointer: "/handler/language"},
		{name: "script without language", patch: func(m map[string]any) {
			m["handler"] = map[string]any{"type": "external-script", "scriptPath": "run.py"}
		}, pointer: "/handler/language"},
		{name: "unknown handler type", patch: func(m map[string]any) { m["handler"] = map[string]any{"type": "docker"} }, pointer: "/handler/type"},

		// schemas and examples
		{name: "parameters not object type", patch: func(m map[string]any) { m["parameters"] = map[string]any{"type": "string"} }, pointer: "/parameters/type"},
		{name: "parameters without type", patch: func(m map[string]any) { m["parameters"] = map[string]any{"properties": map[string]any{}} }, pointer: "/parameters/type"},
		{name: "parameters invalid schema", patch: func(m map[string]any) {
			m["parameters"] = map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "strng"}}}
		}, pointer: "/parameters", reason: "not a valid JSON Schema"},
		{name: "parameters remote ref", patch: func(m map[string]any) {
			m["parameters"] = map[string]any{"type": "object", "$ref": "https://example.com/s.json"}
		}, pointer: "/parameters", reason: "remote $ref"},
		{name: "output invalid schema", patch: func(m map[string]any) { m["output"] = map[string]any{"minimum": "x"} }, pointer: "/output"},
		{name: "example input invalid", patch: func(m map[string]any) {
			m["examples"] = []any{map[string]any{"description": "d", "input": map[string]any{"txt": "x"}}}
		}, pointer: "/examples/0/input", reason: "did you mean 'text'?"},
		{name: "example expected output invalid", patch: func(m map[string]any) {
			m["output"] = map[string]any{"type": "object"}
			m["examples"] = []any{map[string]any{"description": "d", "input": map[string]any{"text": "x"}, "expectedOutput": 3}}
		}, pointer: "/examples/0/expectedOutput"},
		{name: "duplicate tag", patch: func(m map[string]any) { m["tags"] = []any{"a", "a"} }, pointer: "/tags"},
		{name: "tag of 64 ok", patch: func(m map[string]any) { m["tags"] = []any{strings.Repeat("t", 64)} }},
		{name: "tag of 65", patch: func(m map[string]any) { m["tags"] = []any{strings.Repeat("t", 65)} }, pointer: "/tags/0"},
		{name: "empty tag", patch: func(m map[string]any) { m["tags"] = []any{""} }, pointer: "/tags/0"},

		// security context
		{name: "read absolute", patch: func(m map[string]any) { security(m, `{"fileAccess":{"allowRead":["/etc/passwd"]}}`) }, pointer: "/securityContext/fileAccess/allowRead/0", reason: "absolute"},
		{name: "read dotdot", patch: func(m map[string]any) { security(m, `{"fileAccess":{"allowRead":["data/../../x"]}}`) }, pointer: "/securityContext/fileAccess/allowRead/0", reason: ".."},
		{name: "write tmp dotdot", patch: func(m map[string]any) { security(m, `{"fileAccess":{"allowWrite":["$TMP/../x"]}}`) }, pointer: "/securityContext/fileAccess/allowWrite/0"},
		{name: "unknown root", patch: func(m map[string]any) { security(m, `{"fileAccess":{"allowRead":["$HOME/x"]}}`) }, pointer: "/securityContext/fileAccess/allowRead/0", reason: "unknown root"},
		{name: "dollar inside", patch: func(m map[string]any) { security(m, `{"fileAccess":{"allowRead":["a/$TMP/x"]}}`) }, pointer: "/securityContext/fileAccess/allowRead/0"},
		{name: "home path", patch: func(m map[string]any) { security(m, `{"fileAccess":{"allowRead":["~/x"]}}`) }, pointer: "/securityContext/fileAccess/allowRead/0"},
		{name: "mount relative guest", patch: func(m map[string]any) { security(m, `{"fileAccess":{"mounts":{"mnt":"data"}}}`) }, reason: "mount point \"mnt\" must be a clean absolute"},
		{name: "mount shadows tmp", patch: func(m map[string]any) { security(m, `{"fileAccess":{"mounts":{"/tmp":"data"}}}`) }, reason: "shadow /tmp"},
		{name: "mount inside tool", patch: func(m map[string]any) { security(m, `{"fileAccess":{"mounts":{"/tool/x":"data"}}}`) }, reason: "shadow /tool"},
		{name: "mount root", patch: func(m map[string]any) { security(m, `{"fileAccess":{"mounts":{"/":"data"}}}`) }, reason: "mount point"},
		{name: "mount unclean", patch: func(m map[string]any) { security(m, `{"fileAccess":{"mounts":{"/mnt/../workspace":"data"}}}`) }, reason: "clean absolute"},
		{name: "mount overlap", patch: func(m map[string]any) { security(m, `{"fileAccess":{"mounts":{"/mnt":"a","/mnt/b":"b"}}}`) }, reason: "overlaps"},
		{name: "mount source escapes", patch: func(m map[string]any) { security(m, `{"fileAccess":{"mounts":{"/mnt":"../x"}}}`) }, reason: "mount source"},
		{name: "mount source glob", patch: func(m map[string]any) { security(m, `{"fileAccess":{"mounts":{"/mnt":"data/*"}}}`) }, reason: "plain workspace-relative folder"},
		{name: "host with path", patch: func(m map[string]any) { security(m, `{"networkAccess":{"allowHosts":["example.com/x"]}}`) }, pointer: "/securityContext/networkAccess/allowHosts/0"},
		{name: "host with userinfo", patch: func(m map[string]any) { security(m, `{"networkAccess":{"allowHosts":["u@example.com"]}}`) }, pointer: "/securityContext/networkAccess/allowHosts/0"},
		{name: "bad env name", patch: func(m map[string]any) { security(m, `{"env":["A=B"]}`) }, pointer: "/securityContext/env/0"},
		{name: "zero timeout", patch: func(m map[string]any) { security(m, `{"limits":{"timeoutMs":0}}`) }, pointer: "/securityContext/limits/timeoutMs"},
		{name: "negative memory", patch: func(m map[string]any) { security(m, `{"limits":{"memoryMb":-1}}`) }, pointer: "/securityContext/limits/memoryMb"},
		{name: "memory over 4 GiB", patch: func(m map[string]any) { security(m, `{"limits":{"memoryMb":5000}}`) }, pointer: "/securityContext/limits/memoryMb"},
		{name: "fractional fuel", patch: func(m map[string]any) { security(m, `{"limits":{"fuel":1.5}}`) }, pointer: "/securityContext/limits/fuel"},
		{name: "huge fuel", patch: func(m map[string]any) { security(m, `{"limits":{"fuel":18446744073709551615}}`) }, pointer: "/securityContext/limits/fuel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.raw)
			if tc.raw == "" && tc.patch != nil || tc.raw == "" && tc.reason == "" {
				m := base()
				if tc.patch != nil {
					tc.patch(m)
				}
				data = encode(t, m)
			}
			tool, err := manifest.Parse(data, "tools/stats.tool.json")
			wantErr := tc.pointer != "" || tc.reason != ""
			if !wantErr {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tc.check != nil {
					tc.check(t, tool)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			var me *manifest.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %T is not *manifest.Error: %v", err, err)
			}
			if !errors.Is(err, abi.ErrLoadError) {
				t.Error("not a LOAD_ERROR")
			}
			if !strings.HasSuffix(me.Path, filepath.Join("tools", "stats.tool.json")) || !filepath.IsAbs(me.Path) {
				t.Errorf("Path = %q", me.Path)
			}
			if tc.pointer != "" && me.Pointer != tc.pointer {
				t.Errorf("Pointer = %q, want %q (%v)", me.Pointer, tc.pointer, err)
			}
			if tc.reason != "" && !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not contain %q", err, tc.reason)
			}
		})
	}
}

func TestValidate_goLiteral(t *testing.T) {
	tool := &manifest.Tool{
		ToolID: "game:player", DisplayName: "Player", Description: "Looks up a player.", Version: "0.1.0",
		Handler:    manifest.Handler{Type: manifest.HandlerServiceMethod, ServiceName: "Game", MethodName: "Player"},
		Parameters: json.RawMessage(`{"type":"object","properties":{"player_id":{"type":"integer"}}}`),
	}
	if tool.Validated() || tool.ParametersSchema() != nil {
		t.Fatal("validated before Validate")
	}
	if err := tool.Validate(); err != nil {
		t.Fatal(err)
	}
	if tool.ParametersSchema() == nil || tool.Digest() != "" || tool.ModulePath() != "" {
		t.Error("unexpected state after Validate")
	}
	bad := *tool
	bad.Handler.Module = "x.wasm"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("module on a service-method: %v", err)
	}
	long := *tool
	long.DisplayName = strings.Repeat("x", 201)
	if err := long.Validate(); err == nil || !strings.Contains(err.Error(), "/displayName") {
		t.Errorf("over-long displayName: %v", err)
	}
	broken := *tool
	broken.Parameters = json.RawMessage(`{"type":`)
	if err := broken.Validate(); err == nil {
		t.Error("invalid parameters JSON accepted")
	}
}

func TestValidID(t *testing.T) {
	tests := []struct {
		id, ns, name string
		ok           bool
	}{
		{"core:echo", "core", "echo", true},
		{"text:word-count", "text", "word-count", true},
		{"fs.v2:read_file", "fs.v2", "read_file", true},
		{"workflow:summarize_text", "workflow", "summarize_text", true},
		{"", "", "", false},
		{"echo", "", "", false},
		{":echo", "", "", false},
		{"core:", "", "", false},
		{"Core:echo", "", "", false},
		{"core:Echo", "", "", false},
		{"1core:echo", "", "", false},
		{"core:-echo", "", "", false},
		{"core:echo:x", "", "", false},
		{"core:ech o", "", "", false},
		{"core:écho", "", "", false},
		{"a:" + strings.Repeat("b", 200), "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			ns, name, err := manifest.SplitID(tc.id)
			if (err == nil) != tc.ok {
				t.Fatalf("SplitID(%q) err = %v", tc.id, err)
			}
			if ns != tc.ns || name != tc.name {
				t.Errorf("got %q %q", ns, name)
			}
			if (manifest.ValidID(tc.id) == nil) != tc.ok {
				t.Error("ValidID disagrees with SplitID")
			}
		})
	}
}

func TestCompareVersions(t *testing.T) {
	// each is lower than the next (semver.org §11 example plus numeric cases)
	order := []string{"not-a-version", "0.9.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0", "10.0.0", "99999999999999999999.0.0"}
	for i := range order {
		for j := range order {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := manifest.CompareVersions(order[i], order[j]); got != want {
				t.Errorf("CompareVersions(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	if manifest.CompareVersions("1.0.0+a", "1.0.0+b") != 0 {
		t.Error("build metadata must not count")
	}
	for _, bad := range []string{"1", "1.0", "01.0.0", "1.0.0-", "1.0.0-01", "1.0.0+", "v1.0.0", "1.0.0-a..b", " 1.0.0"} {
		if manifest.ValidVersion(bad) == nil {
			t.Errorf("ValidVersion(%q) accepted", bad)
		}
	}
}

func TestError(t *testing.T) {
	e := &manifest.Error{Path: "/a/x.tool.json", Pointer: "/version", Reason: "invalid version", Err: os.ErrNotExist}
	if e.Error() != "manifest /a/x.tool.json at /version: invalid version: file does not exist" {
		t.Errorf("Error() = %q", e.Error())
	}
	if !errors.Is(e, os.ErrNotExist) || !errors.Is(e, abi.ErrLoadError) || errors.Is(e, abi.ErrToolError) {
		t.Error("errors.Is chain is wrong")
	}
}

// TestIDPartHintIsValid pins the hint of an invalid tool ID: the suggested
// ID must itself be valid (it suggested "core:My Tool" for "My Tool").
func TestIDPartHintIsValid(t *testing.T) {
	for _, in := range []string{"My Tool", "echo", "9lives", "Ünïcode ID!", "", "a::b", "--", "x.y_z"} {
		t.Run(in, func(t *testing.T) {
			id := "core:" + manifest.IDPart(in)
			if err := manifest.ValidID(id); err != nil {
				t.Errorf("IDPart(%q) gives %q, which is invalid: %v", in, id, err)
			}
		})
	}
}
