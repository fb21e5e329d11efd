package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// approvalPolicy makes every call of core:echo wait, and names the
// argument "path" under secrets/ as a risk of its own.
const approvalPolicy = `approve:
  - tools: ["core:echo"]
    when: {args: {path: "secrets/**"}}
  - tools: ["core:echo"]
`

// approvalServer is a real serve on loopback with tenants acme and beta,
// one broker for both.
func approvalServer(t testing.TB) (*httptest.Server, *approval.Broker) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "serve.db"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := approval.NewBroker(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tenants := map[string]*serve.Tenant{}
	var hosts []*host.Host
	for _, name := range []string{"acme", "beta"} {
		p := hosttest.Policy(t, approvalPolicy)
		h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, Policy: p, CacheDir: hosttest.CacheDir(t), Tenant: name, Approvals: b})
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
		tenants[name] = &serve.Tenant{Name: name, Host: h}
	}
	auth := serve.NewAuthenticator([]serve.TokenEntry{
		{SHA256: hash("acme-token"), Tenant: "acme", Scopes: []string{"call"}},
		{SHA256: hash("admin-token"), Tenant: "acme", Scopes: []string{"admin"}},
		{SHA256: hash("beta-admin-token"), Tenant: "beta", Scopes: []string{"admin"}},
		{SHA256: hash("operator-token"), Scopes: []string{"operator"}},
	})
	api, err := serve.New(serve.Options{Tenants: tenants, Auth: auth, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		api.Close()
		for _, h := range hosts {
			_ = h.Close(ctx)
		}
		st.Close()
	})
	return srv, b
}

