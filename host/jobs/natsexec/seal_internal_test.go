package natsexec

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func copyMsg(m *nats.Msg) *nats.Msg {
	c := &nats.Msg{Subject: m.Subject, Data: append([]byte(nil), m.Data...), Header: nats.Header{}}
	for k, v := range m.Header {
		c.Header[k] = append([]string(nil), v...)
	}
	return c
}

// TestSeal: a call opens with the key it was sealed with; with another
// key, or altered (tenant, deadline, body, message ID), it does not; past
// its deadline it is expired; a result opens only for its own call.
func TestSeal(t *testing.T) {
	k := newKeys([]byte("0123456789abcdef0123456789abcdef"))
	other := newKeys([]byte("fedcba9876543210fedcba9876543210"))
	now := time.Now()
	c := &call{id: newToken(), tenant: "acme", tool: "app:x", issued: now, deadline: now.Add(60e9), args: []byte(`{"a":1}`)}
	token := newToken()
	m := k.sealCall(c, token)
	got, reason := k.openCall(m.Header, m.Data, now)
	if reason != "" || got.tenant != "acme" || got.tool != "app:x" || string(got.args) != `{"a":1}` || got.reply != resultSubject+token {
		t.Fatalf("open: %q %+v", reason, got)
	}
	if _, reason := other.openCall(m.Header, m.Data, now); reason != ReasonBadSignature {
		t.Fatalf("another key: %q", reason)
	}
	for name, alter := range map[string]func(h map[string][]string, body []byte){
		"tenant":   func(h map[string][]string, _ []byte) { h[headerTenant] = []string{"beta"} },
		"deadline": func(h map[string][]string, _ []byte) { h[headerDeadline] = []string{"99999999999999"} },
		"body":     func(_ map[string][]string, b []byte) { b[len(b)-1] ^= 1 },
	} {
		mm := copyMsg(m)
		alter(mm.Header, mm.Data)
		if _, reason := k.openCall(mm.Header, mm.Data, now); reason != ReasonBadSignature {
			t.Errorf("altered %s: %q", name, reason)
		}
	}
	mm := copyMsg(m)
	mm.Header.Set("Nats-Msg-Id", newToken())
	if _, reason := k.openCall(mm.Header, mm.Data, now); reason != ReasonBadSignature {
		t.Errorf("another message ID: %q", reason)
	}
	if _, reason := k.openCall(m.Header, m.Data, now.Add(61e9)); reason != ReasonExpired {
		t.Errorf("past the deadline: %q", reason)
	}
	if strings.Contains(string(m.Data), `"a":1`) {
		t.Error("the arguments are readable")
	}
	res := k.sealResult(got, []byte(`{"status":"success"}`))
	if b, reason := k.openResult(c, res); reason != "" || string(b) != `{"status":"success"}` {
		t.Fatalf("result: %q %s", reason, b)
	}
	c2 := &call{id: newToken(), tenant: "acme", tool: "app:x", issued: now, deadline: now.Add(60e9)}
	k.sealCall(c2, newToken())
	if _, reason := k.openResult(c2, res); reason != ReasonBadSignature {
		t.Fatalf("another call's result: %q", reason)
	}
}

// BenchmarkSeal is the queue's cryptography for one call of core:echo
// (small arguments and result): serve seals the call, a worker opens it
// and seals the result, serve opens the result.
func BenchmarkSeal(b *testing.B) {
	k := newKeys([]byte("0123456789abcdef0123456789abcdef"))
	args := []byte(`{"a":1}`)
	env := []byte(`{"toolId":"core:echo","status":"success","output":{"a":1},"durationMs":0.05}`)
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now()
		c := &call{id: newToken(), tenant: "acme", tool: "core:echo", issued: now, deadline: now.Add(time.Minute), args: args}
		m := k.sealCall(c, newToken())
		got, reason := k.openCall(m.Header, m.Data, now)
		if reason != "" {
			b.Fatal(reason)
		}
		r := k.sealResult(got, env)
		if _, reason := k.openResult(c, r); reason != "" {
			b.Fatal(reason)
		}
	}
}
