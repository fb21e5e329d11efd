package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/profile"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// codeTranscript is a code-mode model over two runs of one thread: each
// sends a Starlark program that calls core:echo, then answers.
const codeTranscript = `{"tool_calls":[{"id":"p1","name":"run_code","arguments":{"language":"starlark","code":"result = tools.core.echo(n = 1)['n'] + tools.core.echo(n = 2)['n']"}}]}
{"content":"Three."}
{"tool_calls":[{"id":"p1","name":"run_code","arguments":{"language":"starlark","code":"result = tools.core.echo(n = 4)['n']"}}]}
{"content":"Four."}`

// codeServer serves one tenant over the code and core toolpacks, with a
// code-mode profile and run_code on /mcp when mcpCode.
func codeServer(t *testing.T, mcpCode bool) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	tp := hosttest.Toolpacks(t)
	h := hosttest.NewHost(t, nil, filepath.Join(tp, "code"), filepath.Join(tp, "core"))
	h.Warm(ctx, host.WarmOptions{})
	prof, err := profile.Parse([]byte(`{"id":"coder","mode":"code","tool_ids_inventory":["core:*"]}`))
	if err != nil {
		t.Fatal(err)
	}
	model, err := llm.ParseReplay([]byte(codeTranscript))
	if err != nil {
		t.Fatal(err)
	}
	tenant := &serve.Tenant{Name: "acme", Host: h, Profiles: map[string]*profile.Profile{"coder": prof},
		Provider: func(*profile.Profile) (llm.Provider, string, error) { return model, "replay", nil }}
	return acmeServer(t, tenant, st, serve.Options{MCPCodeMode: mcpCode})
}

// TestMCPCodeMode: with Options.MCPCodeMode a tenant's /mcp lists
// run_code and search_tools, and a program calls the tenant's tools;
// without it neither is listed.
func TestMCPCodeMode(t *testing.T) {
	ctx := context.Background()
	for _, on := range []bool{false, true} {
		srv := codeServer(t, on)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{"acme-token"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		all := "," + strings.Join(names, ",") + ","
		if strings.Contains(all, ",run_code,") != on || strings.Contains(all, ",search_tools,") != on {
			t.Fatalf("code mode %v: tools %s", on, all)
		}
		if on {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "starlark", "code": "result = tools.core.echo(via = 'serve')"}})
			if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"result":{"via":"serve"}`) {
				t.Fatalf("%v %+v", err, res)
			}
		}
		cs.Close()
	}
}

// TestAgentRunCodeMode runs an AG-UI run of a code-mode profile twice in
// one thread: the client sees the run_code call and its result, and the
// history sent back to the model on the second run pairs that call with
// its result (the replay provider refuses a request that breaks the
// providers' rules).
func TestAgentRunCodeMode(t *testing.T) {
	srv := codeServer(t, false)
	run := func(msg string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/agents/coder/runs", strings.NewReader(`{"threadId":"t1","runId":"r","state":{},"messages":[{"id":"m","role":"user","content":"`+msg+`"}],"tools":[],"context":[],"forwardedProps":{}}`))
		req.Header.Set("Authorization", "Bearer acme-token")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return b.String()
	}
	first := run("Add 1 and 2.")
	var types []string
	for _, e := range events(t, first) {
		types = append(types, e["type"].(string))
	}
	if got := strings.Join(types, " "); !strings.Contains(got, "TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END CUSTOM CUSTOM TOOL_CALL_RESULT") || !strings.HasSuffix(got, "RUN_FINISHED") ||
		!strings.Contains(first, `"toolCallName":"run_code"`) || !strings.Contains(first, `\"result\":3`) {
		t.Fatalf("first run: %v\n%s", types, first)
	}
	// The program's two calls are CUSTOM progress under the run_code call.
	var steps []map[string]any
	var runCodeID string
	for _, e := range events(t, first) {
		if e["type"] == "TOOL_CALL_START" && e["toolCallName"] == "run_code" {
			runCodeID, _ = e["toolCallId"].(string)
		}
		if e["type"] == "CUSTOM" && e["name"] == serve.CodeStepEvent {
			v, _ := e["value"].(map[string]any)
			steps = append(steps, v)
		}
	}
	if len(steps) != 2 {
		t.Fatalf("%d code steps, want 2:\n%s", len(steps), first)
	}
	for i, v := range steps {
		if v["tool"] != "core:echo" || v["status"] != "success" || v["parentToolCallId"] != runCodeID || runCodeID == "" || v["toolCallId"] == "" {
			t.Errorf("step %d: %v (run_code %q)", i, v, runCodeID)
		}
	}
	if second := run("And 4?"); !strings.Contains(second, "RUN_FINISHED") || !strings.Contains(second, "Four.") {
		t.Fatalf("second run:\n%s", second)
	}
}

// TestAGUICodeModeClient runs the code-mode profile with the official
// @ag-ui/client: the program's calls arrive as CUSTOM events the client
// accepts, and its messages hold the run_code call only.
func TestAGUICodeModeClient(t *testing.T) {
	node := aguiNode(t)
	srv := codeServer(t, false)
	out := aguiScript(t, node, "run.mjs", srv.URL, "acme-token", "coder", "code-thread")
	var got struct {
		Events   []string `json:"events"`
		Messages []struct {
			Role      string   `json:"role"`
			ToolCalls []string `json:"toolCalls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	custom := 0
	for _, e := range got.Events {
		if e == "CUSTOM" {
			custom++
		}
	}
	var calls []string
	for _, m := range got.Messages {
		calls = append(calls, m.ToolCalls...)
	}
	if custom != 2 || strings.Join(calls, ",") != "run_code" || got.Events[len(got.Events)-1] != "RUN_FINISHED" {
		t.Fatalf("events %v, tool calls %v", got.Events, calls)
	}
}
