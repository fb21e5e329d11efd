package approval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/policy"
)

// clock is a settable clock for the broker.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func request(tenant, tool, args string) approval.Request {
	return approval.Request{Tenant: tenant, Tool: tool, Arguments: json.RawMessage(args), ArgumentsDigest: approval.Digest([]byte(args))}
}

var anyMatch = approval.Match{Rule: 0, Risks: []string{}, Timeout: time.Hour}

// waitPending waits until the tenant has n pending requests.
func waitPending(t *testing.T, b *approval.Broker, tenant string, n int) []approval.Request {
	t.Helper()
	for {
		if p := b.Pending(tenant); len(p) >= n {
			return p
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRulesMatch(t *testing.T) {
	mustHost := func(s string) policy.HostRule {
		r, err := policy.ParseHostRule(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	writeGrant := &policy.Grant{Write: []policy.PathRule{{Root: policy.RootWorkspace, Pattern: "out/**"}}}
	tmpOnly := &policy.Grant{Write: []policy.PathRule{{Root: policy.RootTmp, Pattern: "**"}}}
	netGrant := &policy.Grant{Hosts: []policy.HostRule{mustHost("api.example.com")}}
	all := &policy.Grant{Write: writeGrant.Write, Hosts: netGrant.Hosts}
	w := func(wh policy.ApproveWhen) []policy.ApproveRule {
		return []policy.ApproveRule{{Tools: []string{"fs:*", "mcp:github.*"}, When: &wh}}
	}
	cases := []struct {
		name  string
		rules []policy.ApproveRule
		call  approval.Call
		want  bool
		risks string
	}{
		{"tool glob", []policy.ApproveRule{{Tools: []string{"mcp:github.*"}}}, approval.Call{Tool: "mcp:github.create_issue"}, true, ""},
		{"other tool", []policy.ApproveRule{{Tools: []string{"mcp:github.*"}}}, approval.Call{Tool: "mcp:gitlab.x"}, false, ""},
		{"write held", w(policy.ApproveWhen{Write: true}), approval.Call{Tool: "fs:write", Grant: writeGrant}, true, "write"},
		{"write: $TMP only", w(policy.ApproveWhen{Write: true}), approval.Call{Tool: "fs:write", Grant: tmpOnly}, false, ""},
		{"hosts held", w(policy.ApproveWhen{Hosts: []string{"*.example.com"}}), approval.Call{Tool: "fs:x", Grant: netGrant}, true, "hosts:*.example.com"},
		{"hosts: none granted", w(policy.ApproveWhen{Hosts: []string{"*"}}), approval.Call{Tool: "fs:x", Grant: writeGrant}, false, ""},
		{"credentials held", w(policy.ApproveWhen{Credentials: true}), approval.Call{Tool: "fs:x", Credentials: []string{"github"}}, true, "credentials"},
		{"credentials: none", w(policy.ApproveWhen{Credentials: true}), approval.Call{Tool: "fs:x"}, false, ""},
		{"args key", w(policy.ApproveWhen{Args: map[string]string{"path": "secrets/**"}}), approval.Call{Tool: "fs:x", Args: []byte(`{"path":"secrets/k"}`)}, true, "args:path"},
		{"args array element", w(policy.ApproveWhen{Args: map[string]string{"paths": "secrets/**"}}), approval.Call{Tool: "fs:x", Args: []byte(`{"paths":["a","secrets/k"]}`)}, true, "args:paths"},
		{"args pointer", w(policy.ApproveWhen{Args: map[string]string{"/o/0/t": "prod"}}), approval.Call{Tool: "fs:x", Args: []byte(`{"o":[{"t":"prod"}]}`)}, true, "args:/o/0/t"},
		{"args number", w(policy.ApproveWhen{Args: map[string]string{"n": "4*"}}), approval.Call{Tool: "fs:x", Args: []byte(`{"n":42}`)}, true, "args:n"},
		{"args missing", w(policy.ApproveWhen{Args: map[string]string{"path": "*"}}), approval.Call{Tool: "fs:x", Args: []byte(`{}`)}, false, ""},
		{"args object never", w(policy.ApproveWhen{Args: map[string]string{"path": "*"}}), approval.Call{Tool: "fs:x", Args: []byte(`{"path":{"a":1}}`)}, false, ""},
		{"all ANDed", w(policy.ApproveWhen{Write: true, Hosts: []string{"*.example.com"}}), approval.Call{Tool: "fs:x", Grant: all}, true, "write,hosts:*.example.com"},
		{"AND: one fails", w(policy.ApproveWhen{Write: true, Hosts: []string{"*.example.com"}}), approval.Call{Tool: "fs:x", Grant: writeGrant}, false, ""},
		{"first rule wins", []policy.ApproveRule{{Tools: []string{"fs:read"}}, {Tools: []string{"fs:*"}, When: &policy.ApproveWhen{Write: true}}}, approval.Call{Tool: "fs:write", Grant: writeGrant}, true, "write"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := approval.NewRules(tc.rules)
			m, ok := rs.Match(tc.call)
			if ok != tc.want {
				t.Fatalf("matched = %v, want %v", ok, tc.want)
			}
			if ok && strings.Join(m.Risks, ",") != tc.risks {
				t.Errorf("risks = %v, want %s", m.Risks, tc.risks)
			}
		})
	}
	if approval.NewRules(nil) != nil {
		t.Error("no rules must be nil")
	}
}

func TestDecideTwiceKeepsFirst(t *testing.T) {
	b, _ := approval.NewBroker(approval.Options{})
	done := make(chan error, 1)
	go func() {
		_, err := b.Ask(context.Background(), request("acme", "fs:write", `{}`), anyMatch)
		done <- err
	}()
	id := waitPending(t, b, "acme", 1)[0].ID
	rec, first, err := b.Decide("acme", id, approval.Deny, 0, "acme/alice")
	if err != nil || !first || rec.Decision != approval.Deny {
		t.Fatalf("first answer: %+v %v %v", rec, first, err)
	}
	rec, first, err = b.Decide("acme", id, approval.AllowOnce, 0, "acme/bob")
	if err != nil || first || rec.Decision != approval.Deny || rec.By != "acme/alice" {
		t.Fatalf("second answer: %+v first=%v err=%v, want alice's deny", rec, first, err)
	}
	if err := <-done; !errors.Is(err, abi.ErrPermissionDenied) {
		t.Fatalf("Ask = %v, want PERMISSION_DENIED", err)
	}
}

func TestDecideOtherTenantNotFound(t *testing.T) {
	b, _ := approval.NewBroker(approval.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = b.Ask(ctx, request("acme", "fs:write", `{}`), anyMatch) }()
	id := waitPending(t, b, "acme", 1)[0].ID
	for _, tc := range []struct{ tenant, id string }{{"globex", id}, {"acme", "apr_unknown"}} {
		if _, _, err := b.Decide(tc.tenant, tc.id, approval.AllowOnce, 0, "x"); !errors.Is(err, approval.ErrNotFound) {
			t.Errorf("Decide(%s, %s) = %v, want ErrNotFound", tc.tenant, tc.id, err)
		}
		if _, _, err := b.Get(tc.tenant, tc.id); !errors.Is(err, approval.ErrNotFound) {
			t.Errorf("Get(%s, %s) = %v, want ErrNotFound", tc.tenant, tc.id, err)
		}
	}
	if len(b.Pending("globex")) != 0 || len(b.Pending("")) != 1 {
		t.Error("Pending leaks across tenants")
	}
}

func TestDecideValidation(t *testing.T) {
	b, _ := approval.NewBroker(approval.Options{MaxMinutes: 60})
	for _, tc := range []struct {
		d       approval.Decision
		minutes int
	}{{"maybe", 0}, {approval.Allow, 61}, {approval.Allow, -1}, {approval.AllowOnce, 5}, {approval.Deny, 1}} {
		if _, _, err := b.Decide("acme", "apr_x", tc.d, tc.minutes, "x"); err == nil || errors.Is(err, approval.ErrNotFound) {
			t.Errorf("Decide(%s, %d) = %v, want a validation error", tc.d, tc.minutes, err)
		}
	}
}

func TestPendingBoundFlood(t *testing.T) {
	b, _ := approval.NewBroker(approval.Options{MaxPending: 6, MaxPendingPerTenant: 4})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	ask := func(tenant string, n int) {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.Ask(ctx, request(tenant, "fs:write", `{}`), anyMatch)
				errs <- err
			}()
		}
	}
	ask("acme", 4)
	waitPending(t, b, "acme", 4)
	ask("acme", 10) // over the tenant's bound: refused at once
	for range 10 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "already has 4 calls waiting") {
			t.Fatalf("flood answer = %v, want the tenant's bound", err)
		}
	}
	ask("globex", 2)
	waitPending(t, b, "", 6)
	ask("initech", 3) // over the total bound
	for range 3 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "6 calls already wait") {
			t.Fatalf("flood answer = %v, want the total bound", err)
		}
	}
	if n := len(b.Pending("")); n != 6 {
		t.Fatalf("%d pending, want 6", n)
	}
	cancel()
	wg.Wait()
	if n := len(b.Pending("")); n != 0 {
		t.Fatalf("%d pending after every caller gave up", n)
	}
}

