package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/profile"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// gatedReplay is the replay provider made to stream: a turn's text goes
// to OnDelta word by word, and with a gate the second half waits until
// the gate opens, so a test sees the first words on screen while the run
// is still going. Only an answer (a turn without tool calls) waits.
type gatedReplay struct {
	*llm.Replay
	gate <-chan struct{}
}

func (p gatedReplay) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := p.Replay.Complete(ctx, req)
	if err != nil || req.OnDelta == nil || resp.Content == "" {
		return resp, err
	}
	words := strings.SplitAfter(resp.Content, " ")
	for i, w := range words {
		if i == (len(words)+1)/2 && p.gate != nil && len(resp.ToolCalls) == 0 {
			select {
			case <-p.gate:
			case <-ctx.Done():
				return llm.Response{}, ctx.Err()
			}
		}
		req.OnDelta(w)
	}
	return resp, nil
}

// The console fixture's scripted models, by profile.
var consoleTranscripts = map[string]string{
	// A tool whose result is a table, then an answer streamed in words
	// (the second half after the gate opens).
	"analyst": `{"content":"Let me look at the fruit.","tool_calls":[{"id":"a1","name":"app__fruit","arguments":{}}]}
{"content":"Here are the fruit with their prices: pear is the dearest."}`,
	// Every renderer fed a hostile result.
	"hostile": `{"content":"","tool_calls":[{"id":"h1","name":"app__hostiletable","arguments":{}},{"id":"h2","name":"app__hostilekv","arguments":{}},{"id":"h3","name":"app__hostilediff","arguments":{}},{"id":"h4","name":"app__hostilecode","arguments":{}},{"id":"h5","name":"app__hostiletext","arguments":{}},{"id":"h6","name":"app__hostilemarkdown","arguments":{}},{"id":"h7","name":"app__hostileimage","arguments":{}},{"id":"h8","name":"app__hostilescript","arguments":{}},{"id":"h9","name":"app__hostiletree","arguments":{}}]}
{"content":"<img src=x id=answerxss><script>window.xss=1</script>"}`,
	// A result as large as the output cap allows.
	"big": `{"content":"","tool_calls":[{"id":"b1","name":"app__big","arguments":{}}]}
{"content":"That was big."}`,
	// A run that waits at the gate (stopped mid-way by a test).
	"slow": `{"content":"Thinking about it for a long while before answering."}`,
}

// xss is a payload each hostile result carries: were it ever parsed as
// HTML, an element with id "xss" or an onerror attribute would appear.
const xss = `<img src=x onerror="window.xss=1" id=xss><script>window.xss=1</script>`

// hostileHints are the ui hints of the hostile tools, one per renderer
// (and the JSON tree, for a table whose rows are no list).
var hostileHints = map[string]map[string]string{
	"hostiletable":    {"kind": "table", "rows": "/rows", "columns": "/columns"},
	"hostilekv":       {"kind": "key-value", "items": "/items"},
	"hostilediff":     {"kind": "code", "text": "/diff", "language": "diff"},
	"hostilecode":     {"kind": "code", "text": "/text", "language": "/alt"},
	"hostiletext":     {"kind": "text", "text": "/text"},
	"hostilemarkdown": {"kind": "markdown", "text": "/text"},
	"hostileimage":    {"kind": "image", "src": "/remote", "alt": "/alt"},
	"hostilescript":   {"kind": "image", "src": "/script", "alt": "/alt"},
	"hostiletree":     {"kind": "table", "rows": "/object"},
}

