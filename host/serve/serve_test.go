package serve_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/profile"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

const transcript = `{"content":"Counting.","tool_calls":[{"id":"c1","name":"text__stats","arguments":{"text":"one two three"}}]}
{"content":"Three words."}`

const rowsTranscript = `{"content":"","tool_calls":[{"id":"r1","name":"app__rows","arguments":{}}]}
{"content":"Here are the rows."}`

// rowsTool returns a table, with ui hints saying so.
func rowsTool() host.Tool {
	type none struct{}
	return host.Func(host.FuncSpec{ID: "app:rows", Description: "Rows of fruit.", UI: map[string]string{"kind": "table", "rows": "/items"}}, func(context.Context, none) (map[string]any, error) {
		return map[string]any{"items": []map[string]any{{"fruit": "apple", "price": 1.5}, {"fruit": "pear", "price": 2}}}, nil
	})
}

// pictureTranscript shows two images: one on another host (never
// loaded) and one carried in the result (data:).
const pictureTranscript = `{"content":"","tool_calls":[{"id":"p1","name":"app__picture","arguments":{"src":"https://evil.example/pixel.png"}},{"id":"p2","name":"app__picture","arguments":{"src":"` + pixelPNG + `"}}]}
{"content":"Two pictures."}`

// pixelPNG is a 1x1 PNG.
const pixelPNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

// pictureTool returns the image its arguments name, with ui hints
// saying it is one.
func pictureTool() host.Tool {
	type in struct {
		Src string `json:"src"`
	}
	return host.Func(host.FuncSpec{ID: "app:picture", Description: "A picture.", UI: map[string]string{"kind": "image", "src": "/src", "alt": "/alt"}}, func(_ context.Context, a in) (map[string]any, error) {
		return map[string]any{"src": a.Src, "alt": "a picture"}, nil
	})
}

func hash(tok string) string {
	s := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(s[:])
}

type fixture struct {
	srv   *httptest.Server
	api   *serve.Server
	store *store.Store
	path  string
	hosts map[string]*host.Host
}

// newFixture serves two tenants (acme and beta) over the first-party
// toolpacks, with a replayed model for the "counter" profile.
func newFixture(t testing.TB, dbPath string, tools ...host.Tool) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := profile.Parse([]byte(`{"id":"counter","systemPrompt":"Count.","tool_ids_inventory":["text:*"]}`))
	if err != nil {
		t.Fatal(err)
	}
	rowsProf, err := profile.Parse([]byte(`{"id":"rows","name":"Rows","tool_ids_inventory":["app:rows"]}`))
	if err != nil {
		t.Fatal(err)
	}
	pictureProf, err := profile.Parse([]byte(`{"id":"picture","name":"Picture","tool_ids_inventory":["app:picture"]}`))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: st, path: dbPath, hosts: map[string]*host.Host{}}
	tenants := map[string]*serve.Tenant{}
	for _, name := range []string{"acme", "beta"} {
		h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t), Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		f.hosts[name] = h
		tenants[name] = &serve.Tenant{Name: name, Host: h, Profiles: map[string]*profile.Profile{"counter": prof, "rows": rowsProf, "picture": pictureProf},
			Provider: func(pr *profile.Profile) (llm.Provider, string, error) {
				text := transcript
				switch pr.ID {
				case "rows":
					text = rowsTranscript
				case "picture":
					text = pictureTranscript
				}
				p, err := llm.ParseReplay([]byte(text))
				return p, "replay", err
			}}
	}
	auth := serve.NewAuthenticator([]serve.TokenEntry{
		{SHA256: hash("acme-token"), Tenant: "acme", Scopes: []string{"call", "sessions"}},
		{SHA256: hash("beta-token"), Tenant: "beta", Scopes: []string{"call", "sessions"}},
		{SHA256: hash("acme-call-only"), Tenant: "acme", Scopes: []string{"call"}},
		{SHA256: hash("admin-token"), Tenant: "acme", Scopes: []string{"admin"}},
		{SHA256: hash("beta-admin-token"), Tenant: "beta", Scopes: []string{"admin"}},
		{SHA256: hash("operator-token"), Scopes: []string{"operator"}},
	})
	api, err := serve.New(serve.Options{Tenants: tenants, Auth: auth, Store: st, MaxBody: 64 << 10, MaxConcurrent: fixtureMaxConcurrent, MaxQueued: fixtureMaxQueued})
	if err != nil {
		t.Fatal(err)
	}
	f.api = api
	f.srv = httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		f.srv.Close()
		api.Close()
		st.Close()
		for _, h := range f.hosts {
			h.Close(ctx)
		}
	})
	return f
}

