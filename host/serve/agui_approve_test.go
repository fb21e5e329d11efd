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
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/profile"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// approveServer serves one tenant, acme, whose policy makes every call
// of hash:digest wait for approval, with the profile digester (that tool
// only) replaying testdata/agui/approve.jsonl: a call of hash:digest,
// then an answer.
func approveServer(t *testing.T) (*httptest.Server, *approval.Broker) {
	t.Helper()
	ctx := context.Background()
	transcript, err := os.ReadFile(filepath.Join("testdata", "agui", "approve.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := approval.NewBroker(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t), Approvals: b,
		Policy: hosttest.Policy(t, "approve:\n  - tools: [\"hash:digest\"]\n    timeoutSeconds: 60\n")})
	if err != nil {
		t.Fatal(err)
	}
	prof := &profile.Profile{ID: "digester", Mode: "native", MaxIterations: 4, Inventory: []string{"hash:digest"}}
	tenant := &serve.Tenant{Name: "acme", Host: h, Profiles: map[string]*profile.Profile{prof.ID: prof},
		Provider: func(*profile.Profile) (llm.Provider, string, error) {
			p, err := llm.ParseReplay(transcript)
			return p, "replay", err
		}}
	t.Cleanup(func() { h.Close(ctx) })
	srv := acmeServer(t, tenant, st, serve.Options{MaxBody: 1 << 20, MaxConcurrent: 4})
	return srv, b
}

// aguiNode returns node with @ag-ui/client installed, as CI has them.
func aguiNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	_, modErr := os.Stat("testdata/agui/node_modules/@ag-ui/client")
	if err != nil || modErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or @ag-ui/client missing (.ci/run runs npm ci in host/serve/testdata/agui): %v %v", err, modErr)
		}
		t.Skip("node or @ag-ui/client is not installed (npm ci in host/serve/testdata/agui)")
	}
	return node
}

