package llm_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/llm"
)

// newProvider builds provider p against base with a key, streaming or
// not, with the given retries and back-off.
func newProvider(t *testing.T, p, base string, stream bool, retries int, backoff, timeout time.Duration) llm.Provider {
	t.Helper()
	t.Setenv("AGENTHOST_ERR_KEY", "sk-err-key-0123")
	var prov llm.Provider
	var err error
	switch p {
	case "openai":
		prov, err = llm.NewOpenAI(llm.OpenAIConfig{BaseURL: base, APIKeyEnv: "AGENTHOST_ERR_KEY", Stream: stream, MaxRetries: retries, RetryBase: backoff, Timeout: timeout})
	case "anthropic":
		prov, err = llm.NewAnthropic(llm.AnthropicConfig{BaseURL: base, APIKeyEnv: "AGENTHOST_ERR_KEY", Stream: stream, MaxRetries: retries, RetryBase: backoff, Timeout: timeout})
	case "gemini":
		prov, err = llm.NewGemini(llm.GeminiConfig{BaseURL: base, APIKeyEnv: "AGENTHOST_ERR_KEY", Stream: stream, MaxRetries: retries, RetryBase: backoff, Timeout: timeout})
	}
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

var twoTools = []llm.ToolDef{
	{Name: "a__tool", Parameters: []byte(`{"type":"object"}`)},
	{Name: "b__tool", Parameters: []byte(`{"type":"object"}`)},
}

// TestRefusals pins that a provider's 400, in its documented error
// shape, comes back as an *llm.Error with the provider's own message and
// the tool whose definition it pointed at (by index or by name), and is
// not retried.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		provider, body, msg string
	}{
		{"openai", `{"error":{"message":"Invalid schema for function 'b__tool': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'.","type":"invalid_request_error","param":"tools[1].function.parameters","code":"invalid_function_parameters"}}`,
			"Invalid schema for function 'b__tool'"},
		{"openai", `{"error":{"message":"Invalid schema for function 'b__tool': In context=(), 'additionalProperties' is required to be supplied and to be false.","type":"invalid_request_error","param":null,"code":"invalid_function_parameters"}}`,
			"'additionalProperties' is required"},
		{"anthropic", `{"type":"error","error":{"type":"invalid_request_error","message":"tools.1.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"}}`,
			"input_schema does not support oneOf"},
		{"gemini", `{"error":{"code":400,"message":"* GenerateContentRequest.tools[0].function_declarations[1].parameters.properties: should be non-empty for OBJECT type\n","status":"INVALID_ARGUMENT"}}`,
			"should be non-empty for OBJECT type"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			p := newProvider(t, tc.provider, srv.URL, false, 3, time.Hour, 0)
			_, err := p.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Tools: twoTools})
			var pe *llm.Error
			if !errors.As(err, &pe) || pe.Provider != tc.provider || pe.Status != 400 || pe.Tool != "b__tool" || !strings.Contains(pe.Message, tc.msg) {
				t.Fatalf("%#v (%v)", pe, err)
			}
			if s := err.Error(); !strings.Contains(s, tc.provider) || !strings.Contains(s, "tool b__tool") || !strings.Contains(s, tc.msg) {
				t.Fatalf("error text %q", s)
			}
			if n.Load() != 1 {
				t.Fatalf("a 400 was retried: %d requests", n.Load())
			}
		})
	}
}

