package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// runAgent runs profile on thread through the AG-UI endpoint and returns
// the run ID of RUN_STARTED once the stream ends.
func runAgent(t *testing.T, f *consoleFixture, ctx context.Context, token, profile, thread, text string) (string, error) {
	t.Helper()
	body := fmt.Sprintf(`{"threadId":%q,"messages":[{"id":"u","role":"user","content":%q}]}`, thread, text)
	req, _ := http.NewRequestWithContext(ctx, "POST", f.url+"/v1/agents/"+profile+"/runs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	runID := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var ev serve.AGUIEvent
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "RUN_STARTED" {
			runID = ev.RunID
		}
	}
	return runID, sc.Err()
}

// TestSessionsAPI pins the session list and the paged history: newest
// first, cursors, pages of messages, bad parameters, and one tenant's
// sessions as unknown to another as an ID nobody has.
func TestSessionsAPI(t *testing.T) {
	f := newConsoleFixture(t)
	seedHistory(t, f.store, "acme", "older", 3)
	time.Sleep(5 * time.Millisecond) // distinct last activity (milliseconds)
	seedHistory(t, f.store, "acme", "long", 250)
	seedHistory(t, f.store, "beta", "theirs", 1)
	type sessions struct {
		Sessions []store.SessionSummary `json:"sessions"`
		Next     string                 `json:"next"`
	}
	var all sessions
	if code := f.get(t, "/v1/sessions", "acme-token", &all); code != 200 {
		t.Fatalf("list: %d", code)
	}
	if len(all.Sessions) != 2 || all.Sessions[0].ID != "long" || all.Sessions[1].ID != "older" || all.Next != "" {
		t.Fatalf("list: %+v", all)
	}
	if s := all.Sessions[1]; s.Profile != "analyst" || s.FirstMessage != "question 1" || s.Messages != 3 {
		t.Errorf("summary: %+v", s)
	}
	var p1, p2 sessions
	f.get(t, "/v1/sessions?limit=1", "acme-token", &p1)
	f.get(t, "/v1/sessions?limit=1&cursor="+p1.Next, "acme-token", &p2)
	if len(p1.Sessions) != 1 || p1.Sessions[0].ID != "long" || p1.Next == "" || len(p2.Sessions) != 1 || p2.Sessions[0].ID != "older" || p2.Next != "" {
		t.Errorf("pages: %+v then %+v", p1, p2)
	}
	var theirs sessions
	f.get(t, "/v1/sessions", "beta-token", &theirs)
	if len(theirs.Sessions) != 1 || theirs.Sessions[0].ID != "theirs" {
		t.Errorf("beta lists %+v", theirs)
	}

	type page struct {
		Messages []serve.SessionMessage `json:"messages"`
		More     bool                   `json:"more"`
	}
	seqs := func(p page) string {
		if len(p.Messages) == 0 {
			return "none"
		}
		return fmt.Sprintf("%d..%d", p.Messages[0].Seq, p.Messages[len(p.Messages)-1].Seq)
	}
	for _, tc := range []struct {
		query, want string
		more        bool
	}{
		{"", "151..250", true},
		{"?before=151", "51..150", true},
		{"?before=51", "1..50", false},
		{"?limit=10&before=3", "1..2", false},
		{"?limit=500", "1..250", false},
	} {
		var p page
		if code := f.get(t, "/v1/sessions/long/messages"+tc.query, "acme-token", &p); code != 200 || seqs(p) != tc.want || p.More != tc.more {
			t.Errorf("messages%s: %d %s more=%v, want %s more=%v", tc.query, code, seqs(p), p.More, tc.want, tc.more)
		}
	}
	// A run with no answer and no run going on (as after a restart) is
	// interrupted.
	var older page
	f.get(t, "/v1/sessions/older/messages", "acme-token", &older)
	var states []string
	for _, m := range older.Messages {
		states = append(states, m.Role+":"+m.Run)
	}
	if got := strings.Join(states, " "); got != "user:answered assistant: user:interrupted" {
		t.Errorf("run states: %s", got)
	}
	for _, tc := range []struct{ name, path, token string }{
		{"bad limit", "/v1/sessions?limit=0", "acme-token"},
		{"limit too large", "/v1/sessions?limit=501", "acme-token"},
		{"forged cursor", "/v1/sessions?cursor=x", "acme-token"},
		{"bad before", "/v1/sessions/long/messages?before=-1", "acme-token"},
		{"bad message limit", "/v1/sessions/long/messages?limit=abc", "acme-token"},
	} {
		if code := f.get(t, tc.path, tc.token, nil); code != 400 {
			t.Errorf("%s: %d, want 400", tc.name, code)
		}
	}
	// Another tenant's session answers as an unknown one does.
	for _, tc := range []struct{ path, token string }{
		{"/v1/sessions/long/messages", "beta-token"},
		{"/v1/sessions/nobody/messages", "beta-token"},
		{"/v1/sessions/theirs/messages", "acme-token"},
	} {
		if code := f.get(t, tc.path, tc.token, nil); code != 404 {
			t.Errorf("%s as %s: %d, want 404", tc.path, tc.token, code)
		}
	}
	if code := f.get(t, "/v1/sessions", "forged", nil); code != 401 {
		t.Errorf("no token: %d", code)
	}
}