func (f *fixture) do(t *testing.T, method, path, token, ctype, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAPI pins the tool endpoints, auth and the bad-input answers.
func TestAPI(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "db"))
	const js = "application/json"
	tests := []struct {
		name, method, path, token, ctype, body string
		status                                 int
		want                                   string
	}{
		{"health needs no token", "GET", "/healthz", "", "", "", 200, `"ok"`},
		{"ready", "GET", "/readyz", "", "", "", 200, `"ready"`},
		{"no token", "GET", "/v1/tools", "", "", "", 401, `"UNAUTHORIZED"`},
		{"forged token", "GET", "/v1/tools", "forged", "", "", 401, `"UNAUTHORIZED"`},
		{"scope", "POST", "/v1/sessions", "acme-call-only", js, `{"profile":"counter"}`, 403, `"FORBIDDEN"`},
		{"metrics need admin", "GET", "/metrics", "acme-token", "", "", 403, `"FORBIDDEN"`},
		{"list", "GET", "/v1/tools", "acme-token", "", "", 200, `"id":"core:echo"`},
		{"describe", "GET", "/v1/tools/text:stats", "acme-token", "", "", 200, `"kind":"wasm"`},
		{"unknown tool", "GET", "/v1/tools/nope:nope", "acme-token", "", "", 404, `"UNKNOWN_TOOL"`},
		{"path trick", "GET", "/v1/tools/..%2F..%2Fetc%2Fpasswd", "acme-token", "", "", 404, `"UNKNOWN_TOOL"`},
		{"call", "POST", "/v1/tools/core:echo/call", "acme-token", js, `{"a":1}`, 200, `"status":"success"`},
		{"call failing tool", "POST", "/v1/tools/text:regex/call", "acme-token", js, `{"pattern":"(","text":"x"}`, 200, `"TOOL_ERROR"`},
		{"call unknown", "POST", "/v1/tools/nope:x/call", "acme-token", js, `{}`, 404, `"UNKNOWN_TOOL"`},
		{"bad json", "POST", "/v1/tools/core:echo/call", "acme-token", js, `{"a":`, 400, `"INVALID_JSON"`},
		{"content type", "POST", "/v1/tools/core:echo/call", "acme-token", "text/plain", `{}`, 415, `"UNSUPPORTED_MEDIA_TYPE"`},
		{"too large", "POST", "/v1/tools/core:echo/call", "acme-token", js, `{"a":"` + strings.Repeat("x", 70<<10) + `"}`, 413, `"TOO_LARGE"`},
		{"async", "POST", "/v1/tools/core:echo/call?async=true", "acme-token", js, `{}`, 202, `"status":"running"`},
		{"async bad value", "POST", "/v1/tools/core:echo/call?async=maybe", "acme-token", js, `{}`, 400, `async must be`},
		{"async unknown tool", "POST", "/v1/tools/nope:x/call?async=true", "acme-token", js, `{}`, 404, `"UNKNOWN_TOOL"`},
		{"unknown job", "GET", "/v1/jobs/nope", "acme-token", "", "", 404, `"NOT_FOUND"`},
		{"exec", "POST", "/v1/exec", "acme-token", js, `{"output":"<ACTION><core:echo><a>1</a></core:echo></ACTION>"}`, 200, `"observation"`},
		{"exec unknown field", "POST", "/v1/exec", "acme-token", js, `{"output":"x","extra":1}`, 400, `"INVALID_JSON"`},
		{"unknown endpoint", "GET", "/v2/whatever", "acme-token", "", "", 404, `"NOT_FOUND"`},
		{"unknown profile", "POST", "/v1/sessions", "acme-token", js, `{"profile":"nope"}`, 404, `"UNKNOWN_PROFILE"`},
		{"bad thread id", "POST", "/v1/agents/counter/runs", "acme-token", js, `{"threadId":"../x","messages":[{"id":"1","role":"user","content":"hi"}]}`, 400, `threadId`},
		{"client tools", "POST", "/v1/agents/counter/runs", "acme-token", js, `{"threadId":"t1","tools":[{"name":"x"}],"messages":[{"id":"1","role":"user","content":"hi"}]}`, 400, `client-side tools`},
		{"no user message", "POST", "/v1/agents/counter/runs", "acme-token", js, `{"threadId":"t1","messages":[]}`, 400, `no user message`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.do(t, tc.method, tc.path, tc.token, tc.ctype, tc.body)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s; want %d with %s", status, body, tc.status, tc.want)
			}
		})
	}
	status, body := f.do(t, "GET", "/metrics", "admin-token", "", "")
	for _, want := range []string{`agenthost_tool_calls_total{code="",status="success",tenant="acme",tool="core:echo"}`,
		`agenthost_tool_call_seconds_bucket{tenant="acme",tool="core:echo"`, `agenthost_pool_hits_total{tenant="acme",tool="core:echo"}`,
		`agenthost_pool_ready_instances{tenant="acme",tool="core:echo"}`, `agenthost_pool_waits_total{tenant="acme",tool="core:echo"}`,
		`agenthost_pool_instances{tenant="acme",tool="core:echo"}`} {
		if status != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Every route is in the OpenAPI document.
	status, body = f.do(t, "GET", "/openapi.json", "acme-token", "", "")
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &doc) != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %d", status)
	}
	for _, p := range []string{"/v1/jobs/{id}", "/v1/jobs/{id}/events", "/healthz", "/readyz", "/metrics", "/openapi.json", "/v1/tools", "/v1/tools/{id}", "/v1/tools/{id}/call", "/v1/exec", "/v1/sessions", "/v1/sessions/{id}/messages", "/v1/sessions/{id}/history", "/v1/agents/{profile}/runs", "/mcp"} {
		if doc.Paths[p] == nil {
			t.Errorf("openapi lacks %s", p)
		}
	}
	f.api.Drain()
	if status, _ := f.do(t, "GET", "/readyz", "", "", ""); status != 503 {
		t.Errorf("readyz while draining: %d", status)
	}
}