func TestAllowRememberedAndExpires(t *testing.T) {
	c := &clock{now: time.Unix(1_800_000_000, 0)}
	b, _ := approval.NewBroker(approval.Options{Now: c.Now})
	m := approval.Match{Rule: 1, Risks: []string{"write"}, Timeout: time.Hour}
	ask := func(tenant, tool string, m approval.Match) chan approval.Record {
		out := make(chan approval.Record, 1)
		go func() {
			r, _ := b.Ask(context.Background(), request(tenant, tool, `{}`), m)
			out <- r
		}()
		return out
	}
	first := ask("acme", "fs:write", m)
	id := waitPending(t, b, "acme", 1)[0].ID
	if _, _, err := b.Decide("acme", id, approval.Allow, 10, "acme/alice"); err != nil {
		t.Fatal(err)
	}
	<-first
	// Reused: same tenant, tool, rule and conditions.
	if r := <-ask("acme", "fs:write", m); !r.Reused || r.ID != id || r.By != "acme/alice" {
		t.Fatalf("second call: %+v, want the remembered allow", r)
	}
	// Not reused: another tenant, another tool, other conditions.
	for _, c := range []struct {
		tenant, tool string
		m            approval.Match
	}{
		{"globex", "fs:write", m},
		{"acme", "fs:delete", m},
		{"acme", "fs:write", approval.Match{Rule: 1, Risks: []string{"write", "credentials"}, Timeout: time.Hour}},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error, 1)
		go func() { _, err := b.Ask(ctx, request(c.tenant, c.tool, `{}`), c.m); got <- err }()
		waitPending(t, b, c.tenant, 1)
		cancel()
		<-got
	}
	// Expired after 10 minutes: asks again.
	c.add(10*time.Minute + time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { _, err := b.Ask(ctx, request("acme", "fs:write", `{}`), m); got <- err }()
	waitPending(t, b, "acme", 1)
	cancel()
	<-got
}

