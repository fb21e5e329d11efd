package llm_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/wire"
	"github.com/agenthost/agenthost/host/workflow"
)

// sdkDir holds the official SDKs (npm ci there; .ci/run does).
const sdkDir = "testdata/sdk"

func needSDKs(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(sdkDir, "node_modules", "@google", "genai"))
	if err != nil || modErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or the provider SDKs missing (.ci/run runs npm ci in host/llm/%s): %v %v", sdkDir, err, modErr)
		}
		t.Skip("node or the provider SDKs are not installed (npm ci in host/llm/testdata/sdk)")
	}
	return node
}

// allDefs gathers every tool a model may be offered: the first-party
// toolpacks and Go tool (llm:complete), the example guests and test
// packs, the workflows, and the tools of the MCP servers the tests import (the Go test server, and
// the reference server-everything when installed).
func allDefs(t *testing.T) []wire.Def {
	t.Helper()
	var defs []wire.Def
	var manifests []string
	for _, g := range []string{"../../toolpacks/*/*.tool.json", "../../examples/guests/*/*.tool.json", "../../cmd/agenthost/testdata/*pack/*.tool.json", "../registry/testdata/packs/*/*.tool.json"} {
		m, _ := filepath.Glob(g)
		manifests = append(manifests, m...)
	}
	seen := map[string]bool{}
	for _, p := range manifests {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			ToolID      string          `json:"toolId"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(b, &m) != nil || m.ToolID == "" || seen[m.ToolID] {
			continue // a deliberately broken test manifest, or a second version
		}
		seen[m.ToolID] = true
		defs = append(defs, wire.Def{ID: m.ToolID, Description: m.Description, Parameters: m.Parameters})
	}
	wfs, _ := filepath.Glob("../../toolpacks/workflows/*.workflow.json")
	for _, p := range wfs {
		w, err := workflow.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, wire.Def{ID: "workflow:" + w.ID, Description: w.Description, Parameters: w.Parameters()})
	}
	if len(wfs) == 0 {
		t.Fatal("no workflows found")
	}
	// The first-party Go tool, its schema inferred from its Go type.
	rp, _ := llm.ParseReplay(nil)
	h, err := host.New(context.Background(), host.Options{Tools: []host.Tool{agent.CompleteTool(rp, "m")}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	for _, tl := range h.Tools(host.Query{}) {
		defs = append(defs, wire.Def{ID: tl.ToolID, Description: tl.Description, Parameters: tl.Parameters})
	}
	defs = append(defs, mcpDefs(t, "test", exec.Command("go", "run", "../runner/mcpclient/testdata/server"))...)
	everything, _ := filepath.Abs("../runner/mcpclient/testdata/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(everything); err == nil {
		defs = append(defs, mcpDefs(t, "everything", exec.Command("node", everything, "stdio"))...)
	} else if os.Getenv("CI") != "" {
		t.Fatalf("server-everything is missing (.ci/run runs npm ci in host/runner/mcpclient/testdata/everything): %v", err)
	}
	return defs
}

// mcpDefs lists an MCP server's tools over stdio with the official Go
// SDK, as agenthost imports them (mcp:<server>.<tool>).
func mcpDefs(t *testing.T, server string, cmd *exec.Cmd) []wire.Def {
	t.Helper()
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "sdk-test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("MCP server %s: %v", server, err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var defs []wire.Def
	for _, tl := range res.Tools {
		params, _ := json.Marshal(tl.InputSchema)
		defs = append(defs, wire.Def{ID: "mcp:" + server + "." + tl.Name, Description: tl.Description, Parameters: params})
	}
	if len(defs) == 0 {
		t.Fatalf("MCP server %s has no tools", server)
	}
	return defs
}

// captured is what a capture server received, by provider.
type captured struct {
	mu     sync.Mutex
	bodies map[string][]byte
}

// captureServer answers each provider's endpoint on loopback with a
// minimal valid answer, keeping the request body.
func captureServer(t *testing.T) (*httptest.Server, *captured) {
	c := &captured{bodies: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var who, answer string
		switch {
		case r.URL.Path == "/v1/chat/completions":
			who, answer = "openai", `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`
		case r.URL.Path == "/v1/messages":
			who, answer = "anthropic", `{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`
		case strings.HasSuffix(r.URL.Path, ":generateContent"):
			who, answer = "gemini", `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`
		default:
			http.NotFound(w, r)
			return
		}
		c.mu.Lock()
		c.bodies[who] = b
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, c
}

// sdkBuild exports defs in each provider's format, has the official SDKs
// send them to a capture server, and returns what each SDK said and what
// each request held.
func sdkBuild(t *testing.T, node string, formats map[string]any) (map[string]string, map[string][]byte) {
	t.Helper()
	srv, c := captureServer(t)
	path := filepath.Join(t.TempDir(), "defs.json")
	b, _ := json.Marshal(formats)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "build.mjs", srv.URL, path)
	cmd.Dir = sdkDir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr)
	}
	var said map[string]string
	if err := json.Unmarshal(out, &said); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return said, c.bodies
}

func exportAll(t *testing.T, defs []wire.Def) map[string]any {
	t.Helper()
	formats := map[string]any{}
	for _, f := range []string{"openai", "anthropic", "gemini"} {
		out, err := wire.Export(f, defs)
		if err != nil {
			t.Fatal(err)
		}
		formats[f] = out
	}
	return formats
}

// toolCount is the number of tool definitions in a captured body.
func toolCount(provider string, body []byte) int {
	var b struct {
		Tools []struct {
			FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &b)
	if provider != "gemini" {
		return len(b.Tools)
	}
	n := 0
	for _, t := range b.Tools {
		n += len(t.FunctionDeclarations)
	}
	return n
}

// TestSDKRequests builds a real request with each provider's official
// SDK from the export of every first-party, example, workflow and
// imported MCP tool, and checks what reached the wire against that
// provider's documented rules: all of them pass, for every tool.
func TestSDKRequests(t *testing.T) {
	node := needSDKs(t)
	defs := allDefs(t)
	said, bodies := sdkBuild(t, node, exportAll(t, defs))
	for _, p := range []string{"openai", "anthropic", "gemini"} {
		if said[p] != "ok" {
			t.Errorf("%s: the SDK failed: %s", p, said[p])
			continue
		}
		if n := toolCount(p, bodies[p]); n != len(defs) {
			t.Errorf("%s: %d tools on the wire, want %d", p, n, len(defs))
		}
		if err := llm.CheckRequest(p, bodies[p]); err != nil {
			t.Errorf("%s refuses the request:\n%v", p, err)
		}
	}
	bySource := map[string]int{}
	for _, d := range defs {
		src, _, _ := strings.Cut(d.ID, ":")
		if src == "mcp" {
			src, _, _ = strings.Cut(d.ID, ".")
		}
		bySource[src]++
	}
	t.Logf("%d tools (%v), each accepted by the rules of openai, anthropic and gemini as their SDKs sent it", len(defs), bySource)
}

// TestSDKRequestsCatchRawSchemas is the control: the manifests' own
// schemas, sent as the export did before its rewrite, are refused by the
// rules (OpenAI, Anthropic) or by the SDK itself (Gemini's `parameters`),
// naming exactly the tools with a top-level combinator.
func TestSDKRequestsCatchRawSchemas(t *testing.T) {
	node := needSDKs(t)
	defs := allDefs(t)
	tab, err := wire.NewTable(func() []string {
		var ids []string
		for _, d := range defs {
			ids = append(ids, d.ID)
		}
		return ids
	}())
	if err != nil {
		t.Fatal(err)
	}
	var openai, anthropic, gemini []map[string]any
	var want []string
	for _, d := range defs {
		name, _ := tab.Name(d.ID)
		var params map[string]any
		if json.Unmarshal(d.Parameters, &params) != nil || params == nil {
			params = map[string]any{"type": "object"}
		}
		for _, kw := range []string{"oneOf", "anyOf", "allOf"} {
			if _, ok := params[kw]; ok {
				want = append(want, name)
				break
			}
		}
		openai = append(openai, map[string]any{"type": "function", "function": map[string]any{"name": name, "description": d.Description, "parameters": params}})
		anthropic = append(anthropic, map[string]any{"name": name, "description": d.Description, "input_schema": params})
		// The old Gemini export: OpenAPI-style parameters, $schema dropped.
		gp := map[string]any{}
		for k, v := range params {
			if k != "$schema" && k != "additionalProperties" {
				gp[k] = v
			}
		}
		gemini = append(gemini, map[string]any{"name": name, "description": d.Description, "parameters": gp})
	}
	if len(want) < 3 {
		t.Fatalf("only %v have a top-level combinator", want)
	}
	said, bodies := sdkBuild(t, node, map[string]any{"openai": openai, "anthropic": anthropic, "gemini": map[string]any{"functionDeclarations": gemini}})
	for _, p := range []string{"openai", "anthropic"} {
		err := llm.CheckRequest(p, bodies[p])
		if said[p] != "ok" || err == nil {
			t.Fatalf("%s: the SDK said %q, the rules %v", p, said[p], err)
		}
		for _, name := range want {
			if !strings.Contains(err.Error(), "("+name+")") {
				t.Errorf("%s: %s not flagged:\n%v", p, name, err)
			}
		}
	}
	if said["gemini"] == "ok" && llm.CheckRequest("gemini", bodies["gemini"]) == nil {
		t.Fatal("gemini: the raw schemas passed both the SDK and the rules")
	}
	t.Logf("raw schemas: gemini SDK said %q", said["gemini"])
	slices.Sort(want)
	t.Logf("flagged: %v", want)
}
