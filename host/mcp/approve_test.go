package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// approvePolicy makes every call of core:echo and text:stats wait for a
// person's decision.
const approvePolicy = `approve:
  - tools: ["core:echo", "text:stats"]
    timeoutSeconds: 60
`

// approveHost is a host over the toolpacks under approvePolicy whose
// broker signs with key; now, when set, is the broker's clock.
func approveHost(t *testing.T, key []byte, now func() time.Time) (*host.Host, *approval.Broker) {
	t.Helper()
	b, err := approval.NewBroker(approval.Options{Key: key, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, Policy: hosttest.Policy(t, approvePolicy),
		CacheDir: hosttest.CacheDir(t), Approvals: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	return h, b
}

// serveApprover serves srv's handler with every request's caller set to
// who (as serve does from the token).
func serveApprover(t *testing.T, srv *mcp.Server, who string) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if who != "" {
			r = r.WithContext(mcp.WithApprover(r.Context(), who))
		}
		srv.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return ts
}

// attempt is one scenario of approve.mjs: a result or a JSON-RPC error.
type attempt struct {
	Result *struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"result"`
	Error *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	Elicitations []struct {
		Mode            string `json:"mode"`
		Message         string `json:"message"`
		RequestedSchema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"requestedSchema"`
		Meta map[string]approval.Request `json:"_meta"`
	} `json:"elicitations"`
}

// text is the result's text, or the error's message.
func (a attempt) text() string {
	switch {
	case a.Result != nil && len(a.Result.Content) > 0:
		return a.Result.Content[0].Text
	case a.Error != nil:
		return a.Error.Message
	}
	return ""
}

// TestApproveModern drives approvals over 2026-07-28 with the official
// TypeScript SDK v2 client (approve.mjs): its own driver answers the
// input_required question (allow once: the call runs; decline: it is
// PERMISSION_DENIED), and by hand a requestState that was tampered
// with or forged is refused as invalid params, and one that expired,
// was issued for another tool or other arguments, or was used already,
// is refused PERMISSION_DENIED without running. The decisions are
// recorded with the caller serve would name.
func TestApproveModern(t *testing.T) {
	n := node(t)
	key := []byte(strings.Repeat("k", 32))
	h, b := approveHost(t, key, nil)
	ts := serveApprover(t, mcp.New(h, mcp.Options{}), "acme/alice")
	args := `{"hello":"approved"}`

	// A state of the same server (key) issued an hour ago: expired now.
	past, _ := approveHost(t, key, func() time.Time { return time.Now().Add(-time.Hour) })
	ctx, d := approval.NoWait(context.Background())
	if env := past.Call(ctx, "core:echo", json.RawMessage(args)); env.Error == nil {
		t.Fatalf("the call ran without approval: %+v", env)
	}
	need, ok := d.Needed()
	if !ok {
		t.Fatal("no approval was needed")
	}

	cmd := exec.Command(n, "approve.mjs", ts.URL+"/mcp", "core__echo", args, "text__stats", `{"text":"one two"}`, need.State)
	cmd.Dir = "testdata/node"
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got map[string]attempt
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var first struct {
		First struct {
			ResultType    string `json:"resultType"`
			InputRequests map[string]struct {
				Method string `json:"method"`
			} `json:"inputRequests"`
			RequestState string `json:"requestState"`
		} `json:"first"`
	}
	_ = json.Unmarshal(out, &first)
	if f := first.First; f.ResultType != "input_required" || f.InputRequests["approval"].Method != "elicitation/create" || f.RequestState == "" {
		t.Errorf("first round: %+v", f)
	}

	allow := got["allow"]
	if allow.Result == nil || allow.Result.IsError || string(allow.Result.StructuredContent) != args {
		t.Errorf("allow: %s", out)
	}
	if len(allow.Elicitations) != 1 {
		t.Fatalf("allow: %d questions", len(allow.Elicitations))
	}
	q := allow.Elicitations[0]
	req := q.Meta[mcp.MetaApproval]
	if q.Mode != "form" || !strings.Contains(q.Message, "core:echo") || !strings.Contains(q.Message, `"hello":"approved"`) ||
		q.RequestedSchema.Properties["decision"] == nil || req.ID == "" || req.Tool != "core:echo" || req.ArgumentsDigest == "" {
		t.Errorf("the question: %+v", q)
	}
	if _, rec, err := b.Get("default", req.ID); err != nil || rec == nil || rec.Decision != approval.AllowOnce || rec.By != "acme/alice" {
		t.Errorf("the recorded decision: %+v %v", rec, err)
	}

	for _, tc := range []struct {
		name string
		code int    // a JSON-RPC error's code; 0 for a PERMISSION_DENIED result
		want string // in the text
	}{
		{"decline", 0, "denied by acme/alice"},
		{"tampered", -32602, "requestState was not issued by this server"},
		{"forged", -32602, "requestState was not issued by this server"},
		{"expired", 0, "expired"},
		{"otherTool", 0, "issued for another call"},
		{"otherArgs", 0, "issued for another call"},
		{"again", 0, "used already"},
	} {
		a := got[tc.name]
		switch {
		case tc.code != 0 && (a.Error == nil || a.Error.Code != tc.code):
			t.Errorf("%s: want the JSON-RPC error %d: %+v", tc.name, tc.code, a)
		case tc.code == 0 && (a.Result == nil || !a.Result.IsError || !strings.Contains(a.text(), "PERMISSION_DENIED")):
			t.Errorf("%s: want a PERMISSION_DENIED result: %+v", tc.name, a)
		case !strings.Contains(a.text(), tc.want):
			t.Errorf("%s: %q does not say %q", tc.name, a.text(), tc.want)
		}
	}
	if r := got["right"]; r.Result == nil || r.Result.IsError || string(r.Result.StructuredContent) != args {
		t.Errorf("right: %+v", r)
	}
}