func TestRememberedBounded(t *testing.T) {
	b, _ := approval.NewBroker(approval.Options{MaxRemembered: 8})
	for i := range 20 {
		tool := "fs:t" + string(rune('a'+i))
		go func() { _, _ = b.Ask(context.Background(), request("acme", tool, `{}`), anyMatch) }()
		id := waitPending(t, b, "acme", 1)[0].ID
		if _, _, err := b.Decide("acme", id, approval.Allow, 60, "a"); err != nil {
			t.Fatal(err)
		}
		for len(b.Pending("acme")) != 0 {
			time.Sleep(time.Millisecond)
		}
	}
	// A tenant keeps at most a quarter (2): the first tools ask again.
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { _, err := b.Ask(ctx, request("acme", "fs:ta", `{}`), anyMatch); got <- err }()
	waitPending(t, b, "acme", 1)
	cancel()
	<-got
	if r, err := b.Ask(context.Background(), request("acme", "fs:tt", `{}`), anyMatch); err != nil || !r.Reused {
		t.Fatalf("the latest allow was forgotten: %+v %v", r, err)
	}
}

func TestStateAnswers(t *testing.T) {
	c := &clock{now: time.Unix(1_800_000_000, 0)}
	b, _ := approval.NewBroker(approval.Options{Now: c.Now})
	other, _ := approval.NewBroker(approval.Options{})
	m := approval.Match{Rule: 0, Risks: []string{}, Timeout: time.Minute}
	req := request("acme", "fs:write", `{"path":"a"}`)
	need := func() approval.NeedsApproval {
		ctx, d := approval.NoWait(context.Background())
		if _, err := b.Ask(ctx, req, m); err == nil {
			t.Fatal("NoWait ran the call")
		}
		n, ok := d.Needed()
		if !ok {
			t.Fatal("no NeedsApproval")
		}
		if len(b.Pending("")) != 0 {
			t.Fatal("NoWait left a pending request")
		}
		return n
	}
	answer := func(r approval.Request, a approval.Answer) (approval.Record, error) {
		return b.Ask(approval.WithAnswer(context.Background(), a), r, m)
	}
	n := need()
	forged := n.State[:len(n.State)-2] + "AA"
	foreign := func() string {
		ctx, d := approval.NoWait(context.Background())
		_, _ = other.Ask(ctx, req, m)
		x, _ := d.Needed()
		return x.State
	}()
	for _, tc := range []struct {
		name string
		req  approval.Request
		a    approval.Answer
		want string
	}{
		{"forged signature", req, approval.Answer{State: forged, Decision: approval.AllowOnce}, "not a state this host issued"},
		{"another broker's", req, approval.Answer{State: foreign, Decision: approval.AllowOnce}, "not a state this host issued"},
		{"garbage", req, approval.Answer{State: "x.y", Decision: approval.AllowOnce}, "not a state"},
		{"other arguments", request("acme", "fs:write", `{"path":"b"}`), approval.Answer{State: n.State, Decision: approval.AllowOnce}, "another call"},
		{"other tenant", request("globex", "fs:write", `{"path":"a"}`), approval.Answer{State: n.State, Decision: approval.AllowOnce}, "another call"},
		{"other tool", request("acme", "fs:delete", `{"path":"a"}`), approval.Answer{State: n.State, Decision: approval.AllowOnce}, "another call"},
		{"no decision", req, approval.Answer{State: n.State, Decision: "yes"}, "holds no decision"},
	} {
		if _, err := answer(tc.req, tc.a); err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, abi.ErrPermissionDenied) {
			t.Errorf("%s: %v, want PERMISSION_DENIED with %q", tc.name, err, tc.want)
		}
	}
	rec, err := answer(req, approval.Answer{State: n.State, Decision: approval.AllowOnce, By: "mcp:acme/alice"})
	if err != nil || rec.Decision != approval.AllowOnce || rec.By != "mcp:acme/alice" || rec.ID != n.Request.ID {
		t.Fatalf("answer: %+v %v", rec, err)
	}
	if _, err := answer(req, approval.Answer{State: n.State, Decision: approval.AllowOnce}); err == nil || !strings.Contains(err.Error(), "used already") {
		t.Fatalf("replayed answer: %v, want refused", err)
	}
	// A denial through the round trip.
	n = need()
	if _, err := answer(req, approval.Answer{State: n.State, Decision: approval.Deny, By: "x"}); !errors.Is(err, abi.ErrPermissionDenied) {
		t.Fatalf("deny: %v", err)
	}
	// Expired.
	n = need()
	c.add(time.Minute)
	if _, err := answer(req, approval.Answer{State: n.State, Decision: approval.AllowOnce}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired state: %v", err)
	}
	if r, err := b.Open(n.State); err != nil || r.Tool != "fs:write" || r.ArgumentsDigest != req.ArgumentsDigest {
		t.Fatalf("Open: %+v %v", r, err)
	}
}

