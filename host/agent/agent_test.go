package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
)

// refuse answers a request that breaks provider's documented rules as
// the real API does (400, its message): the fake servers here accept only
// what the real ones would.
func refuse(w http.ResponseWriter, provider string, body []byte) bool {
	err := llm.CheckRequest(provider, body)
	if err == nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
	return true
}

func replay(t testing.TB, lines ...string) *llm.Replay {
	t.Helper()
	r, err := llm.ParseReplay([]byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNative pins the native loop: tool calls by wire name (two in one
// turn), results back under their call IDs, failure memory (an identical
// failed call is refused without running, and the model is told), bad
// arguments and unknown tools as observations, and the final answer.
func TestNative(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	p := replay(t,
		`{"tool_calls":[{"id":"a","name":"core__echo","arguments":{"x":1}},{"id":"b","name":"text__stats","arguments":{"txt":"bad"}}]}`,
		`{"tool_calls":[{"id":"c","name":"text__stats","arguments":{"txt":"bad"}},{"id":"d","name":"nope__tool","arguments":{}},{"id":"e","name":"core__echo","arguments":"{not json"}]}`,
		`{"tool_calls":[{"id":"f","name":"core:echo","arguments":{}}]}`,
		`{"content":"All done."}`,
	)
	res, err := agent.Run(context.Background(), h, "test", agent.Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "done" || res.Answer != "All done." || res.Iterations != 4 || len(res.Steps) != 6 {
		t.Fatalf("result %+v", res)
	}
	if res.Steps[0].Status != "success" || string(res.Steps[0].Result) != `{"x":1}` {
		t.Fatalf("step 1 %+v", res.Steps[0])
	}
	if e := res.Steps[2].Error; e == nil || !strings.Contains(e.Message, "already failed") || !strings.Contains(e.Message, "not run again") {
		t.Fatalf("the repeated failed call ran: %+v", res.Steps[2])
	}
	if e := res.Steps[3].Error; e == nil || e.Code != "UNKNOWN_TOOL" {
		t.Fatalf("unknown tool %+v", res.Steps[3])
	}
	if e := res.Steps[4].Error; e == nil || e.Code != "INVALID_ARGUMENTS" || !strings.Contains(e.Message, "not valid JSON") {
		t.Fatalf("bad JSON %+v", res.Steps[4])
	}
	// A name in the other mapping (the tool ID instead of the wire
	// name) resolves: the call runs.
	if s := res.Steps[5]; s.Status != "success" || s.ToolName != "core:echo" {
		t.Fatalf("a tool ID as the name %+v", s)
	}
	// What the model was sent: tools by wire name, results by call ID, and
	// the failure summary in the system prompt.
	second := p.Requests[1]
	var names []string
	for _, d := range second.Tools {
		names = append(names, d.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "core__echo") {
		t.Fatalf("tools sent %v", names)
	}
	var sawA bool
	for _, m := range second.Messages {
		sawA = sawA || (m.Role == llm.RoleTool && m.ToolCallID == "a" && m.Content == `{"x":1}`)
	}
	if !sawA || !strings.Contains(second.Messages[0].Content, "Failed calls so far: 1") {
		t.Fatalf("second request %+v", second.Messages)
	}
}

// TestIterationCap ends a model that never answers with status partial.
func TestIterationCap(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	turn := `{"tool_calls":[{"name":"core__echo","arguments":{}}]}`
	res, err := agent.Run(context.Background(), h, "loop", agent.Options{Provider: replay(t, turn, turn, turn, turn), MaxIterations: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "partial" || res.Iterations != 3 {
		t.Fatalf("%+v", res)
	}
}

// TestActionMode runs the ACTION protocol in text: the catalogue and
// protocol go in the system prompt, observations come back as text.
func TestActionMode(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	p := replay(t,
		`{"content":"Let me echo.\n<ACTION><core:echo><a>1</a></core:echo></ACTION>"}`,
		`{"content":"It echoed a=1."}`,
	)
	res, err := agent.Run(context.Background(), h, "echo", agent.Options{Provider: p, Mode: agent.ModeAction})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "done" || res.Answer != "It echoed a=1." || len(res.Steps) != 1 || res.Steps[0].Status != "success" {
		t.Fatalf("%+v", res)
	}
	if !strings.Contains(p.Requests[0].Messages[0].Content, "<ACTION>") || !strings.Contains(p.Requests[1].Messages[3].Content, "Observation: Tool core:echo executed successfully") {
		t.Fatalf("prompts %+v", p.Requests[1].Messages)
	}
}

// TestOpenAI drives the loop against a fake Chat Completions server on
// loopback: the request carries the tools and the key; a 429 is retried;
// the tool result goes back with its call ID; the key never shows.
func TestOpenAI(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	t.Setenv("AGENTHOST_TEST_KEY", key)
	var n atomic.Int32
	var second []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if refuse(w, "openai", body) {
			return
		}
		switch n.Add(1) {
		case 1:
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case 2:
			if !strings.Contains(string(body), `"name":"core__echo"`) {
				http.Error(w, "no tools", http.StatusBadRequest)
				return
			}
			w.Write([]byte(`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"core__echo","arguments":"{\"k\":2}"}}]}}]}`))
		default:
			second = body
			w.Write([]byte(`{"choices":[{"message":{"content":"echoed"}}]}`))
		}
	}))
	defer srv.Close()
	p, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/v1", APIKeyEnv: "AGENTHOST_TEST_KEY", RetryBase: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	res, err := agent.Run(context.Background(), h, "echo", agent.Options{Provider: p, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "done" || res.Answer != "echoed" {
		t.Fatalf("%+v", res)
	}
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(second, &req); err != nil {
		t.Fatal(err)
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "tool" || last.ToolCallID != "call_9" || last.Content != `{"k":2}` {
		t.Fatalf("tool result sent %+v", last)
	}
	// An endpoint that is not an LLM API, and a rejected key: clear
	// errors that never hold the key.
	for _, tc := range []struct{ path, want string }{{"/notllm", "does not look like a Chat Completions API"}, {"/v1", "answered 401"}} {
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v1") {
				http.Error(w, "invalid key "+r.Header.Get("Authorization"), http.StatusUnauthorized)
				return
			}
			w.Write([]byte(`<html>hello</html>`))
		}))
		bp, _ := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: bad.URL + tc.path, APIKeyEnv: "AGENTHOST_TEST_KEY", MaxRetries: -1})
		res, _ := agent.Run(context.Background(), h, "x", agent.Options{Provider: bp, Model: "m"})
		bad.Close()
		if res.Status != "failed" || !strings.Contains(res.Error, tc.want) || strings.Contains(res.Error, key) {
			t.Errorf("%s: %+v", tc.path, res)
		}
	}
}

