package llm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/llm"
)

// TestRetryAfter pins that a 429 naming Retry-After is retried no sooner
// than asked (the back-off base here is 1 ns), and that a 400 is not
// retried and its error never carries the key.
func TestRetryAfter(t *testing.T) {
	const key = "sk-retry-secret"
	t.Setenv("AGENTHOST_TEST_RETRY", key)
	var n atomic.Int32
	var first, second time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			first = time.Now()
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case 2:
			second = time.Now()
			w.Write([]byte(`{"content":[{"type":"text","text":"ok"}]}`))
		default:
			http.Error(w, "bad request echoing "+key, http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	p, err := llm.NewAnthropic(llm.AnthropicConfig{BaseURL: srv.URL, APIKeyEnv: "AGENTHOST_TEST_RETRY", RetryBase: 1})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil || resp.Content != "ok" {
		t.Fatalf("%+v %v", resp, err)
	}
	if gap := second.Sub(first); gap < 900*time.Millisecond {
		t.Fatalf("retried after %v; the server asked for 1s", gap)
	}
	_, err = p.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err == nil || n.Load() != 3 || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Fatalf("400: %v after %d requests", err, n.Load())
	}
}