// events reads an SSE body into its events.
func events(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event %s: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// TestAgentRun streams an AG-UI run, checks the event sequence, the
// stored history (tool message with its ToolAgentOutput and ui_schema),
// tenant isolation, and that history is identical after a restart.
func TestAgentRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db")
	f := newFixture(t, db)
	in := `{"threadId":"thread-1","runId":"run-1","state":{},"messages":[{"id":"m1","role":"user","content":"How many words?"}],"tools":[],"context":[],"forwardedProps":{}}`
	status, body := f.do(t, "POST", "/v1/agents/counter/runs", "acme-token", "application/json", in)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var types []string
	for _, e := range events(t, body) {
		types = append(types, e["type"].(string))
	}
	want := "RUN_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END TOOL_CALL_RESULT TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END RUN_FINISHED"
	if strings.Join(types, " ") != want {
		t.Fatalf("events %v", types)
	}
	status, hist := f.do(t, "GET", "/v1/sessions/thread-1/history", "acme-token", "", "")
	if status != 200 || !strings.Contains(hist, `"tool_agent_output":{"tool_name":"text__stats"`) || !strings.Contains(hist, `"content":"Three words."`) {
		t.Fatalf("history %d %s", status, hist)
	}
	for _, p := range []string{"/v1/sessions/thread-1/history"} {
		if status, body := f.do(t, "GET", p, "beta-token", "", ""); status != 404 {
			t.Errorf("beta reads acme's %s: %d %s", p, status, body)
		}
	}
	if status, _ := f.do(t, "POST", "/v1/sessions/thread-1/messages", "beta-token", "application/json", `{"content":"hi"}`); status != 404 {
		t.Errorf("beta posts to acme's session: %d", status)
	}
	// A second turn in the same session sends the history to the model.
	status, body = f.do(t, "POST", "/v1/sessions/thread-1/messages", "acme-token", "application/json", `{"content":"And again?"}`)
	if status != 200 || !strings.Contains(body, "RUN_FINISHED") {
		t.Fatalf("second turn %d %s", status, body)
	}
	_, before := f.do(t, "GET", "/v1/sessions/thread-1/history", "acme-token", "", "")
	f.srv.Close()
	f.store.Close()
	f2 := newFixture(t, db)
	_, after := f2.do(t, "GET", "/v1/sessions/thread-1/history", "acme-token", "", "")
	if before != after || strings.Count(after, `"role":"tool"`) != 2 {
		t.Fatalf("history after a restart differs:\n%s\n%s", before, after)
	}
}