// TestAGUIApproval drives the interrupt of a tool call that needs
// approval with the official @ag-ui/client: the first run ends with an
// interrupt outcome naming the call, its approval and the answer's
// schema; the client's next run resumes it (allow once: the call runs;
// deny, or the interrupt cancelled: PERMISSION_DENIED, and the model
// goes on), and the decision is recorded with the token's tenant and
// subject.
func TestAGUIApproval(t *testing.T) {
	node := aguiNode(t)
	srv, b := approveServer(t)
	who := "acme/token:" + hash("acme-token")[:12]
	for _, tc := range []struct {
		answer   string
		decision approval.Decision
		want     string // in the tool result
	}{
		{"allow-once", approval.AllowOnce, `"sha256"`},
		{"deny", approval.Deny, "PERMISSION_DENIED"},
		{"cancelled", approval.Deny, "denied by " + who},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			events, stop, err := b.Subscribe("")
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			cmd := exec.Command(node, "approve.mjs", srv.URL, "acme-token", "digester", "approve-"+tc.answer, tc.answer)
			cmd.Dir = "testdata/agui"
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("node: %v\n%s", err, out)
			}
			var got struct {
				First struct {
					Events     []string              `json:"events"`
					Outcome    string                `json:"outcome"`
					Interrupts []serve.AGUIInterrupt `json:"interrupts"`
				} `json:"first"`
				Second struct {
					Events  []string `json:"events"`
					Outcome string   `json:"outcome"`
					Results []struct {
						ToolCallID, Content string
					} `json:"results"`
					Error string `json:"error"`
				} `json:"second"`
				Left int `json:"left"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			f := got.First
			if f.Outcome != "interrupt" || len(f.Interrupts) != 1 || strings.Contains(strings.Join(f.Events, ","), "TOOL_CALL_RESULT") {
				t.Fatalf("first run: %s", out)
			}
			in := f.Interrupts[0]
			if in.Reason != serve.InterruptApproval || in.ToolCallID == "" || !strings.HasPrefix(in.ID, "apr_") || in.ExpiresAt == "" ||
				!strings.Contains(in.Message, "hash:digest") || !strings.Contains(string(in.ResponseSchema), "allow-once") || in.Metadata[serve.MetaApproval] == nil {
				t.Fatalf("the interrupt: %+v", in)
			}
			s := got.Second
			if s.Error != "" || s.Outcome != "success" || len(s.Results) != 1 || s.Results[0].ToolCallID != in.ToolCallID ||
				!strings.Contains(s.Results[0].Content, tc.want) || got.Left != 0 {
				t.Fatalf("second run: %s", out)
			}
			for ev := range events {
				if ev.Kind == approval.EventDecided && ev.Request.ID == in.ID {
					if ev.Record.Decision != tc.decision || ev.Record.By != who {
						t.Fatalf("recorded %+v, want %s by %s", ev.Record, tc.decision, who)
					}
					break
				}
			}
		})
	}
}

// TestAGUIResumeRefused: resume entries that answer nothing open, a new
// run on a thread whose run waits at an interrupt, an answer that is not
// a decision, and resume entries on a thread with nothing to resume are
// refused with a structured error; the waiting run is kept for the right
// answer.
func TestAGUIResumeRefused(t *testing.T) {
	srv, _ := approveServer(t)
	url := srv.URL + "/v1/agents/digester/runs"
	first := aguiEvents(t, url, `{"threadId":"held","messages":[{"id":"u1","role":"user","content":"Digest."}]}`)
	last := first[len(first)-1]
	if last.Type != "RUN_FINISHED" || last.Outcome == nil || last.Outcome.Type != "interrupt" || len(last.Outcome.Interrupts) != 1 {
		t.Fatalf("first run: %+v", first)
	}
	id := last.Outcome.Interrupts[0].ID
	for _, tc := range []struct {
		name, body string
		status     int
		code, want string
	}{
		{"unknown interrupt", `{"threadId":"held","messages":[],"resume":[{"interruptId":"apr_nope","status":"resolved","payload":{"decision":"allow-once"}}]}`, 400, "INVALID_ARGUMENTS", "not an open interrupt"},
		{"no decision", `{"threadId":"held","messages":[],"resume":[{"interruptId":"` + id + `","status":"resolved","payload":{"decision":"yes"}}]}`, 400, "INVALID_ARGUMENTS", `decision "yes"`},
		{"bad status", `{"threadId":"held","messages":[],"resume":[{"interruptId":"` + id + `","status":"maybe"}]}`, 400, "INVALID_ARGUMENTS", "resolved or cancelled"},
		{"new run while held", `{"threadId":"held","messages":[{"id":"u2","role":"user","content":"Again."}]}`, 409, "INTERRUPTED", id},
		{"nothing to resume", `{"threadId":"other","messages":[],"resume":[{"interruptId":"` + id + `","status":"cancelled"}]}`, 409, "NO_INTERRUPT", "no run waiting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", url, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer acme-token")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != tc.status || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.want) {
				t.Fatalf("%d %+v", resp.StatusCode, e)
			}
		})
	}
	// The run waited through all that: the right answer resumes it.
	rest := aguiEvents(t, url, `{"threadId":"held","messages":[],"resume":[{"interruptId":"`+id+`","status":"resolved","payload":"allow-once"}]}`)
	if rest[0].Type != "RUN_STARTED" || rest[len(rest)-1].Type != "RUN_FINISHED" || rest[len(rest)-1].Outcome != nil {
		t.Fatalf("resumed: %+v", rest)
	}
}

// TestMCPApprover: a decision given over serve's /mcp (2026-07-28,
// input_required then the retry) is recorded as the token's tenant and
// subject, not as the name the client gives itself.
func TestMCPApprover(t *testing.T) {
	srv, b := approveServer(t)
	events, stop, err := b.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	post := func(params string) map[string]json.RawMessage {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hash__digest","arguments":{"text":"x"},` + params +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"pretender","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}`
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
		for k, v := range map[string]string{"Authorization": "Bearer acme-token", "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "hash__digest", "Agenthost-Internal-Approver": "acme/forged"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if data, ok := strings.CutPrefix(strings.TrimSpace(string(raw)), "event: message\ndata: "); ok {
			raw = []byte(data)
		}
		var m struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(raw, &m); err != nil || m.Result == nil {
			t.Fatalf("%v: %s", err, raw)
		}
		return m.Result
	}
	first := post("")
	var state string
	if json.Unmarshal(first["requestState"], &state); string(first["resultType"]) != `"input_required"` || state == "" {
		t.Fatalf("first round: %v", first)
	}
	second := post(`"inputResponses":{"approval":{"action":"accept","content":{"decision":"allow-once"}}},"requestState":"` + state + `",`)
	if string(second["isError"]) == "true" || second["structuredContent"] == nil {
		t.Fatalf("the retry: %v", second)
	}
	for ev := range events {
		if ev.Kind == approval.EventDecided {
			if want := "acme/token:" + hash("acme-token")[:12]; ev.Record.By != want {
				t.Fatalf("recorded by %q, want %q", ev.Record.By, want)
			}
			break
		}
	}
}

