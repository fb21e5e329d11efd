package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/receipt"
)

// approveHost is a host whose policy makes calls matching the rule wait.
func approveHost(t *testing.T, rule string, b *approval.Broker) *host.Host {
	t.Helper()
	p := hosttest.Policy(t, "fileAccess: {allowRead: [\"**\"], allowWrite: [\"out/**\"]}\napprove:\n"+rule)
	h, err := host.New(context.Background(), host.Options{Dirs: []string{hosttest.Toolpacks(t)}, Policy: p, CacheDir: hosttest.CacheDir(t), Tenant: "acme", Approvals: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// answer decides the next request of tenant acme that the broker
// publishes, and reports the request.
func answer(t *testing.T, b *approval.Broker, d approval.Decision, minutes int) <-chan approval.Request {
	t.Helper()
	events, stop, err := b.Subscribe("acme")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan approval.Request, 1)
	go func() {
		defer stop()
		for ev := range events {
			if ev.Kind != approval.EventPending {
				continue
			}
			if _, _, err := b.Decide("acme", ev.Request.ID, d, minutes, "acme/alice"); err != nil {
				t.Error(err)
			}
			got <- ev.Request
			return
		}
	}()
	return got
}

func TestApproveCall(t *testing.T) {
	cases := []struct {
		name     string
		rule     string
		tool     string
		args     string
		decision approval.Decision // "" when the call must not wait
		wantCode abi.Code          // "" for success
		risks    []string
	}{
		{"no rule for the tool", "  - tools: [\"fs:write\"]\n", "core:echo", `{"a":1}`, "", "", nil},
		{"tool glob, allowed once", "  - tools: [\"core:*\"]\n", "core:echo", `{"a":1}`, approval.AllowOnce, "", []string{}},
		{"denied", "  - tools: [\"core:echo\"]\n", "core:echo", `{"a":1}`, approval.Deny, abi.CodePermissionDenied, []string{}},
		{"args match", "  - tools: [\"core:echo\"]\n    when: {args: {path: \"secrets/**\"}}\n", "core:echo", `{"path":"./secrets/k"}`, approval.AllowOnce, "", []string{"args:path"}},
		{"args do not match", "  - tools: [\"core:echo\"]\n    when: {args: {path: \"secrets/**\"}}\n", "core:echo", `{"path":"public/k"}`, "", "", nil},
		{"json pointer", "  - tools: [\"core:echo\"]\n    when: {args: {\"/o/target\": \"prod-*\"}}\n", "core:echo", `{"o":{"target":"prod-eu"}}`, approval.AllowOnce, "", []string{"args:/o/target"}},
		{"write granted", "  - tools: [\"fs:write\"]\n    when: {write: true}\n", "fs:write", `{"path":"/tmp/x","content":"y"}`, approval.Deny, abi.CodePermissionDenied, []string{"write"}},
		{"write not granted", "  - tools: [\"core:echo\"]\n    when: {write: true}\n", "core:echo", `{"a":1}`, "", "", nil},
		{"hosts not reached", "  - tools: [\"core:echo\"]\n    when: {hosts: [\"*\"]}\n", "core:echo", `{"a":1}`, "", "", nil},
		{"credentials not given", "  - tools: [\"core:echo\"]\n    when: {credentials: true}\n", "core:echo", `{"a":1}`, "", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := approval.NewBroker(approval.Options{})
			if err != nil {
				t.Fatal(err)
			}
			h := approveHost(t, tc.rule, b)
			var asked <-chan approval.Request
			if tc.decision != "" {
				asked = answer(t, b, tc.decision, 0)
			}
			env := h.Call(context.Background(), tc.tool, json.RawMessage(tc.args))
			if tc.wantCode == "" && env.Error != nil {
				t.Fatalf("call failed: %v", env.Error)
			}
			if tc.wantCode != "" && (env.Error == nil || env.Error.Code != tc.wantCode) {
				t.Fatalf("error = %v, want %s", env.Error, tc.wantCode)
			}
			if tc.decision == "" {
				if n := len(b.Pending("")); n != 0 {
					t.Fatalf("%d pending", n)
				}
				return
			}
			req := <-asked
			if req.Tool != tc.tool || req.Tenant != "acme" || strings.Join(req.Risks, ",") != strings.Join(tc.risks, ",") {
				t.Errorf("request = %+v, want tool %s, risks %v", req, tc.tool, tc.risks)
			}
			if tc.wantCode != "" && !strings.Contains(env.Error.Message, "denied by acme/alice") {
				t.Errorf("message %q does not say who denied", env.Error.Message)
			}
		})
	}
}

func TestApproveTimeout(t *testing.T) {
	h := approveHost(t, "  - tools: [\"core:echo\"]\n    timeoutSeconds: 1\n", nil)
	env := h.Call(context.Background(), "core:echo", json.RawMessage(`{"a":1}`))
	if env.Error == nil || env.Error.Code != abi.CodePermissionDenied || !strings.Contains(env.Error.Message, "no decision came within 1 s") {
		t.Fatalf("error = %v, want PERMISSION_DENIED saying no decision came within 1 s", env.Error)
	}
	if n := len(h.Approvals().Pending("")); n != 0 {
		t.Fatalf("%d requests still pending", n)
	}
}

func TestApproveCancelRemovesPending(t *testing.T) {
	b, _ := approval.NewBroker(approval.Options{})
	h := approveHost(t, "  - tools: [\"core:echo\"]\n", b)
	events, stop, _ := b.Subscribe("acme")
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan abi.Envelope)
	go func() { done <- h.Call(ctx, "core:echo", json.RawMessage(`{"a":1}`)) }()
	ev := <-events
	if len(b.Pending("acme")) != 1 {
		t.Fatal("the call is not pending")
	}
	cancel()
	env := <-done
	if env.Error == nil || env.Error.Code != abi.CodeCancelled {
		t.Fatalf("error = %v, want CANCELLED", env.Error)
	}
	if n := len(b.Pending("")); n != 0 {
		t.Fatalf("%d requests still pending after the caller gave up", n)
	}
	rec, first, err := b.Decide("acme", ev.Request.ID, approval.AllowOnce, 0, "acme/bob")
	if err != nil || first || rec.Decision != approval.Cancelled {
		t.Fatalf("late answer: %+v first=%v err=%v, want the cancelled record", rec, first, err)
	}
}