// consoleTools are the native tools of the console fixture.
func consoleTools() []host.Tool {
	type none struct{}
	fruit := host.Func(host.FuncSpec{ID: "app:fruit", Description: "Fruit and their prices.", UI: map[string]string{"kind": "table", "rows": "/items"}}, func(context.Context, none) (map[string]any, error) {
		return map[string]any{"items": []map[string]any{{"fruit": "apple", "price": 1.5}, {"fruit": "pear", "price": 2.25}, {"fruit": "fig", "price": 0.75}}}, nil
	})
	// Each renderer gets a tool whose result is hostile everywhere its
	// hints point.
	payload := map[string]any{"columns": []string{xss, "b"}, "rows": []map[string]any{{xss: xss, "b": map[string]any{xss: xss}}},
		"items": map[string]any{xss: xss}, "diff": "--- a" + xss + "\n+++ b\n@@ -1 +1 @@\n-" + xss + "\n+" + xss,
		"text": "// " + xss + "\n\"" + xss + "\" 42", "remote": "https://evil.example/" + xss, "script": "javascript:window.xss=1", "alt": xss, "object": map[string]any{xss: []any{xss, map[string]any{xss: xss}}}}
	var tools []host.Tool
	for name, hints := range hostileHints {
		tools = append(tools, host.Func(host.FuncSpec{ID: "app:" + name, Description: "A hostile result.", UI: hints}, func(context.Context, none) (map[string]any, error) { return payload, nil }))
	}
	big := host.Func(host.FuncSpec{ID: "app:big", Description: "A result at the output cap.", UI: map[string]string{"kind": "table", "rows": "/rows"}}, func(context.Context, none) (map[string]any, error) {
		var rows []map[string]any
		// About 1,000,000 bytes of JSON: the output cap's size, and
		// within the store's message limit.
		for i := 0; i < 12000; i++ {
			rows = append(rows, map[string]any{"n": i, "word": fmt.Sprintf("word-%06d", i), "text": strings.Repeat("x", 40)})
		}
		return map[string]any{"rows": rows}, nil
	})
	// A call that runs until it is cancelled (a job to cancel).
	wait := host.Func(host.FuncSpec{ID: "app:wait", Description: "Waits until cancelled."}, func(ctx context.Context, _ none) (map[string]any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	// A parameter whose name is special to JavaScript objects.
	type protoIn struct {
		P string `json:"__proto__"`
	}
	proto := host.Func(host.FuncSpec{ID: "app:proto", Description: "Echoes its odd parameter."}, func(_ context.Context, in protoIn) (map[string]any, error) {
		return map[string]any{"got": in.P}, nil
	})
	return append(tools, fruit, big, wait, proto)
}

type consoleFixture struct {
	url   string
	store *store.Store
	api   *serve.Server
	// release opens the analyst's gate (once).
	release func()
	mu      sync.Mutex
	calls   []string // the bodies of POST /v1/tools/{id}/call, as received
}

// newConsoleFixture serves tenants acme and beta on loopback with the
// first-party toolpacks, the console's native tools and scripted models.
func newConsoleFixture(t testing.TB) *consoleFixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "agenthost.db"))
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	var once sync.Once
	f := &consoleFixture{store: st, release: func() { once.Do(func() { close(gate) }) }}
	profiles := map[string]*profile.Profile{}
	for id, inv := range map[string]string{"analyst": `["app:fruit"]`, "hostile": `["app:hostile*"]`, "big": `["app:big"]`, "slow": `["app:fruit"]`} {
		p, err := profile.Parse([]byte(`{"id":"` + id + `","name":"` + strings.ToUpper(id[:1]) + id[1:] + `","tool_ids_inventory":` + inv + `}`))
		if err != nil {
			t.Fatal(err)
		}
		profiles[id] = p
	}
	// The example profile of the first-run walk-through, with its
	// transcript.
	b, err := os.ReadFile("../../examples/agent/text-analyst.profile.json")
	if err != nil {
		t.Fatal(err)
	}
	if profiles["text-analyst"], err = profile.Parse(b); err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../../examples/agent/text-analyst.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tenants := map[string]*serve.Tenant{}
	var hosts []*host.Host
	for _, name := range []string{"acme", "beta"} {
		h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t), Tools: consoleTools()})
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
		tenants[name] = &serve.Tenant{Name: name, Host: h, Profiles: profiles, Provider: func(pr *profile.Profile) (llm.Provider, string, error) {
			text := consoleTranscripts[pr.ID]
			if pr.ID == "text-analyst" {
				text = string(example)
			}
			r, err := llm.ParseReplay([]byte(text))
			if err != nil {
				return nil, "", err
			}
			p := gatedReplay{Replay: r}
			if pr.ID == "analyst" || pr.ID == "slow" {
				p.gate = gate
			}
			if pr.ID == "slow" {
				p.gate = make(chan struct{}) // never opens
			}
			return p, "replay", nil
		}}
	}
	auth := serve.NewAuthenticator([]serve.TokenEntry{
		{SHA256: hash("acme-token"), Tenant: "acme", Scopes: []string{"call", "sessions"}},
		{SHA256: hash("beta-token"), Tenant: "beta", Scopes: []string{"call", "sessions"}},
	})
	api, err := serve.New(serve.Options{Tenants: tenants, Auth: auth, Store: st, MaxBody: 1 << 20, MaxConcurrent: 64})
	if err != nil {
		t.Fatal(err)
	}
	f.api = api
	h := api.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/call") {
			b, _ := io.ReadAll(r.Body)
			f.mu.Lock()
			f.calls = append(f.calls, r.URL.Path+" "+string(b))
			f.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		h.ServeHTTP(w, r)
	}))
	f.url = srv.URL
	t.Cleanup(func() {
		f.release()
		srv.Close()
		api.Close()
		st.Close()
		for _, h := range hosts {
			h.Close(ctx)
		}
	})
	return f
}

func (f *consoleFixture) get(t testing.TB, path, token string, into any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", f.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if into != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, b)
		}
	}
	return resp.StatusCode
}

