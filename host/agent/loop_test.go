package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
)

// checkedOpenAI is a Chat Completions server on loopback that refuses,
// as OpenAI does, a request breaking its documented rules (400 with its
// error shape), and otherwise answers the next scripted turn.
func checkedOpenAI(t *testing.T, turns ...string) (*httptest.Server, *[][]byte) {
	t.Helper()
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		n := len(bodies)
		mu.Unlock()
		if refuse(w, "openai", b) {
			return
		}
		if n > len(turns) {
			http.Error(w, "no more turns", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, turns[n-1])
	}))
	t.Cleanup(srv.Close)
	return srv, &bodies
}

// TestActionModeSendsNoTools pins that action mode's requests carry no
// tools field at all: servers for models without tool calling refuse one.
func TestActionModeSendsNoTools(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	srv, bodies := checkedOpenAI(t,
		`{"choices":[{"message":{"role":"assistant","content":"<ACTION><core:echo><a>1</a></core:echo></ACTION>"}}]}`,
		`{"choices":[{"message":{"role":"assistant","content":"Echoed."}}]}`)
	p, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Run(context.Background(), h, "echo", agent.Options{Provider: p, Mode: agent.ModeAction})
	if err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	for i, b := range *bodies {
		var m map[string]any
		json.Unmarshal(b, &m)
		if _, ok := m["tools"]; ok {
			t.Errorf("request %d carries tools: %.200s", i, b)
		}
	}
	// Native mode, on the same server, does send them.
	srv2, bodies2 := checkedOpenAI(t, `{"choices":[{"message":{"role":"assistant","content":"Hi."}}]}`)
	p2, _ := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv2.URL, MaxRetries: -1})
	if res, _ := agent.Run(context.Background(), h, "hi", agent.Options{Provider: p2}); res.Status != "done" || !strings.Contains(string((*bodies2)[0]), `"tools":[`) {
		t.Fatalf("native: %+v %s", res, (*bodies2)[0])
	}
}

// TestRewrittenSchemas pins that every first-party tool is offered in a
// form the providers accept (a checked server refuses the request
// otherwise), and that the host still validates the arguments against
// the manifest's own schema: hash:digest's oneOf (text or path, not both)
// holds although the model was shown one object with both.
func TestRewrittenSchemas(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	srv, bodies := checkedOpenAI(t,
		`{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"m1","type":"function","function":{"name":"hash__digest","arguments":"{\"text\":\"a\",\"path\":\"b\"}"}}]}}]}`,
		`{"choices":[{"message":{"role":"assistant","content":"Both is one too many."}}]}`)
	p, _ := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL, MaxRetries: -1})
	res, err := agent.Run(context.Background(), h, "hash", agent.Options{Provider: p})
	if err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if len(res.Steps) != 1 || res.Steps[0].Error == nil || res.Steps[0].Error.Code != "INVALID_ARGUMENTS" {
		t.Fatalf("text and path together ran: %+v", res.Steps)
	}
	first := string((*bodies)[0])
	if strings.Contains(first, "oneOf") || !strings.Contains(first, "Give exactly one of: text; path.") {
		t.Fatalf("the definitions sent: %.2000s", first)
	}
	// The result answers the model's own ID.
	if !strings.Contains(string((*bodies)[1]), `"tool_call_id":"m1"`) {
		t.Fatalf("the second request: %s", (*bodies)[1])
	}
}