// TestConcurrencyLimit fills a tenant's slots with slow calls: the next
// request is 429, another tenant is not affected.
func TestConcurrencyLimit(t *testing.T) {
	type none struct{}
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	slow := host.Func(host.FuncSpec{ID: "app:slow", Description: "Slow."}, func(ctx context.Context, _ none) (map[string]int, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return map[string]int{}, nil
	})
	f := newFixture(t, filepath.Join(t.TempDir(), "db"), slow)
	done := make(chan int, 2)
	for range 2 {
		go func() {
			s, _ := f.do(t, "POST", "/v1/tools/app:slow/call", "acme-token", "application/json", `{}`)
			done <- s
		}()
	}
	for range 2 {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow calls did not start")
		}
	}
	if s, body := f.do(t, "GET", "/v1/tools", "acme-token", "", ""); s != 429 || !strings.Contains(body, "TOO_MANY_REQUESTS") {
		t.Errorf("a third request: %d %s", s, body)
	}
	if s, _ := f.do(t, "GET", "/v1/tools", "beta-token", "", ""); s != 200 {
		t.Errorf("another tenant: %d", s)
	}
	close(release)
	if a, b := <-done, <-done; a != 200 || b != 200 {
		t.Errorf("slow calls: %d %d", a, b)
	}
}