// seedHistory writes a session of n messages (user, assistant in turn)
// straight into the store.
func seedHistory(t testing.TB, st *store.Store, tenant, id string, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.CreateSessionID(ctx, tenant, "analyst", id); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		role, text := "user", fmt.Sprintf("question %d", i)
		if i%2 == 0 {
			role, text = "assistant", fmt.Sprintf("answer %d", i)
		}
		if _, err := st.AppendMessage(ctx, tenant, id, store.Message{Role: role, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
}

// chromium is Debian's Chromium, which Playwright drives.
const chromium = "/usr/bin/chromium"

// consoleBrowser returns the Playwright folder (testdata/console) and
// node, or skips the test when they or Chromium are missing (fails it in
// CI, whose .ci/run installs them).
func consoleBrowser(t *testing.T) (dir, node string) {
	t.Helper()
	dir, err := filepath.Abs("testdata/console")
	if err != nil {
		t.Fatal(err)
	}
	for _, need := range []string{filepath.Join(dir, "node_modules", "playwright-core"), chromium} {
		if _, err := os.Stat(need); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing (.ci/run installs it)", need)
			}
			t.Skipf("%s is missing: run npm ci in %s and install Debian's chromium", need, dir)
		}
	}
	node, err = exec.LookPath("node")
	if err != nil {
		t.Fatal("node is missing")
	}
	return dir, node
}

// TestConsoleBrowser drives the web console in Debian's Chromium with
// Playwright against a real server on loopback: the catalogue is the
// landing page; a try-it call sends only what was set; an agent run
// streams its text and renders its table; a reload continues the thread
// from the session list; a history of 10,000 messages pages; a result at
// the output cap renders; hostile results stay text; a stale token gets
// a clear message; and no step logs a console error. With
// AGENTHOST_UPDATE_SCREENSHOTS=1 it writes the screenshots of
// docs/SERVE.md.
func TestConsoleBrowser(t *testing.T) {
	dir, node := consoleBrowser(t)
	var err error
	f := newConsoleFixture(t)
	seedHistory(t, f.store, "acme", "long-thread", 10000)
	shots := t.TempDir()
	if os.Getenv("AGENTHOST_UPDATE_SCREENSHOTS") == "1" {
		if shots, err = filepath.Abs("../../docs/img"); err != nil {
			t.Fatal(err)
		}
	}
	// The gate opens when the script asks (it has seen the first words).
	release := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.release() }))
	defer release.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "console.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BASE="+f.url, "TOKEN=acme-token", "CHROMIUM="+chromium, "SHOTS="+shots, "RELEASE="+release.URL)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the console script failed: %v", err)
	}
	// What the server received from the try-it form: only the fields set,
	// so the tools' defaults (find mode, a header row) applied.
	f.mu.Lock()
	calls := f.calls
	f.mu.Unlock()
	want := []string{
		`/v1/tools/text:regex/call {"pattern":"o+","text":"foo boo"}`,
		`/v1/tools/data:csv-to-json/call {"csv":"fruit,price\napple,1.5"}`,
		`/v1/tools/text:regex/call {"pattern":"o+","text":"foo boo","mode":"match","caseInsensitive":false,"limit":2}`,
		`/v1/tools/text:stats/call {"text":"a b"}`,
		`/v1/tools/text:regex/call {"pattern":"(","text":"x"}`,
		`/v1/tools/app:wait/call {}`,
		`/v1/tools/app:proto/call {"__proto__":"x"}`,
	}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("the server received:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
}

// TestDocsAGUIClient runs the AG-UI client of docs/SERVE.md as written
// (the official @ag-ui/client, from testdata/agui) against the server
// with the example profile, twice on one thread: the answer streams to
// stdout, and the second run continues the thread.
func TestDocsAGUIClient(t *testing.T) {
	node, err := exec.LookPath("node")
	_, modErr := os.Stat("testdata/agui/node_modules/@ag-ui/client")
	if err != nil || modErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or @ag-ui/client missing (.ci/run runs npm ci in host/serve/testdata/agui): %v %v", err, modErr)
		}
		t.Skip("node or @ag-ui/client is not installed (npm ci in host/serve/testdata/agui)")
	}
	doc, err := os.ReadFile("../../docs/SERVE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "### An AG-UI client")
	_, rest, ok2 := strings.Cut(rest, "```js\n")
	snippet, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/SERVE.md has no AG-UI client snippet under \"### An AG-UI client\"")
	}
	f := newConsoleFixture(t)
	for i, want := range []string{"[workflow__fingerprint]", "[workflow__fingerprint]"} {
		cmd := exec.Command(node, "--input-type=module", "-e", snippet)
		cmd.Dir = "testdata/agui"
		cmd.Env = append(os.Environ(), "AGENTHOST_URL="+f.url, "AGENTHOST_TOKEN=acme-token", "THREAD_ID=docs-thread")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, out)
		}
		for _, w := range []string{want, "[result] ", "The text has 8 words on 2 lines", "thread docs-thread:"} {
			if !strings.Contains(string(out), w) {
				t.Errorf("run %d: the output lacks %q:\n%s", i+1, w, out)
			}
		}
	}
	var p struct {
		Messages []serve.SessionMessage `json:"messages"`
	}
	if code := f.get(t, "/v1/sessions/docs-thread/messages", "acme-token", &p); code != 200 {
		t.Fatalf("the snippet's thread: %d", code)
	}
	var runs []string
	for _, m := range p.Messages {
		if m.Role == "user" {
			runs = append(runs, m.Run)
		}
	}
	if strings.Join(runs, ",") != "answered,answered" {
		t.Errorf("the thread's runs: %v, want two answered", runs)
	}
}