// TestCallIDs pins the host's tool-call IDs: unique within a run and
// across two runs of one transcript (whose model IDs repeat), shown in
// steps and events, while the model is answered under its own IDs (but
// one it repeats).
func TestCallIDs(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	lines := []string{
		`{"tool_calls":[{"id":"call_1","name":"core__echo","arguments":{"a":1}},{"id":"call_2","name":"core__echo","arguments":{"a":2}}]}`,
		`{"tool_calls":[{"id":"call_1","name":"core__echo","arguments":{"a":3}}]}`,
		`{"content":"done"}`,
	}
	seen := map[string]bool{}
	for run := range 2 {
		p := replay(t, lines...)
		var events []string
		res, err := agent.Run(context.Background(), h, "x", agent.Options{Provider: p, OnEvent: func(e agent.Event) {
			if e.Kind == "tool" {
				events = append(events, e.CallID)
			}
		}})
		if err != nil || res.Status != "done" || len(res.Steps) != 3 {
			t.Fatalf("run %d: %+v %v", run, res, err)
		}
		for i, s := range res.Steps {
			if seen[s.ToolCallID] || !strings.HasPrefix(s.ToolCallID, "call_") || s.ToolCallID == "call_1" {
				t.Fatalf("run %d step %d: ID %q repeats or is the model's", run, i, s.ToolCallID)
			}
			seen[s.ToolCallID] = true
		}
		if strings.Join(events, ",") != res.Steps[0].ToolCallID+","+res.Steps[1].ToolCallID+","+res.Steps[2].ToolCallID &&
			strings.Join(events, ",") != res.Steps[1].ToolCallID+","+res.Steps[0].ToolCallID+","+res.Steps[2].ToolCallID {
			t.Fatalf("events %v, steps %+v", events, res.Steps)
		}
		var answered []string
		for _, m := range p.Requests[2].Messages {
			if m.Role == llm.RoleTool {
				answered = append(answered, m.ToolCallID)
			}
		}
		// Its own IDs, but call_1 again in the second turn: that one is
		// answered under the host's.
		if strings.Join(answered, ",") != "call_1,call_2,"+res.Steps[2].ToolCallID {
			t.Fatalf("the model was answered under %v", answered)
		}
	}
}

// TestSummaryNamesWireNames pins that the failure summary shown to the
// model names a tool as the model does: text__stats in native mode,
// text:stats in action mode.
func TestSummaryNamesWireNames(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	p := replay(t, `{"tool_calls":[{"id":"a","name":"text__stats","arguments":{"txt":"x"}}]}`, `{"content":"ok"}`)
	if _, err := agent.Run(context.Background(), h, "x", agent.Options{Provider: p}); err != nil {
		t.Fatal(err)
	}
	sys := p.Requests[1].Messages[0].Content
	if !strings.Contains(sys, "text__stats last failed with INVALID_ARGUMENTS") || strings.Contains(sys, "text:stats") {
		t.Fatalf("native summary: %s", sys)
	}
	pa := replay(t, `{"content":"<ACTION><text:stats><txt>x</txt></text:stats></ACTION>"}`, `{"content":"ok"}`)
	if _, err := agent.Run(context.Background(), h, "x", agent.Options{Provider: pa, Mode: agent.ModeAction}); err != nil {
		t.Fatal(err)
	}
	if sys := pa.Requests[1].Messages[0].Content; !strings.Contains(sys, "text:stats last failed") {
		t.Fatalf("action summary: %s", sys)
	}
}