// TestAGUIClient drives the AG-UI endpoint with the official
// @ag-ui/client HttpAgent (npm, in testdata/agui): the run's events, the
// tool result and the final answer arrive as the client expects.
func TestAGUIClient(t *testing.T) {
	node, err := exec.LookPath("node")
	_, modErr := os.Stat("testdata/agui/node_modules/@ag-ui/client")
	if err != nil || modErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or @ag-ui/client missing (.ci/run runs npm ci in host/serve/testdata/agui): %v %v", err, modErr)
		}
		t.Skip("node or @ag-ui/client is not installed (npm ci in host/serve/testdata/agui)")
	}
	f := newFixture(t, filepath.Join(t.TempDir(), "db"))
	out := aguiScript(t, node, "run.mjs", f.srv.URL, "acme-token", "counter", "agui-thread")
	var got struct {
		Events  []string `json:"events"`
		Results []struct {
			ToolCallID string `json:"toolCallId"`
			Content    string `json:"content"`
		} `json:"results"`
		Messages []struct {
			Role      string   `json:"role"`
			Content   *string  `json:"content"`
			ToolCalls []string `json:"toolCalls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Events) == 0 || got.Events[0] != "RUN_STARTED" || got.Events[len(got.Events)-1] != "RUN_FINISHED" {
		t.Fatalf("events %v", got.Events)
	}
	if len(got.Results) != 1 || !strings.HasPrefix(got.Results[0].ToolCallID, "call_") || !strings.Contains(got.Results[0].Content, `"words":3`) {
		t.Fatalf("tool results %+v", got.Results)
	}
	last := got.Messages[len(got.Messages)-1]
	if last.Role != "assistant" || last.Content == nil || *last.Content != "Three words." {
		t.Fatalf("messages %s", out)
	}
	var sawCall bool
	for _, m := range got.Messages {
		for _, c := range m.ToolCalls {
			sawCall = sawCall || c == "text__stats"
		}
	}
	if !sawCall {
		t.Fatalf("the client did not assemble the tool call: %s", out)
	}
	// The client's view is the server's history.
	status, hist := f.do(t, "GET", "/v1/sessions/agui-thread/history", "acme-token", "", "")
	if status != 200 || !strings.Contains(hist, `"content":"Three words."`) {
		t.Fatalf("history %d %s", status, hist)
	}
}

// fixtureMaxConcurrent is the per-tenant limit of fixtures (small, so
// that TestConcurrencyLimit reaches it; benchmarks raise it).
var fixtureMaxConcurrent = 2

// fixtureMaxQueued is the per-tenant bound of calls waiting for a place
// (0: the default).
var fixtureMaxQueued = 0

// TestConsole opens the web console in headless Chromium (driven over
// the DevTools protocol with chromedp): the catalogue lists the tools
// with their grants and risk flags, and a run of the "rows" profile
// renders the tool's result as a table from its ui_schema, as a person
// would see it.
func TestConsole(t *testing.T) {
	chromium := ""
	for _, c := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(c); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is missing (.ci/run installs it)")
		}
		t.Skip("chromium is not installed")
	}
	f := newFixture(t, filepath.Join(t.TempDir(), "db"), rowsTool(), pictureTool())
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancelT := context.WithTimeout(bctx, 60*time.Second)
	defer cancelT()
	step := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if _, err := chromedp.Run(bctx, a); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	html := func(sel string) string {
		t.Helper()
		out, err := chromedp.Run(bctx, chromedp.OuterHTML(sel))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return out
	}
	step("open the catalogue", chromedp.Navigate(f.srv.URL+"/#token=acme-token"))
	step("wait for its rows", chromedp.WaitVisible(`tr[data-tool="core:echo"]`))
	cat := html("#catalogue")
	for _, want := range []string{`data-tool="workflow:fingerprint"`, "reads the whole workspace", `data-try="text:stats"`} {
		if !strings.Contains(cat, want) {
			t.Errorf("the catalogue lacks %s", want)
		}
	}
	// A link pre-fills the run form and starts nothing: the run waits for
	// a click.
	step("open a run link", chromedp.Navigate(f.srv.URL+"/?run#token=acme-token&run=rows&message=Show%20rows"))
	step("wait for the profiles", chromedp.WaitReady(`#profile option[value="rows"]`))
	value := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Value(sel))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return v
	}
	if got := value("#message"); got != "Show rows" {
		t.Fatalf("the link did not pre-fill the message: %q", got)
	}
	step("wait for the form", chromedp.WaitReady(`#run-form[data-ready]`))
	if got := value("#profile"); got != "rows" {
		t.Errorf("the link did not pre-fill the profile: %q", got)
	}
	if run := html("#stream"); strings.Contains(run, "data-event") {
		t.Fatalf("the link started a run:\n%s", run)
	}
	if _, body := f.do(t, "GET", "/metrics", "operator-token", "", ""); strings.Contains(body, "/runs") {
		t.Fatalf("the link sent a run to the server")
	}
	step("click Run", chromedp.Click(`#run-form button`))
	step("wait for its end", chromedp.WaitVisible(`[data-event="RUN_FINISHED"]`))
	run := html("#stream")
	for _, want := range []string{`data-event="TOOL_CALL_RESULT"`, `class="ui-table"`, "<td>apple</td>", "<td>pear</td>", "Here are the rows.", "finished: done"} {
		if !strings.Contains(run, want) {
			t.Errorf("the run lacks %s:\n%s", want, run)
		}
	}
	// Images come only from the server or the result itself (data:): one
	// on another host is shown as its ui_schema, never loaded.
	step("open the picture run", chromedp.Navigate(f.srv.URL+"/?picture#token=acme-token&run=picture&message=Pictures"))
	step("wait for the picture form", chromedp.WaitReady(`#run-form[data-ready]`))
	step("click Run", chromedp.Click(`#run-form button`))
	step("wait for the pictures", chromedp.WaitVisible(`[data-event="RUN_FINISHED"]`))
	pics := html("#stream")
	if strings.Count(pics, "<img") != 1 || !strings.Contains(pics, `<img src="data:image/png`) {
		t.Errorf("want only the data: image shown:\n%s", pics)
	}
	if status, body := f.do(t, "GET", "/", "", "", ""); status != 200 || !strings.Contains(body, "agenthost console") {
		t.Errorf("GET /: %d", status)
	}
}