// TestApproveNested: a workflow's inner calls are checked like any other.
func TestApproveNested(t *testing.T) {
	b, _ := approval.NewBroker(approval.Options{})
	h := approveHost(t, "  - tools: [\"hash:digest\"]\n", b)
	var wf string
	for _, tl := range h.Tools(host.Query{}) {
		if strings.Contains(tl.ToolID, "fingerprint") {
			wf = tl.ToolID
		}
	}
	if wf == "" {
		t.Fatal("no fingerprint workflow")
	}
	asked := answer(t, b, approval.Deny, 0)
	env := h.Call(context.Background(), wf, json.RawMessage(`{"text":"hello"}`))
	if env.Error == nil {
		t.Fatal("the workflow ran although its inner call was denied")
	}
	if req := <-asked; req.Tool != "hash:digest" {
		t.Fatalf("asked about %s, want hash:digest", req.Tool)
	}
}

// TestApproveRemembered: "allow" for N minutes lets the same tool with
// the same matched conditions run without asking; another condition asks.
func TestApproveRemembered(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	b, _ := approval.NewBroker(approval.Options{Now: clock})
	h := approveHost(t, "  - tools: [\"core:echo\"]\n    when: {args: {path: \"secrets/**\"}}\n  - tools: [\"core:echo\"]\n", b)
	asked := answer(t, b, approval.Allow, 5)
	if env := h.Call(context.Background(), "core:echo", json.RawMessage(`{"path":"secrets/a"}`)); env.Error != nil {
		t.Fatal(env.Error)
	}
	<-asked
	// Same tool, same rule and conditions, other arguments: no question.
	if env := h.Call(context.Background(), "core:echo", json.RawMessage(`{"path":"secrets/b"}`)); env.Error != nil {
		t.Fatal(env.Error)
	}
	// The other rule (no args condition) was not allowed: it asks.
	asked = answer(t, b, approval.Deny, 0)
	if env := h.Call(context.Background(), "core:echo", json.RawMessage(`{"path":"public"}`)); env.Error == nil {
		t.Fatal("a call of another rule ran under the remembered allow")
	}
	<-asked
}