// TestApproveElicitation drives approvals over the 2025-11-25 session
// revision with the official TypeScript SDK client (elicit.mjs): the
// server asks with elicitation/create during the call; allow once runs
// it, deny and decline refuse it (PERMISSION_DENIED), and a client that
// declared no elicitation is refused at once on a server where nobody
// else can decide, with a message that says so.
func TestApproveElicitation(t *testing.T) {
	n := node(t)
	h, b := approveHost(t, nil, nil)
	ts := serveApprover(t, mcp.New(h, mcp.Options{}), "")
	events, stop, err := b.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cmd := exec.Command(n, "elicit.mjs", ts.URL+"/mcp", "core__echo", `{"via":"elicitation"}`)
	cmd.Dir = "testdata/node"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got map[string]attempt
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if a := got["allow"]; a.Result == nil || a.Result.IsError || string(a.Result.StructuredContent) != `{"via":"elicitation"}` || len(a.Elicitations) != 1 ||
		a.Elicitations[0].Meta[mcp.MetaApproval].Tool != "core:echo" {
		t.Errorf("allow: %+v", a)
	}
	for name, want := range map[string]string{
		"deny":      "denied by mcp:approver-v1",
		"decline":   "denied by mcp:approver-v1",
		"incapable": "cannot be asked (it did not declare the elicitation capability): no one can decide it",
	} {
		a := got[name]
		if a.Result == nil || !a.Result.IsError || !strings.Contains(a.text(), "PERMISSION_DENIED") || !strings.Contains(a.text(), want) {
			t.Errorf("%s: want PERMISSION_DENIED saying %q: %+v", name, want, a)
		}
	}
	// The three questions asked were decided by the client, as recorded.
	decided := map[approval.Decision]int{}
	for seen := 0; seen < 3; {
		select {
		case ev := <-events:
			if ev.Kind == approval.EventDecided {
				if ev.Record.By != "mcp:approver-v1" {
					t.Errorf("decided by %q", ev.Record.By)
				}
				decided[ev.Record.Decision]++
				seen++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("decisions seen: %v", decided)
		}
	}
	if decided[approval.AllowOnce] != 1 || decided[approval.Deny] != 2 {
		t.Errorf("decisions: %v", decided)
	}
}

// TestApproveElsewhere: a client that cannot be asked, on a server whose
// Approvers names where a person decides, waits for that decision (here
// given through the broker, as the console does) and runs once allowed;
// a plain call of a tool no rule names still takes the fast path.
func TestApproveElsewhere(t *testing.T) {
	h, b := approveHost(t, nil, nil)
	srv := mcp.New(h, mcp.Options{Approvers: "the console"})
	ts := serveApprover(t, srv, "acme/bob")
	events, stop, err := b.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	go func() {
		for ev := range events {
			if ev.Kind == approval.EventPending {
				_, _, _ = b.Decide(ev.Request.Tenant, ev.Request.ID, approval.AllowOnce, 0, "default/operator")
			}
		}
	}()
	c := newRawHTTP(t, ts.URL+"/mcp")
	_, body := c.post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"core__echo","arguments":{"waited":true}}}`, true)
	if !strings.Contains(body, `"structuredContent":{"waited":true}`) {
		t.Fatalf("the call: %s", body)
	}
	before := mcp.FastCalls(srv)
	_, body = c.post(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hash__digest","arguments":{"text":"x"}}}`, true)
	if strings.Contains(body, `"isError":true`) || mcp.FastCalls(srv) != before+1 {
		t.Fatalf("a tool no rule names: %s (fast calls %d -> %d)", body, before, mcp.FastCalls(srv))
	}
}