// TestHistory pins that a whole conversation (assistant text, tool calls,
// tool results) reaches the model, and that one over the budget keeps its
// latest turn whole and summarises the older ones, the tool calls and
// results still paired as the providers demand.
func TestHistory(t *testing.T) {
	turn := func(n int, big string) []llm.Message {
		id := "h" + string(rune('0'+n))
		return []llm.Message{
			{Role: llm.RoleUser, Content: "question " + big},
			{Role: llm.RoleAssistant, Content: "Looking.", ToolCalls: []llm.ToolCall{{ID: id, Name: "core__echo", Arguments: `{"n":1}`}}},
			{Role: llm.RoleTool, ToolCallID: id, Content: `{"n":1}`},
			{Role: llm.RoleAssistant, Content: "answer " + string(rune('0'+n))},
		}
	}
	var hist []llm.Message
	for n := range 5 {
		hist = append(hist, turn(n, strings.Repeat("x", 400))...)
	}
	for _, tc := range []struct {
		name        string
		budget      int
		wantLen     int
		wantSummary bool
	}{
		{"within the budget", 10000, 20, false},
		{"over it", 520, 1 + 8, true},
		{"the last turn alone is over it", 10, 1 + 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := agent.FitHistory(hist, tc.budget)
			if len(got) != tc.wantLen {
				t.Fatalf("%d messages, want %d", len(got), tc.wantLen)
			}
			if s := strings.HasPrefix(got[0].Content, "Summary of the"); s != tc.wantSummary {
				t.Fatalf("summary %v: %q", s, got[0].Content)
			}
			if tc.wantSummary && (!strings.Contains(got[0].Content, "you called core__echo") || !strings.Contains(got[0].Content, `you answered "answer 0"`)) {
				t.Fatalf("summary %q", got[0].Content)
			}
			if got[len(got)-1].Content != "answer 4" {
				t.Fatalf("the last turn is not whole: %+v", got[len(got)-4:])
			}
			if err := llm.CheckTools(llm.Request{Model: "m", Messages: append(got, llm.Message{Role: llm.RoleUser, Content: "next"})}); err != nil {
				t.Fatalf("a provider would refuse it: %v", err)
			}
		})
	}
	// The run sends it, followed by the task.
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	p := replay(t, `{"content":"ok"}`)
	if _, err := agent.Run(context.Background(), h, "next", agent.Options{Provider: p, History: turn(0, "")}); err != nil {
		t.Fatal(err)
	}
	msgs := p.Requests[0].Messages
	if len(msgs) != 6 || msgs[2].ToolCalls[0].ID != "h0" || msgs[3].Role != llm.RoleTool || msgs[4].Content != "answer 0" || msgs[5].Content != "next" {
		t.Fatalf("sent %+v", msgs)
	}
}

// TestCallIDReachesTheCall pins that the call itself (its trace span)
// runs under the host's ID, the one its step shows.
func TestCallIDReachesTheCall(t *testing.T) {
	h := hosttest.NewHost(t, nil)
	type none struct{}
	who := host.Func(host.FuncSpec{ID: "app:whoami", Description: "Returns its call ID."}, func(ctx context.Context, _ none) (string, error) {
		return host.CallIDFrom(ctx), nil
	})
	if err := h.Register(who); err != nil {
		t.Fatal(err)
	}
	p := replay(t, `{"tool_calls":[{"id":"model-id","name":"app__whoami","arguments":{}}]}`, `{"content":"ok"}`)
	res, err := agent.Run(context.Background(), h, "x", agent.Options{Provider: p})
	if err != nil || len(res.Steps) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if got := string(res.Steps[0].Result); got != `"`+res.Steps[0].ToolCallID+`"` || strings.Contains(got, "model-id") {
		t.Fatalf("the call ran as %s; its step is %s", got, res.Steps[0].ToolCallID)
	}
}

// TestModelIDsRepeat pins that a model whose call IDs repeat across turns
// (some local servers number each turn's calls from 1) is still answered
// unambiguously: a repeated ID is replaced by the host's, and the replay
// provider checks the providers' rules (Anthropic's unique tool_use ids
// among them) on each request.
func TestModelIDsRepeat(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	p := replay(t,
		`{"tool_calls":[{"id":"1","name":"core__echo","arguments":{"a":1}}]}`,
		`{"tool_calls":[{"id":"1","name":"core__echo","arguments":{"a":2}}]}`,
		`{"content":"done"}`)
	res, err := agent.Run(context.Background(), h, "x", agent.Options{Provider: p})
	if err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	var ids []string
	for _, m := range p.Requests[2].Messages {
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) != 2 || ids[0] != "1" || ids[1] == "1" || ids[1] != res.Steps[1].ToolCallID {
		t.Fatalf("the model's calls went back as %v (steps %s, %s)", ids, res.Steps[0].ToolCallID, res.Steps[1].ToolCallID)
	}
}