func doJSON(t testing.TB, srv *httptest.Server, method, path, token, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// startCall makes a call that waits and returns its envelope when done.
func startCall(t testing.TB, srv *httptest.Server, args string) <-chan abi.Envelope {
	out := make(chan abi.Envelope, 1)
	go func() {
		_, b := doJSON(t, srv, "POST", "/v1/tools/core:echo/call", "acme-token", args)
		var env abi.Envelope
		_ = json.Unmarshal(b, &env)
		out <- env
	}()
	return out
}

// pendingList polls GET /v1/approvals until it has n entries.
func pendingList(t testing.TB, srv *httptest.Server, token string, n int) []approval.Request {
	t.Helper()
	for {
		code, b := doJSON(t, srv, "GET", "/v1/approvals", token, "")
		if code != http.StatusOK {
			t.Fatalf("GET /v1/approvals = %d %s", code, b)
		}
		var l serve.ApprovalList
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		if len(l.Approvals) >= n {
			return l.Approvals
		}
	}
}

func TestApprovalsHTTP(t *testing.T) {
	srv, b := approvalServer(t)
	done := startCall(t, srv, `{"path":"secrets/key"}`)
	list := pendingList(t, srv, "admin-token", 1)
	a := list[0]
	if a.Tool != "core:echo" || a.Tenant != "acme" || a.ID == "" || !a.Expires.After(a.Created) || strings.Join(a.Risks, ",") != "args:path" {
		t.Fatalf("pending entry = %+v", a)
	}
	if string(a.Arguments) != `{"path":"secrets/key"}` || a.Grant.TimeoutMs <= 0 || a.Grant.Read == nil {
		t.Errorf("arguments %s, grant %+v", a.Arguments, a.Grant)
	}

	// Another tenant sees nothing, and its answer is a 404 exactly like an unknown id's.
	if l := pendingList(t, srv, "beta-admin-token", 0); len(l) != 0 {
		t.Errorf("beta sees acme's approvals: %+v", l)
	}
	code1, body1 := doJSON(t, srv, "POST", "/v1/approvals/"+a.ID, "beta-admin-token", `{"decision":"allow-once"}`)
	code2, body2 := doJSON(t, srv, "POST", "/v1/approvals/apr_000000000000000000000000", "admin-token", `{"decision":"allow-once"}`)
	if code1 != http.StatusNotFound || code1 != code2 || !bytes.Equal(body1, body2) {
		t.Errorf("another tenant's id: %d %s; unknown id: %d %s", code1, body1, code2, body2)
	}
	// The caller's token (scope call) does not approve its own calls.
	if code, _ := doJSON(t, srv, "GET", "/v1/approvals", "acme-token", ""); code != http.StatusForbidden {
		t.Errorf("scope call: GET = %d, want 403", code)
	}
	if code, _ := doJSON(t, srv, "POST", "/v1/approvals/"+a.ID, "acme-token", `{"decision":"allow-once"}`); code != http.StatusForbidden {
		t.Errorf("scope call: POST = %d, want 403", code)
	}
	// Validation errors.
	for _, body := range []string{`{"decision":"yes"}`, `{"decision":"allow-once","minutes":5}`, `{"decision":"allow","minutes":100000}`, `{"decision":"allow","extra":1}`, `not json`} {
		if code, b := doJSON(t, srv, "POST", "/v1/approvals/"+a.ID, "admin-token", body); code != http.StatusBadRequest {
			t.Errorf("POST %s = %d %s, want 400", body, code, b)
		}
	}
	// The OpenAPI document has the routes and the 409.
	_, doc := doJSON(t, srv, "GET", "/openapi.json", "acme-token", "")
	for _, w := range []string{`"/v1/approvals"`, `"/v1/approvals/{id}"`, `"/v1/approvals/events"`, `"409"`} {
		if !bytes.Contains(doc, []byte(w)) {
			t.Errorf("the OpenAPI document lacks %s", w)
		}
	}
	// The operator sees every tenant's.
	if l := pendingList(t, srv, "operator-token", 1); len(l) != 1 || l[0].ID != a.ID {
		t.Errorf("operator list = %+v", l)
	}

	code, body := doJSON(t, srv, "POST", "/v1/approvals/"+a.ID, "admin-token", `{"decision":"allow-once"}`)
	var ans serve.ApprovalAnswer
	_ = json.Unmarshal(body, &ans)
	if code != http.StatusOK || ans.Approval.Decision != approval.AllowOnce || !strings.HasPrefix(ans.Approval.By, "acme/") {
		t.Fatalf("POST = %d %s", code, body)
	}
	if env := <-done; env.Error != nil {
		t.Fatalf("the approved call failed: %v", env.Error)
	}
	// Answered twice: 409 with the first decision.
	code, body = doJSON(t, srv, "POST", "/v1/approvals/"+a.ID, "admin-token", `{"decision":"deny"}`)
	ans = serve.ApprovalAnswer{}
	_ = json.Unmarshal(body, &ans)
	if code != http.StatusConflict || ans.Approval.Decision != approval.AllowOnce || ans.Error == nil || ans.Error.Code != "CONFLICT" {
		t.Fatalf("second POST = %d %s, want 409 with the first decision", code, body)
	}

	// Deny: the call is PERMISSION_DENIED, saying who denied it.
	done = startCall(t, srv, `{"a":1}`)
	a = pendingList(t, srv, "admin-token", 1)[0]
	if code, b := doJSON(t, srv, "POST", "/v1/approvals/"+a.ID, "operator-token", `{"decision":"deny"}`); code != http.StatusOK {
		t.Fatalf("operator deny = %d %s", code, b)
	}
	if env := <-done; env.Error == nil || env.Error.Code != abi.CodePermissionDenied || !strings.Contains(env.Error.Message, "denied by operator/") {
		t.Fatalf("denied call = %+v", env.Error)
	}

	// Allow for 10 minutes: the next call of the same rule runs at once.
	done = startCall(t, srv, `{"a":2}`)
	a = pendingList(t, srv, "admin-token", 1)[0]
	if code, b := doJSON(t, srv, "POST", "/v1/approvals/"+a.ID, "admin-token", `{"decision":"allow","minutes":10}`); code != http.StatusOK {
		t.Fatalf("allow = %d %s", code, b)
	}
	if env := <-done; env.Error != nil {
		t.Fatal(env.Error)
	}
	if env := <-startCall(t, srv, `{"a":3}`); env.Error != nil {
		t.Fatalf("the remembered allow did not apply: %v", env.Error)
	}
	if n := len(b.Pending("")); n != 0 {
		t.Fatalf("%d pending at the end", n)
	}
}

func TestApprovalsEvents(t *testing.T) {
	srv, _ := approvalServer(t)
	req, _ := http.NewRequest("GET", srv.URL+"/v1/approvals/events", nil)
	req.Header.Set("Authorization", "Bearer admin-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	done := startCall(t, srv, `{"a":1}`)
	buf := make([]byte, 64<<10)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "event: pending") {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("stream ended: %v (%s)", err, seen.String())
		}
		seen.Write(buf[:n])
	}
	if !strings.HasPrefix(seen.String(), "event: ready") {
		t.Errorf("the stream does not start with the list: %s", seen.String())
	}
	id := pendingList(t, srv, "admin-token", 1)[0].ID
	if code, b := doJSON(t, srv, "POST", "/v1/approvals/"+id, "admin-token", `{"decision":"allow-once"}`); code != http.StatusOK {
		t.Fatalf("POST = %d %s", code, b)
	}
	<-done
	for !strings.Contains(seen.String(), "event: decided") {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		seen.Write(buf[:n])
	}
}

// BenchmarkApprovalRoundTrip: a call that waits, GET /v1/approvals,
// POST the decision, the call's answer; against the same call without
// an approve rule (BenchmarkApprovalRoundTrip/none) in the same run.
func BenchmarkApprovalRoundTrip(b *testing.B) {
	srv, _ := approvalServer(b)
	roundTrip := func(b *testing.B) {
		done := startCall(b, srv, `{"a":1}`)
		id := pendingList(b, srv, "admin-token", 1)[0].ID
		if code, body := doJSON(b, srv, "POST", "/v1/approvals/"+id, "admin-token", `{"decision":"allow-once"}`); code != http.StatusOK {
			b.Fatalf("POST = %d %s", code, body)
		}
		if env := <-done; env.Error != nil {
			b.Fatal(env.Error)
		}
	}
	roundTrip(b) // the tools ready, the connections open
	if code, body := doJSON(b, srv, "POST", "/v1/tools/text:stats/call", "acme-token", `{"text":"a b"}`); code != http.StatusOK {
		b.Fatalf("call = %d %s", code, body)
	}
	b.Run("approval", func(b *testing.B) {
		for b.Loop() {
			roundTrip(b)
		}
	})
	b.Run("none", func(b *testing.B) {
		for b.Loop() {
			code, body := doJSON(b, srv, "POST", "/v1/tools/text:stats/call", "acme-token", `{"text":"a b"}`)
			if code != http.StatusOK || !bytes.Contains(body, []byte(`"success"`)) {
				b.Fatalf("call = %d %s", code, body)
			}
		}
	})
}
