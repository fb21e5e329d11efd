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

// TestRetryAfter pins that a 429 naming Retry-After is retried at the
// wait asked (the back-off base here is an hour, past the test's
// context), and that a 400 is not retried and its error never carries
// the key.
func TestRetryAfter(t *testing.T) {
	const key = "sk-retry-secret"
	t.Setenv("AGENTHOST_TEST_RETRY", key)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case 2:
			w.Write([]byte(`{"content":[{"type":"text","text":"ok"}]}`))
		default:
			http.Error(w, "bad request echoing "+key, http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	p, err := llm.NewAnthropic(llm.AnthropicConfig{BaseURL: srv.URL, APIKeyEnv: "AGENTHOST_TEST_RETRY", RetryBase: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := p.Complete(ctx, llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil || resp.Content != "ok" {
		t.Fatalf("%+v %v", resp, err)
	}
	_, err = p.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err == nil || n.Load() != 3 || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Fatalf("400: %v after %d requests", err, n.Load())
	}
}