// TestRunStates pins the state history gives each run: answered, still
// running, or interrupted once its client went away mid-way; and run IDs
// that a restart does not repeat.
func TestRunStates(t *testing.T) {
	f := newConsoleFixture(t)
	f.release()
	ctx := context.Background()
	first, err := runAgent(t, f, ctx, "acme-token", "analyst", "done-thread", "Show the fruit")
	if err != nil {
		t.Fatal(err)
	}
	second, err := runAgent(t, f, ctx, "acme-token", "analyst", "done-thread", "Again")
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`^run-[0-9a-f]{16}$`)
	// Random, not counted: a counter starts again at each restart.
	if !id.MatchString(first) || !id.MatchString(second) || first == second {
		t.Errorf("run IDs %q and %q: want two random ones", first, second)
	}
	type page struct {
		Messages []serve.SessionMessage `json:"messages"`
	}
	runs := func(thread string) []string {
		var p page
		if code := f.get(t, "/v1/sessions/"+thread+"/messages", "acme-token", &p); code != 200 {
			t.Fatalf("messages of %s: %d", thread, code)
		}
		var out []string
		for _, m := range p.Messages {
			if m.Role == "user" {
				out = append(out, m.Run)
			}
		}
		return out
	}
	if got := strings.Join(runs("done-thread"), ","); got != "answered,answered" {
		t.Errorf("answered runs: %s", got)
	}
	// The slow model never answers: the run is running until its client
	// leaves, then interrupted.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); runAgent(t, f, rctx, "acme-token", "slow", "cut-thread", "Take your time") }()
	waitFor := func(want string) {
		t.Helper()
		for i := 0; ; i++ {
			var p page
			if f.get(t, "/v1/sessions/cut-thread/messages", "acme-token", &p) == 200 && len(p.Messages) > 0 && p.Messages[0].Run == want {
				return
			}
			if i > 2000 {
				t.Fatalf("the run never became %s", want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(serve.RunRunning)
	cancel()
	<-done
	waitFor(serve.RunInterrupted)
	// Another tenant's thread of the same ID is its own, and empty.
	if code := f.get(t, "/v1/sessions/cut-thread/messages", "beta-token", nil); code != 404 {
		t.Errorf("beta sees acme's thread: %d", code)
	}
}

// TestAnalytics pins the per-tool analytics: calls, failures by code,
// p50 / p95 latency, the last failures with their observations, from a
// real agent run and stored calls; one tenant's calls are not another's.
func TestAnalytics(t *testing.T) {
	f := newConsoleFixture(t)
	f.release()
	ctx := context.Background()
	if _, err := runAgent(t, f, ctx, "acme-token", "analyst", "a-thread", "Show the fruit"); err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"acme", "beta"} {
		if _, err := f.store.CreateSessionID(ctx, tenant, "analyst", "seeded"); err != nil {
			t.Fatal(err)
		}
	}
	add := func(tenant string, ms float64, code, obs string) {
		t.Helper()
		status := "success"
		out := map[string]any{"tool_name": "x__slow", "status": status}
		if code != "" {
			out["status"], out["error"] = "failure", map[string]any{"code": code, "message": obs}
		}
		meta, _ := json.Marshal(map[string]any{"tool_id": "x:slow", "tool_agent_output": out, "duration_ms": ms})
		if _, err := f.store.AppendMessage(ctx, tenant, "seeded", store.Message{Role: "tool", Content: obs, Metadata: meta}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 18; i++ {
		add("acme", float64(i), "", "fine")
	}
	add("acme", 19, "TIMEOUT", "the call took longer than 1s")
	add("acme", 20, "TOOL_ERROR", "bad pattern <script>")
	add("beta", 1000, "TIMEOUT", "beta's")
	var a store.Analytics
	if code := f.get(t, "/v1/analytics", "acme-token", &a); code != 200 {
		t.Fatalf("analytics: %d", code)
	}
	by := map[string]store.ToolUsage{}
	for _, u := range a.Tools {
		by[u.Tool] = u
	}
	slow := by["x:slow"]
	if slow.Calls != 20 || slow.Failures != 2 || slow.ByCode["TIMEOUT"] != 1 || slow.ByCode["TOOL_ERROR"] != 1 {
		t.Errorf("x:slow: %+v", slow)
	}
	if slow.P50Ms == nil || *slow.P50Ms != 10 || slow.P95Ms == nil || *slow.P95Ms != 19 {
		t.Errorf("x:slow percentiles: %v %v, want 10 and 19", slow.P50Ms, slow.P95Ms)
	}
	if len(slow.LastFailures) != 2 || slow.LastFailures[0].Code != "TOOL_ERROR" || slow.LastFailures[0].Observation != "bad pattern <script>" || slow.LastFailures[0].Session != "seeded" {
		t.Errorf("last failures: %+v", slow.LastFailures)
	}
	// The agent's call carries its measured duration.
	if fruit := by["app:fruit"]; fruit.Calls != 1 || fruit.Failures != 0 || fruit.P50Ms == nil {
		t.Errorf("app:fruit: %+v", fruit)
	}
	var b store.Analytics
	f.get(t, "/v1/analytics", "beta-token", &b)
	if len(b.Tools) != 1 || b.Tools[0].Calls != 1 || b.Tools[0].ByCode["TIMEOUT"] != 1 {
		t.Errorf("beta's analytics: %+v", b.Tools)
	}
}

// TestOpenAPIListings pins the listing endpoints in the OpenAPI document
// with their query parameters.
func TestOpenAPIListings(t *testing.T) {
	f := newConsoleFixture(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if code := f.get(t, "/openapi.json", "acme-token", &doc); code != 200 {
		t.Fatalf("openapi: %d", code)
	}
	for _, tc := range []struct{ path, want string }{
		{"/v1/sessions", "limit:query cursor:query"},
		{"/v1/sessions/{id}/messages", "id:path limit:query before:query"},
		{"/v1/analytics", ""},
		{"/v1/jobs", "limit:query after:query"},
		{"/v1/tools/{id}/call", "id:path async:query"},
	} {
		op, ok := doc.Paths[tc.path]["get"]
		if !ok {
			op, ok = doc.Paths[tc.path]["post"]
		}
		var got []string
		for _, p := range op.Parameters {
			got = append(got, p.Name+":"+p.In)
		}
		if !ok || strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %v (%v), want %s", tc.path, got, ok, tc.want)
		}
	}
}