// TestJobs pins asynchronous calls: 202 and a job at once; its events end
// with the result; a running job is cancelled (the tool sees it, the
// result is CANCELLED); another tenant gets 404 for it.
func TestJobs(t *testing.T) {
	type none struct{}
	slow, stopped := slowTool()
	later := host.Func(host.FuncSpec{ID: "app:later", Description: "Long.", Async: true}, func(context.Context, none) (map[string]int, error) { return map[string]int{"ok": 1}, nil })
	f := newFixture(t, filepath.Join(t.TempDir(), "db"), slow, later)
	if status, body := f.do(t, "POST", "/v1/tools/app:later/call", "acme-token", "application/json", `{}`); status != 202 || !strings.Contains(body, `"status":"running"`) {
		t.Fatalf("an async tool: %d %s", status, body)
	}
	if status, body := f.do(t, "POST", "/v1/tools/app:later/call?async=false", "acme-token", "application/json", `{}`); status != 200 || !strings.Contains(body, `"ok":1`) {
		t.Fatalf("an async tool inline: %d %s", status, body)
	}
	jobID := func(body string) string {
		var ref serve.JobRef
		if err := json.Unmarshal([]byte(body), &ref); err != nil || ref.ID == "" {
			t.Fatalf("job ref %s", body)
		}
		return ref.ID
	}
	status, body := f.do(t, "POST", "/v1/tools/core:echo/call?async=true", "acme-token", "application/json", `{"job":1}`)
	if status != 202 {
		t.Fatalf("%d %s", status, body)
	}
	id := jobID(body)
	status, body = f.do(t, "GET", "/v1/jobs/"+id+"/events", "acme-token", "", "")
	if status != 200 || !strings.Contains(body, "event: status") || !strings.Contains(body, "event: result") || !strings.Contains(body, `\"job\":1`) && !strings.Contains(body, `"job":1`) {
		t.Fatalf("events %d %s", status, body)
	}
	if status, _ := f.do(t, "GET", "/v1/jobs/"+id, "beta-token", "", ""); status != 404 {
		t.Errorf("another tenant's job: %d", status)
	}
	status, body = f.do(t, "POST", "/v1/tools/app:slow/call?async=true", "acme-token", "application/json", `{}`)
	if status != 202 {
		t.Fatalf("%d %s", status, body)
	}
	slowID := jobID(body)
	if _, body := f.do(t, "GET", "/v1/jobs/"+slowID, "acme-token", "", ""); !strings.Contains(body, `"status":"running"`) {
		t.Fatalf("running job %s", body)
	}
	cancelJob(t, f, slowID, stopped)
}