// TestRetryWaits pins that a 429 is retried after the wait the provider
// names, in each of the forms they use. The back-off is an hour and the
// test's context ends long before: only a retry at the named wait passes.
func TestRetryWaits(t *testing.T) {
	ok := map[string]string{
		"openai":    `{"choices":[{"message":{"role":"assistant","content":"ok"}}]}`,
		"anthropic": `{"content":[{"type":"text","text":"ok"}]}`,
		"gemini":    `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`,
	}
	for _, tc := range []struct {
		name, provider string
		header         map[string]string
		body           string
	}{
		{"Retry-After seconds", "anthropic", map[string]string{"Retry-After": "1"}, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`},
		{"retry-after-ms", "openai", map[string]string{"retry-after-ms": "20"}, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`},
		{"Retry-After date", "openai", map[string]string{"Retry-After": "DATE"}, `{"error":{"message":"Rate limit reached"}}`},
		{"RetryInfo retryDelay", "gemini", nil, `{"error":{"code":429,"message":"You exceeded your current quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.02s"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					for k, v := range tc.header {
						if v == "DATE" {
							// Two seconds ahead when sent (the format
							// has whole seconds): a date already past
							// would fall back to the hour of back-off.
							v = time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
						}
						w.Header().Set(k, v)
					}
					w.WriteHeader(http.StatusTooManyRequests)
					io.WriteString(w, tc.body)
					return
				}
				io.WriteString(w, ok[tc.provider])
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p := newProvider(t, tc.provider, srv.URL, false, 2, time.Hour, 0)
			resp, err := p.Complete(ctx, llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			if err != nil || resp.Content != "ok" || n.Load() != 2 {
				t.Fatalf("%+v %v after %d requests", resp, err, n.Load())
			}
		})
	}
}

// TestMalformedStreams pins that a stream that breaks ends the turn with
// an error naming the provider, never a hang: an event that is not JSON,
// the provider's own error event, a stream cut before its end event, and
// a server that stops sending (the request timeout ends it).
func TestMalformedStreams(t *testing.T) {
	good := map[string]string{
		"openai":    "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
		"anthropic": "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"gemini":    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\"}]}}]}\n\n",
	}
	for _, tc := range []struct {
		name, provider, tail string
		stall, flood         bool
		want                 string
	}{
		{"openai not JSON", "openai", "data: {\"choices\": [\n\n", false, false, "malformed stream event"},
		{"openai error chunk", "openai", "data: {\"error\":{\"message\":\"The server had an error\"}}\n\n", false, false, "The server had an error"},
		{"openai cut", "openai", "", false, false, "ended before its final [DONE]"},
		{"openai stalls", "openai", "", true, false, "context deadline exceeded"},
		{"anthropic not JSON", "anthropic", "event: content_block_delta\ndata: {oops\n\n", false, false, "malformed stream event"},
		{"anthropic delta for no block", "anthropic", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":5,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n", false, false, "never started"},
		{"anthropic error event", "anthropic", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", false, false, "overloaded_error: Overloaded"},
		{"anthropic cut", "anthropic", "", false, false, "ended before its message_stop"},
		{"anthropic stalls", "anthropic", "", true, false, "context deadline exceeded"},
		{"gemini not JSON", "gemini", "data: [1,\n\n", false, false, "malformed stream event"},
		{"gemini cut", "gemini", "", false, false, "ended before a chunk with a finishReason"},
		{"gemini stalls", "gemini", "", true, false, "context deadline exceeded"},
		{"openai floods", "openai", "", false, true, "larger than"},
		{"anthropic floods", "anthropic", "", false, true, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, good[tc.provider]+tc.tail)
				w.(http.Flusher).Flush()
				for tc.flood && r.Context().Err() == nil {
					var chunk string
					if tc.provider == "anthropic" {
						chunk = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + strings.Repeat("a", 4000) + "\"}}\n\n"
					} else {
						chunk = "data: {\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("a", 4000) + "\"}}]}\n\n"
					}
					if _, err := io.WriteString(w, chunk); err != nil {
						return
					}
				}
				if tc.stall {
					select {
					case <-release:
					case <-r.Context().Done():
					}
				}
			}))
			defer srv.Close()
			defer close(release)
			timeout := time.Duration(0)
			if tc.stall {
				timeout = 200 * time.Millisecond
			}
			p := newProvider(t, tc.provider, srv.URL, true, -1, time.Hour, timeout)
			_, err := p.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			if err == nil || !strings.HasPrefix(err.Error(), tc.provider+":") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v", err)
			}
		})
	}
}