// TestUIHints pins ui_hints: a tool's ui field, kept for a successful
// result with only the pointers that resolve in it.
func TestUIHints(t *testing.T) {
	h := hosttest.NewHost(t, nil)
	type none struct{}
	rows := host.Func(host.FuncSpec{ID: "app:rows", Description: "Rows.", UI: map[string]string{"kind": "table", "rows": "/items", "columns": "/cols"}}, func(context.Context, none) (map[string]any, error) {
		return map[string]any{"items": []any{1, 2}}, nil
	})
	if err := h.Register(rows); err != nil {
		t.Fatal(err)
	}
	res, err := agent.Run(context.Background(), h, "x", agent.Options{Provider: replay(t, `{"tool_calls":[{"name":"app__rows","arguments":{}}]}`, `{"content":"ok"}`)})
	if err != nil {
		t.Fatal(err)
	}
	hints := res.Steps[0].UIHints
	if hints["kind"] != "table" || hints["rows"] != "/items" || hints["columns"] != "" {
		t.Fatalf("ui_hints %v", hints)
	}
}

// TestRouterMode pins the router: one "tools" tool, describe for
// progressive disclosure, calls by module and method, and bad input
// answered with the method's input_schema.
func TestRouterMode(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	p := replay(t,
		`{"tool_calls":[{"id":"d","name":"tools","arguments":{"module":"tools","method":"describe","input":{"module":"text"}}}]}`,
		`{"tool_calls":[{"id":"s","name":"tools","arguments":{"module":"text","method":"stats","input":{"txt":"oops"}}}]}`,
		`{"tool_calls":[{"id":"t","name":"tools","arguments":{"module":"text","method":"stats","input":{"text":"a b c"}}}]}`,
		`{"content":"three words"}`,
	)
	res, err := agent.Run(context.Background(), h, "count", agent.Options{Provider: p, Mode: agent.ModeRouter, Tools: []string{"text:stats", "text:diff", "core:echo"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "done" || len(res.Steps) != 3 {
		t.Fatalf("%+v", res)
	}
	first := p.Requests[0]
	if len(first.Tools) != 1 || first.Tools[0].Name != "tools" || strings.Contains(string(first.Tools[0].Parameters), "minLength") {
		t.Fatalf("router tool %+v", first.Tools)
	}
	if !strings.Contains(string(res.Steps[0].Result), `"method":"stats"`) || strings.Contains(string(res.Steps[0].Result), "echo") {
		t.Fatalf("describe %s", res.Steps[0].Result)
	}
	var bad string
	for _, m := range p.Requests[2].Messages {
		if m.ToolCallID == "s" {
			bad = m.Content
		}
	}
	if !strings.Contains(bad, "input_schema of text.stats") || res.Steps[2].Status != "success" {
		t.Fatalf("bad input answer %q, last step %+v", bad, res.Steps[2])
	}
}

// TestAnthropic drives the loop against a fake Messages API on loopback:
// the key in x-api-key, the system prompt apart, tools with input_schema,
// tool_use answered by a tool_result with its id.
func TestAnthropic(t *testing.T) {
	const key = "sk-ant-test-secret"
	t.Setenv("AGENTHOST_TEST_ANTHROPIC", key)
	var second []byte
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != key || r.Header.Get("anthropic-version") == "" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		if refuse(w, "anthropic", body) {
			return
		}
		if n.Add(1) == 1 {
			if !strings.Contains(string(body), `"input_schema"`) || !strings.Contains(string(body), `"name":"core__echo"`) {
				http.Error(w, "no tools", http.StatusBadRequest)
				return
			}
			w.Write([]byte(`{"content":[{"type":"text","text":"calling"},{"type":"tool_use","id":"tu_1","name":"core__echo","input":{"z":3}}],"stop_reason":"tool_use"}`))
			return
		}
		second = body
		w.Write([]byte(`{"content":[{"type":"text","text":"z is 3"}],"stop_reason":"end_turn"}`))
	}))
	defer srv.Close()
	p, err := llm.NewAnthropic(llm.AnthropicConfig{BaseURL: srv.URL, APIKeyEnv: "AGENTHOST_TEST_ANTHROPIC"})
	if err != nil {
		t.Fatal(err)
	}
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	res, err := agent.Run(context.Background(), h, "echo z", agent.Options{Provider: p, Model: "claude", SystemPrompt: "Be brief."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "done" || res.Answer != "z is 3" || string(res.Steps[0].Result) != `{"z":3}` {
		t.Fatalf("%+v", res)
	}
	if !strings.Contains(string(second), `"tool_use_id":"tu_1"`) || !strings.Contains(string(second), `"system":"Be brief."`) || strings.Contains(string(second), key) {
		t.Fatalf("second request %s", second)
	}
}

// TestOpenAIStream reads a streamed answer: content deltas joined, tool
// call deltas merged by index.
func TestOpenAIStream(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"stream":true`) {
			http.Error(w, "not streaming", http.StatusBadRequest)
			return
		}
		if refuse(w, "openai", body) {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if n.Add(1) == 1 {
			io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"core__echo\",\"arguments\":\"{\\\"q\\\"\"}}]}}]}\n\n")
			io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":5}\"}}]}}]}\n\ndata: [DONE]\n\n")
			return
		}
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"q \"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"is 5\"}}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	p, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	res, err := agent.Run(context.Background(), h, "q", agent.Options{Provider: p, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "done" || res.Answer != "q is 5" || string(res.Steps[0].Result) != `{"q":5}` {
		t.Fatalf("%+v", res)
	}
}

// TestParallelCalls pins that the calls of one turn run at once: each
// call waits until its sibling has started, so a sequential loop fails
// them both (after the tool's own bound), and results keep turn order.
func TestParallelCalls(t *testing.T) {
	h := hosttest.NewHost(t, nil)
	type in struct {
		N int `json:"n"`
	}
	started := make(chan struct{}, 2)
	meet := host.Func(host.FuncSpec{ID: "app:meet", Description: "Waits for its sibling."}, func(ctx context.Context, a in) (int, error) {
		started <- struct{}{}
		deadline := time.After(10 * time.Second)
		for len(started) < 2 {
			select {
			case <-deadline:
				return 0, errors.New("ran alone")
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
		return a.N, nil
	})
	if err := h.Register(meet); err != nil {
		t.Fatal(err)
	}
	p := replay(t,
		`{"tool_calls":[{"id":"a","name":"app__meet","arguments":{"n":1}},{"id":"b","name":"app__meet","arguments":{"n":2}}]}`,
		`{"content":"ok"}`)
	res, err := agent.Run(context.Background(), h, "x", agent.Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 2 || res.Steps[0].Status != "success" || res.Steps[1].Status != "success" ||
		string(res.Steps[0].Result) != "1" || string(res.Steps[1].Result) != "2" ||
		!strings.HasPrefix(res.Steps[0].ToolCallID, "call_") || res.Steps[0].ToolCallID == res.Steps[1].ToolCallID {
		t.Fatalf("steps %+v", res.Steps)
	}
}

// TestToolsInventory pins that a tool outside Options.Tools is invisible
// and UNKNOWN_TOOL, in native mode (by wire name and by ID) and in action
// mode, where it does not run.
func TestToolsInventory(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	p := replay(t,
		`{"tool_calls":[{"id":"a","name":"core__echo","arguments":{}},{"id":"b","name":"core:echo","arguments":{}},{"id":"c","name":"text__stats","arguments":{"text":"a b"}}]}`,
		`{"content":"done"}`)
	res, err := agent.Run(context.Background(), h, "x", agent.Options{Provider: p, Tools: []string{"text:stats"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"UNKNOWN_TOOL", "UNKNOWN_TOOL", ""} {
		s := res.Steps[i]
		if (s.Error == nil && want != "") || (s.Error != nil && string(s.Error.Code) != want) {
			t.Errorf("step %d: %+v", i, s)
		}
	}
	if defs := p.Requests[0].Tools; len(defs) != 1 || defs[0].Name != "text__stats" {
		t.Errorf("tools offered %+v", defs)
	}
	pa := replay(t, `{"content":"<ACTION><core:echo><x>1</x></core:echo></ACTION>"}`, `{"content":"done"}`)
	res, err = agent.Run(context.Background(), h, "x", agent.Options{Provider: pa, Mode: agent.ModeAction, Tools: []string{"text:stats"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 1 || res.Steps[0].Error == nil || res.Steps[0].Error.Code != "UNKNOWN_TOOL" || !strings.Contains(pa.Requests[0].Messages[0].Content, "text:stats") {
		t.Fatalf("action mode: %+v", res.Steps)
	}
}