// slowTool is app:slow, which runs until its call is cancelled, and the
// channel it signals then.
func slowTool() (host.Tool, <-chan struct{}) {
	type none struct{}
	stopped := make(chan struct{}, 1)
	return host.Func(host.FuncSpec{ID: "app:slow", Description: "Slow."}, func(ctx context.Context, _ none) (map[string]int, error) {
		<-ctx.Done()
		stopped <- struct{}{}
		return nil, ctx.Err()
	}), stopped
}

// cancelJob cancels acme's running job id with DELETE: the answer is the
// ended job, CANCELLED, and the tool saw the cancel.
func cancelJob(t *testing.T, f *fixture, id string, stopped <-chan struct{}) {
	t.Helper()
	status, body := f.do(t, "DELETE", "/v1/jobs/"+id, "acme-token", "", "")
	if status != 200 || !strings.Contains(body, `"status":"done"`) || !strings.Contains(body, "CANCELLED") {
		t.Fatalf("cancel %d %s", status, body)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool did not see the cancel")
	}
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPEndpoint drives /mcp with the official Go SDK client behind a
// token: the session lasts across requests, and the tenant's tools are
// listed and called.
func TestMCPEndpoint(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "db"))
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: f.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{"acme-token"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "core__echo", Arguments: map[string]any{"via": "serve"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	if _, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: f.srv.URL + "/mcp", MaxRetries: -1}, nil); err == nil {
		t.Fatal("/mcp without a token connected")
	}
}

// TestMCPTasksAreJobs: a task of an MCP client is a job of its tenant. Its
// ID is the job's, the job's events end with the call's envelope, another
// tenant gets 404, DELETE /v1/jobs/{id} stops a running task (the tool
// sees it; MCP then reports the task cancelled), and the job is still
// there after a restart.
func TestMCPTasksAreJobs(t *testing.T) {
	slow, stopped := slowTool()
	db := filepath.Join(t.TempDir(), "db")
	f := newFixture(t, db, slow)
	session := ""
	rpc := func(body string) string {
		req, _ := http.NewRequest("POST", f.srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer acme-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			session = s
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	rpc(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	rpc(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	taskID := func(body string) string {
		i := strings.Index(body, `"taskId":"`)
		if i < 0 {
			t.Fatalf("no task: %s", body)
		}
		rest := body[i+len(`"taskId":"`):]
		return rest[:strings.IndexByte(rest, '"')]
	}
	echo := taskID(rpc(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"core__echo","arguments":{"via":"mcp"},"task":{}}}`))
	status, body := f.do(t, "GET", "/v1/jobs/"+echo+"/events", "acme-token", "", "")
	if status != 200 || !strings.Contains(body, "event: result") || !strings.Contains(body, `"status":"done"`) || !strings.Contains(body, `"via":"mcp"`) {
		t.Fatalf("the task's job: %d %s", status, body)
	}
	if status, _ := f.do(t, "GET", "/v1/jobs/"+echo, "beta-token", "", ""); status != 404 {
		t.Errorf("another tenant reads the task's job: %d", status)
	}
	spin := taskID(rpc(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"app__slow","arguments":{},"task":{}}}`))
	cancelJob(t, f, spin, stopped)
	if got := rpc(`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"` + spin + `"}}`); !strings.Contains(got, `"status":"cancelled"`) {
		t.Errorf("MCP after the job's cancel: %s", got)
	}
	f.srv.Close()
	f.api.Close()
	f.store.Close()
	f2 := newFixture(t, db)
	if status, body := f2.do(t, "GET", "/v1/jobs/"+echo, "acme-token", "", ""); status != 200 || !strings.Contains(body, `"via":"mcp"`) {
		t.Errorf("after a restart: %d %s", status, body)
	}
}