// TestApproveRedacted: the request shows the arguments with the values of
// the granted host variables redacted, and its grant summary names them.
func TestApproveRedacted(t *testing.T) {
	const secret = "s3cr3t-approval-value-42"
	type in struct {
		Note string `json:"note"`
	}
	tool := host.Func(host.FuncSpec{ID: "app:note", Description: "Takes a note.", SecurityContext: &manifest.SecurityContext{Env: []string{"APPROVAL_SECRET"}}},
		func(context.Context, in) (map[string]any, error) { return map[string]any{"ok": true}, nil })
	p := hosttest.Policy(t, "env: [APPROVAL_SECRET]\napprove:\n  - tools: [\"app:note\"]\n")
	b, _ := approval.NewBroker(approval.Options{})
	h, err := host.New(context.Background(), host.Options{Policy: p, CacheDir: hosttest.CacheDir(t), Tools: []host.Tool{tool}, Approvals: b, Tenant: "acme",
		LookupEnv: func(k string) (string, bool) { return secret, k == "APPROVAL_SECRET" }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	asked := answer(t, b, approval.AllowOnce, 0)
	if env := h.Call(context.Background(), "app:note", json.RawMessage(`{"note":"the key is `+secret+`"}`)); env.Error != nil {
		t.Fatal(env.Error)
	}
	req := <-asked
	if strings.Contains(string(req.Arguments), secret) || !strings.Contains(string(req.Arguments), "the key is") {
		t.Errorf("arguments shown: %s", req.Arguments)
	}
	if strings.Join(req.Grant.Env, ",") != "APPROVAL_SECRET" {
		t.Errorf("grant summary: %+v", req.Grant)
	}
	if req.ArgumentsDigest != approval.Digest([]byte(`{"note":"the key is `+secret+`"}`)) {
		t.Errorf("the digest is not the real arguments': %s", req.ArgumentsDigest)
	}
}

// receipts keeps the receipts a host hands it.
type receipts struct {
	mu  sync.Mutex
	got []*receipt.Receipt
}

func (r *receipts) Record(_ context.Context, rc *receipt.Receipt) error {
	r.mu.Lock()
	r.got = append(r.got, rc)
	r.mu.Unlock()
	return nil
}

// TestApproveReceipt: the call's receipt references the decision (id,
// decision, who, when); a reused allow is "auto".
func TestApproveReceipt(t *testing.T) {
	sink := &receipts{}
	b, _ := approval.NewBroker(approval.Options{})
	p := hosttest.Policy(t, "approve:\n  - tools: [\"core:echo\"]\n")
	h, err := host.New(context.Background(), host.Options{Dirs: []string{hosttest.Toolpacks(t)}, Policy: p, CacheDir: hosttest.CacheDir(t), Tenant: "acme", Approvals: b, Receipts: sink})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	asked := answer(t, b, approval.Allow, 5)
	if env := h.Call(context.Background(), "core:echo", json.RawMessage(`{"a":1}`)); env.Error != nil {
		t.Fatal(env.Error)
	}
	<-asked
	if env := h.Call(context.Background(), "core:echo", json.RawMessage(`{"a":2}`)); env.Error != nil { // the remembered allow
		t.Fatal(env.Error)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.got) < 2 {
		t.Fatalf("%d receipts", len(sink.got))
	}
	first, second := sink.got[0].Approval, sink.got[1].Approval
	if first == nil || first.Decision != "allow" || first.Subject != "acme/alice" || first.Tenant != "acme" || first.ID == "" || first.At == 0 {
		t.Errorf("first receipt's approval: %+v", first)
	}
	if second == nil || second.Decision != "auto" || second.ID != first.ID {
		t.Errorf("reused allow's approval: %+v", second)
	}
}
