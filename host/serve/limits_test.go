package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/serve"
)

// TestAsyncCallsHoldTheLimit makes 60 asynchronous calls of a tool that
// waits, with a tenant limit of 16 and a queue of 44: every call is
// accepted (16 run, 44 queue), the 61st is 429 with Retry-After, a
// synchronous call is refused the same way, and no more than 16 calls
// ever run at once (asynchronous calls used to escape the limit: 60 ran
// at once). Then all 60 end with the tool's answer.
func TestAsyncCallsHoldTheLimit(t *testing.T) {
	fixtureMaxConcurrent, fixtureMaxQueued = 16, 44
	defer func() { fixtureMaxConcurrent, fixtureMaxQueued = 2, 0 }()
	var inFlight, high atomic.Int64
	started, open := make(chan struct{}, 64), make(chan struct{})
	type in struct {
		N int `json:"n"`
	}
	wait := host.Func(host.FuncSpec{ID: "app:wait", Description: "Waits for the test."}, func(ctx context.Context, a in) (map[string]int, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for h := high.Load(); n > h && !high.CompareAndSwap(h, n); h = high.Load() {
		}
		started <- struct{}{}
		select {
		case <-open:
			return map[string]int{"n": a.N}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	f := newFixture(t, filepath.Join(t.TempDir(), "db"), wait)
	var ids []string
	for i := range 60 {
		status, body := f.do(t, "POST", "/v1/tools/app:wait/call?async=true", "acme-token", "application/json", fmt.Sprintf(`{"n":%d}`, i))
		if status != 202 {
			t.Fatalf("call %d: %d %s", i, status, body)
		}
		var ref serve.JobRef
		if err := json.Unmarshal([]byte(body), &ref); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
	}
	for range 16 {
		<-started
	}
	for _, path := range []string{"/v1/tools/app:wait/call?async=true", "/v1/tools/app:wait/call"} {
		req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(`{"n":61}`))
		req.Header.Set("Authorization", "Bearer acme-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s past the limits: %d, Retry-After %q", path, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	close(open)
	for i, id := range ids {
		status, body := f.do(t, "GET", "/v1/jobs/"+id+"/events", "acme-token", "", "")
		if status != 200 || !strings.Contains(body, "event: result") || !strings.Contains(body, fmt.Sprintf(`"output":{"n":%d}`, i)) {
			t.Fatalf("job %d: %d %s", i, status, body)
		}
	}
	if h := high.Load(); h > 16 {
		t.Fatalf("%d calls ran at once; the tenant's limit is 16", h)
	}
}

// TestJobAnswers pins the bad-input answers of /v1/jobs: a retried start
// with the same Idempotency-Key is the same job, the key with other
// arguments 409; another tenant's job ID is 404 exactly as an unknown
// one, for every job endpoint; a cancel of an ended job answers its one
// final state; the list pages the tenant's jobs only.
func TestJobAnswers(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "db"))
	start := func(key, body string) (int, string) {
		req, _ := http.NewRequest("POST", f.srv.URL+"/v1/tools/core:echo/call?async=true", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer acme-token")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, jsonBody(t, resp))
		return resp.StatusCode, b.String()
	}
	s1, first := start("k-1", `{"a":1}`)
	s2, again := start("k-1", `{ "a": 1 }`)
	if s1 != 202 || s2 != 202 || jobIDOf(t, first) != jobIDOf(t, again) {
		t.Fatalf("a retried start: %d %s / %d %s", s1, first, s2, again)
	}
	if s, body := start("k-1", `{"a":2}`); s != 409 || !strings.Contains(body, "CONFLICT") {
		t.Fatalf("the key with other arguments: %d %s", s, body)
	}
	id := jobIDOf(t, first)
	if s, body := f.do(t, "GET", "/v1/jobs/"+id+"/events", "acme-token", "", ""); s != 200 || !strings.Contains(body, "event: result") {
		t.Fatalf("events: %d %s", s, body)
	}
	for _, c := range []struct{ method, suffix string }{{"GET", ""}, {"DELETE", ""}, {"GET", "/events"}} {
		s1, unknown := f.do(t, c.method, "/v1/jobs/0123456789abcdef0123456789abcdef"+c.suffix, "beta-token", "", "")
		s2, other := f.do(t, c.method, "/v1/jobs/"+id+c.suffix, "beta-token", "", "")
		if s1 != 404 || s2 != 404 || unknown != other {
			t.Errorf("%s %s: unknown %d %s, another tenant's %d %s", c.method, c.suffix, s1, unknown, s2, other)
		}
	}
	_, before := f.do(t, "GET", "/v1/jobs/"+id, "acme-token", "", "")
	if s, after := f.do(t, "DELETE", "/v1/jobs/"+id, "acme-token", "", ""); s != 200 || after != before || !strings.Contains(after, `"status":"done"`) {
		t.Fatalf("a cancel of an ended job: %d %s, before %s", s, after, before)
	}
	if s, body := f.do(t, "GET", "/v1/jobs", "acme-token", "", ""); s != 200 || !strings.Contains(body, id) {
		t.Fatalf("acme's list: %d %s", s, body)
	}
	if s, body := f.do(t, "GET", "/v1/jobs", "beta-token", "", ""); s != 200 || strings.Contains(body, id) {
		t.Fatalf("beta's list: %d %s", s, body)
	}
}

func jsonBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	var v json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return string(v)
}

func jobIDOf(t *testing.T, body string) string {
	t.Helper()
	var ref serve.JobRef
	if err := json.Unmarshal([]byte(body), &ref); err != nil || ref.ID == "" {
		t.Fatalf("no job in %s", body)
	}
	return ref.ID
}