// TestAGUIDecidedElsewhere: a call decided in the console (the broker)
// while its run waits at an interrupt keeps that first decision: the
// client's later "deny" changes nothing and its resume streams the call's
// result. A run whose question was decided and that ended unresumed does
// not hold its thread: a new run starts.
func TestAGUIDecidedElsewhere(t *testing.T) {
	srv, b := approveServer(t)
	url := srv.URL + "/v1/agents/digester/runs"
	for _, resume := range []bool{true, false} {
		thread := map[bool]string{true: "elsewhere-resumed", false: "elsewhere-left"}[resume]
		first := aguiEvents(t, url, `{"threadId":"`+thread+`","messages":[{"id":"u1","role":"user","content":"Digest."}]}`)
		last := first[len(first)-1]
		if last.Outcome == nil || len(last.Outcome.Interrupts) != 1 {
			t.Fatalf("first run: %+v", first)
		}
		id := last.Outcome.Interrupts[0].ID
		if _, ok, err := b.Decide("default", id, approval.AllowOnce, 0, "acme/admin"); !ok || err != nil {
			t.Fatalf("decide: %v %v", ok, err)
		}
		body := `{"threadId":"` + thread + `","messages":[{"id":"u2","role":"user","content":"Digest again."}]}`
		if !resume {
			waitAnswered(t, srv.URL, thread)
		}
		if resume {
			body = `{"threadId":"` + thread + `","messages":[],"resume":[{"interruptId":"` + id + `","status":"resolved","payload":{"decision":"deny"}}]}`
		}
		rest := aguiEvents(t, url, body)
		var result string
		for _, e := range rest {
			if e.Type == "TOOL_CALL_RESULT" && e.Content != nil && result == "" {
				result = *e.Content
			}
		}
		if resume && (!strings.Contains(result, `"sha256"`) || rest[len(rest)-1].Type != "RUN_FINISHED") {
			t.Fatalf("resumed after the console allowed: %+v", rest)
		}
		if !resume && (rest[len(rest)-1].Outcome == nil || rest[len(rest)-1].Outcome.Interrupts[0].ID == id) {
			// A new run: its own call asks anew.
			t.Fatalf("a new run on the thread: %+v", rest)
		}
		if _, rec, err := b.Get("default", id); err != nil || rec.By != "acme/admin" || rec.Decision != approval.AllowOnce {
			t.Fatalf("recorded %+v %v", rec, err)
		}
	}
}

// waitAnswered waits until the thread's run has ended (its last user
// message's run is "answered"): the run goes on in the background once
// its call is decided elsewhere.
func waitAnswered(t *testing.T, base, thread string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		req, _ := http.NewRequest("GET", base+"/v1/sessions/"+thread+"/messages", nil)
		req.Header.Set("Authorization", "Bearer acme-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page serve.MessagePage
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(page.Messages); n > 0 && page.Messages[0].Run == serve.RunAnswered {
			return
		}
	}
	t.Fatalf("thread %s: the run never ended", thread)
}
