package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/profile"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// exampleServer serves the documented replay example (the text-analyst
// profile and its transcript) for one tenant, acme; every run replays
// the transcript from its start, as a model answering alike would. The
// replays are returned for a look at what the model was sent. provider,
// when set, replaces the replay.
func exampleServer(t *testing.T, provider func() llm.Provider) (*httptest.Server, *[]*llm.Replay) {
	t.Helper()
	ctx := context.Background()
	root := hosttest.Root(t)
	prof, err := profile.Load(filepath.Join(root, "examples", "agent", "text-analyst.profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	transcript, err := os.ReadFile(filepath.Join(root, "examples", "agent", "text-analyst.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var replays []*llm.Replay
	tenant := &serve.Tenant{Name: "acme", Host: h, Profiles: map[string]*profile.Profile{prof.ID: prof},
		Provider: func(*profile.Profile) (llm.Provider, string, error) {
			if provider != nil {
				return provider(), "m", nil
			}
			p, err := llm.ParseReplay(transcript)
			mu.Lock()
			replays = append(replays, p)
			mu.Unlock()
			return p, "replay", err
		}}
	t.Cleanup(func() { h.Close(ctx) })
	srv := acmeServer(t, tenant, st, serve.Options{MaxBody: 1 << 20, MaxConcurrent: 4})
	return srv, &replays
}

// TestAGUIUniqueCallIDs runs the documented replay example twice on one
// thread with the official @ag-ui/client: the transcript's model IDs
// (call_1, call_2) repeat, the IDs the client sees do not, and the second
// run's model request holds the first run's whole conversation (its tool
// calls and results under those IDs), as the client sent it.
func TestAGUIUniqueCallIDs(t *testing.T) {
	node, err := exec.LookPath("node")
	_, modErr := os.Stat("testdata/agui/node_modules/@ag-ui/client")
	if err != nil || modErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or @ag-ui/client missing (.ci/run runs npm ci in host/serve/testdata/agui): %v %v", err, modErr)
		}
		t.Skip("node or @ag-ui/client is not installed (npm ci in host/serve/testdata/agui)")
	}
	srv, replays := exampleServer(t, nil)
	out := aguiScript(t, node, "two-runs.mjs", srv.URL, "acme-token", "text-analyst", "two-runs")
	var got struct {
		Runs []struct {
			Events      []string `json:"events"`
			ToolCallIDs []string `json:"toolCallIds"`
		} `json:"runs"`
		Messages []struct {
			Role       string  `json:"role"`
			ToolCallID *string `json:"toolCallId"`
			ToolCalls  []struct {
				ID, Name, Arguments string
			} `json:"toolCalls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	seen := map[string]bool{}
	for i, r := range got.Runs {
		if len(r.Events) == 0 || r.Events[len(r.Events)-1] != "RUN_FINISHED" {
			t.Fatalf("run %d events %v", i+1, r.Events)
		}
		if len(r.ToolCallIDs) != 2 {
			t.Fatalf("run %d tool calls %v", i+1, r.ToolCallIDs)
		}
		for _, id := range r.ToolCallIDs {
			if seen[id] || id == "call_1" || id == "call_2" {
				t.Fatalf("tool call ID %q repeats across runs or is the model's: %s", id, out)
			}
			seen[id] = true
		}
	}
	// The client merged nothing: each of its assistant tool calls keeps
	// the arguments of its own run.
	var calls int
	for _, m := range got.Messages {
		for _, c := range m.ToolCalls {
			calls++
			if !json.Valid([]byte(c.Arguments)) {
				t.Fatalf("merged arguments %q", c.Arguments)
			}
		}
	}
	if calls != 4 {
		t.Fatalf("the client holds %d tool calls, want 4: %s", calls, out)
	}
	// What the model got in the second run: the first run's tool calls
	// and results, paired, under the host's IDs.
	if len(*replays) != 2 {
		t.Fatalf("%d provider instances", len(*replays))
	}
	first := (*replays)[1].Requests[0].Messages
	var ids []string
	for _, m := range first {
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) != 2 || ids[0] != got.Runs[0].ToolCallIDs[0] || ids[1] != got.Runs[0].ToolCallIDs[1] {
		t.Fatalf("the second run's history holds calls %v, the first run showed %v", ids, got.Runs[0].ToolCallIDs)
	}
}

// aguiEvents posts body to path and reads the whole AG-UI stream.
func aguiEvents(t *testing.T, url, body string) []serve.AGUIEvent {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer acme-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	var out []serve.AGUIEvent
	for _, line := range strings.Split(string(raw), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var e serve.AGUIEvent
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatalf("%v: %s", err, data)
			}
			out = append(out, e)
		}
	}
	return out
}

// TestAGUIStreams pins that a streamed model turn reaches the client as
// it streams (one TEXT_MESSAGE_CONTENT per delta, in one message), and
// that a provider stream that breaks ends the run with RUN_ERROR naming
// the provider rather than hanging.
func TestAGUIStreams(t *testing.T) {
	const good = "data: {\"choices\":[{\"delta\":{\"content\":\"Three\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\" words\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\".\"}}]}\n\ndata: [DONE]\n\n"
	for _, tc := range []struct {
		name, stream string
		want         []string // the TEXT_MESSAGE_CONTENT deltas
		errWant      string   // a RUN_ERROR's message, "" when the run must finish
	}{
		{"deltas", good, []string{"Three", " words", "."}, ""},
		{"malformed", "data: {\"choices\":[{\"delta\":{\"content\":\"Thr\"}}]}\n\ndata: {\"choices\": nope\n\n", []string{"Thr"}, "openai: "},
		{"cut short", "data: {\"choices\":[{\"delta\":{\"content\":\"Thr\"}}]}\n\n", []string{"Thr"}, "ended before its final [DONE]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tc.stream)
			}))
			defer model.Close()
			srv, _ := exampleServer(t, func() llm.Provider {
				p, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: model.URL, Stream: true, MaxRetries: -1})
				if err != nil {
					t.Error(err)
				}
				return p
			})
			events := aguiEvents(t, srv.URL+"/v1/agents/text-analyst/runs", `{"threadId":"s-`+strings.ReplaceAll(tc.name, " ", "-")+`","messages":[{"id":"u1","role":"user","content":"Count."}]}`)
			var deltas, types []string
			for _, e := range events {
				types = append(types, e.Type)
				if e.Type == "TEXT_MESSAGE_CONTENT" {
					deltas = append(deltas, e.Delta)
				}
			}
			if strings.Join(deltas, "|") != strings.Join(tc.want, "|") || strings.Count(strings.Join(types, ","), "TEXT_MESSAGE_START") != 1 {
				t.Fatalf("events %v, deltas %q", types, deltas)
			}
			last := events[len(events)-1]
			switch {
			case tc.errWant == "" && last.Type != "RUN_FINISHED":
				t.Fatalf("last event %+v", last)
			case tc.errWant != "" && (last.Type != "RUN_ERROR" || last.Code != "PROVIDER" || !strings.Contains(last.Message, tc.errWant) || !strings.HasPrefix(last.Message, "openai:")):
				t.Fatalf("last event %+v", last)
			}
		})
	}
}

// TestStoredHistory pins that a session's next run sends the model the
// whole stored conversation: the user's messages, the assistant's turns
// with their tool calls (under the host's IDs), the results, the answer.
func TestStoredHistory(t *testing.T) {
	srv, replays := exampleServer(t, nil)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/sessions", strings.NewReader(`{"profile":"text-analyst"}`))
	req.Header.Set("Authorization", "Bearer acme-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ref serve.SessionRef
	json.NewDecoder(resp.Body).Decode(&ref)
	resp.Body.Close()
	var first []string
	for i, ask := range []string{"Fingerprint this.", "Again."} {
		events := aguiEvents(t, srv.URL+"/v1/sessions/"+ref.ID+"/messages", `{"content":"`+ask+`"}`)
		if last := events[len(events)-1]; last.Type != "RUN_FINISHED" {
			t.Fatalf("run %d: %+v", i+1, last)
		}
		if i == 0 {
			for _, e := range events {
				if e.Type == "TOOL_CALL_START" {
					first = append(first, e.ToolCallID)
				}
			}
		}
	}
	sent := (*replays)[1].Requests[0].Messages
	var roles, calls, answered []string
	for _, m := range sent[1:] {
		roles = append(roles, m.Role)
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID)
		}
		if m.Role == llm.RoleTool {
			answered = append(answered, m.ToolCallID)
		}
	}
	// user, the two tool-calling turns each with its result, the answer,
	// then the new task.
	if strings.Join(roles, ",") != "user,assistant,tool,assistant,tool,assistant,user" {
		t.Fatalf("roles %v", roles)
	}
	if strings.Join(calls, ",") != strings.Join(first, ",") || strings.Join(answered, ",") != strings.Join(first, ",") {
		t.Fatalf("calls %v and results %v, the first run showed %v", calls, answered, first)
	}
}

// TestAGUIMessages pins what an AG-UI run takes in: every message before
// the last is the conversation (a system message included, a result whose
// call is missing turned into text), and a body that cannot be one is a
// 400 saying why.
func TestAGUIMessages(t *testing.T) {
	srv, replays := exampleServer(t, nil)
	for _, tc := range []struct {
		name, messages string
		status         int
		want           string
	}{
		{"no messages", `[]`, 400, "no user message"},
		{"last not from the user", `[{"id":"u","role":"user","content":"hi"},{"id":"a","role":"assistant","content":"yes"}]`, 400, "must be the user's"},
		{"unknown role", `[{"id":"x","role":"oracle","content":"?"},{"id":"u","role":"user","content":"hi"}]`, 400, `role \"oracle\"`},
		{"tool message without its call ID", `[{"id":"t","role":"tool","content":"1"},{"id":"u","role":"user","content":"hi"}]`, 400, "toolCallId"},
		{"a conversation", `[{"id":"s","role":"system","content":"Be brief."},{"id":"u0","role":"user","content":"Count."},
			{"id":"a0","role":"assistant","content":"","toolCalls":[{"id":"k1","type":"function","function":{"name":"text__stats","arguments":"{\"text\":\"a b\"}"}}]},
			{"id":"t0","role":"tool","toolCallId":"k1","content":"{\"words\":2}"},
			{"id":"t9","role":"tool","toolCallId":"gone","content":"orphan"},
			{"id":"a1","role":"assistant","content":"Two."},{"id":"u","role":"user","content":"Fingerprint this text."}]`, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"threadId":"m-` + strings.ReplaceAll(tc.name, " ", "-") + `","messages":` + tc.messages + `}`
			req, _ := http.NewRequest("POST", srv.URL+"/v1/agents/text-analyst/runs", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer acme-token")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(raw), tc.want) {
				t.Fatalf("%d %s", resp.StatusCode, raw)
			}
			if tc.status != 200 {
				return
			}
			if !strings.Contains(string(raw), "RUN_FINISHED") {
				t.Fatalf("%s", raw)
			}
			sent := (*replays)[len(*replays)-1].Requests[0].Messages
			var got []string
			for _, m := range sent[1:] {
				got = append(got, m.Role+":"+m.Content)
			}
			want := []string{"system:Be brief.", "user:Count.", "assistant:", `tool:{"words":2}`, "user:(a tool result) orphan", "assistant:Two.", "user:Fingerprint this text."}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("sent %q", got)
			}
		})
	}
}

// TestActionHistory pins that an action-mode session's history holds the
// model's ACTION turns and their results, not only the user's messages.
func TestActionHistory(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	prof, err := profile.Parse([]byte(`{"id":"actor","mode":"action","tool_ids_inventory":["text:*"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var replays []*llm.Replay
	tenant := &serve.Tenant{Name: "acme", Host: h, Profiles: map[string]*profile.Profile{"actor": prof},
		Provider: func(*profile.Profile) (llm.Provider, string, error) {
			p, err := llm.ParseReplay([]byte(`{"content":"Counting.\n<ACTION><text:stats><text>a b</text></text:stats></ACTION>"}` + "\n" + `{"content":"Two words."}`))
			replays = append(replays, p)
			return p, "replay", err
		}}
	t.Cleanup(func() { h.Close(ctx) })
	srv := acmeServer(t, tenant, st, serve.Options{MaxBody: 1 << 20, MaxConcurrent: 4})
	for i, ask := range []string{"Count a b.", "Again."} {
		events := aguiEvents(t, srv.URL+"/v1/agents/actor/runs", `{"threadId":"acting","messages":[{"id":"u","role":"user","content":"`+ask+`"}]}`)
		if last := events[len(events)-1]; last.Type != "RUN_FINISHED" {
			t.Fatalf("run %d: %+v", i+1, last)
		}
	}
	var got []string
	for _, m := range replays[1].Requests[0].Messages[1:] {
		got = append(got, m.Role+": "+strings.SplitN(m.Content, "\n", 2)[0])
	}
	want := []string{"user: Count a b.", "assistant: Counting.", `user: (a tool result) {"characters":3`, "assistant: Two words.", "user: Again."}
	if len(got) != len(want) {
		t.Fatalf("sent %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("sent %q, want %q", got, want)
		}
	}
}

// aguiScript runs a script of testdata/agui with node and returns what it
// printed on stdout; a failing script fails the test with its stderr.
func aguiScript(t *testing.T, node, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Dir = "testdata/agui"
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node %s: %v\n%s\n%s", script, err, out, stderr)
	}
	return out
}

// acmeServer serves tenant as "acme" (token "acme-token", scopes call and
// sessions) over st on loopback, with opts' other fields; the server and
// the store close when the test ends.
func acmeServer(t *testing.T, tenant *serve.Tenant, st *store.Store, opts serve.Options) *httptest.Server {
	t.Helper()
	opts.Tenants = map[string]*serve.Tenant{"acme": tenant}
	opts.Auth = serve.NewAuthenticator([]serve.TokenEntry{{SHA256: hash("acme-token"), Tenant: "acme", Scopes: []string{"call", "sessions"}}})
	opts.Store = st
	api, err := serve.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		api.Close()
		st.Close()
	})
	return srv
}