func TestSubscriberDroppedWhenBehind(t *testing.T) {
	b, _ := approval.NewBroker(approval.Options{MaxPendingPerTenant: 100})
	events, stop, err := b.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 70 { // more than the buffer, nobody reading
		go func() { _, _ = b.Ask(ctx, request("acme", "fs:write", `{}`), anyMatch) }()
	}
	waitPending(t, b, "acme", 70)
	n := 0
	for range events {
		n++
	}
	if n == 0 || n > 64 {
		t.Fatalf("read %d events before the channel closed", n)
	}
}

func TestNewBrokerKey(t *testing.T) {
	if _, err := approval.NewBroker(approval.Options{Key: []byte("short")}); err == nil {
		t.Fatal("a short key was accepted")
	}
}

// TestStateSharedKey: brokers given one Key (serve instances sharing
// --approval-key) take each other's states, so a stateless retry may
// reach any of them; a broker with another key refuses them.
func TestStateSharedKey(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	a, err := approval.NewBroker(approval.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := approval.NewBroker(approval.Options{Key: key})
	c, _ := approval.NewBroker(approval.Options{Key: bytes.Repeat([]byte{8}, 32)})
	m := approval.Match{Rule: 0, Risks: []string{}, Timeout: time.Minute}
	req := request("acme", "fs:write", `{"path":"a"}`)
	ctx, d := approval.NoWait(context.Background())
	if _, err := a.Ask(ctx, req, m); err == nil {
		t.Fatal("NoWait ran the call")
	}
	n, ok := d.Needed()
	if !ok {
		t.Fatal("no NeedsApproval")
	}
	ans := approval.Answer{State: n.State, Decision: approval.AllowOnce, By: "mcp:acme/alice"}
	if _, err := c.Ask(approval.WithAnswer(context.Background(), ans), req, m); err == nil || !strings.Contains(err.Error(), "not a state this host issued") {
		t.Fatalf("a broker with another key: %v, want refused", err)
	}
	rec, err := b.Ask(approval.WithAnswer(context.Background(), ans), req, m)
	if err != nil || rec.Decision != approval.AllowOnce || rec.ID != n.Request.ID {
		t.Fatalf("the other broker with the key: %+v %v", rec, err)
	}
	if _, err := approval.NewBroker(approval.Options{Key: []byte("short")}); err == nil {
		t.Fatal("a 5-byte key was taken")
	}
}
