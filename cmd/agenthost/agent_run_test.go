package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunProviders drives `agenthost run` against loopback servers that
// speak each provider's wire format, and checks its usage errors.
func TestRunProviders(t *testing.T) {
	toolpacks, _ := filepath.Abs("../../toolpacks")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("AGENTHOST_TEST_KEY", "k-test")
	anthropic := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "k-test" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		if b, _ := io.ReadAll(r.Body); strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hello \"}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"streamed\"}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
			return
		}
		w.Write([]byte(`{"content":[{"type":"text","text":"hello from anthropic"}],"stop_reason":"end_turn"}`))
	}))
	defer anthropic.Close()
	gemini := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/models/m:generateContent" || r.Header.Get("x-goog-api-key") != "k-test" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		w.Write([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"hello from gemini"}]},"finishReason":"STOP"}]}`))
	}))
	defer gemini.Close()
	openai := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/chat/completions" || r.Header.Get("Authorization") != "" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hello \"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"streamed\"}}]}\n\ndata: [DONE]\n\n"))
	}))
	defer openai.Close()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
	}{
		{"anthropic", []string{"run", "--provider", "anthropic", "--base-url", anthropic.URL, "--api-key-env", "AGENTHOST_TEST_KEY", "--model", "m", "hi"}, 0, "hello from anthropic\n"},
		{"openai stream without key", []string{"run", "--base-url", openai.URL, "--api-key-env", "-", "--stream", "--model", "m", "--mode", "router", "hi"}, 0, "hello streamed\n"},
		{"unknown provider", []string{"run", "--provider", "bard", "hi"}, 2, ""},
		{"no model", []string{"run", "--provider", "anthropic", "hi"}, 2, ""},
		{"anthropic key unset", []string{"run", "--provider", "anthropic", "--api-key-env", "AGENTHOST_TEST_UNSET", "--model", "m", "hi"}, 2, ""},
		{"anthropic stream", []string{"run", "--provider", "anthropic", "--base-url", anthropic.URL, "--api-key-env", "AGENTHOST_TEST_KEY", "--stream", "--model", "m", "hi"}, 0, "hello streamed\n"},
		{"gemini", []string{"run", "--provider", "gemini", "--base-url", gemini.URL, "--api-key-env", "AGENTHOST_TEST_KEY", "--model", "m", "hi"}, 0, "hello from gemini\n"},
		{"gemini without key", []string{"run", "--provider", "gemini", "--api-key-env", "-", "--model", "m", "hi"}, 2, ""},
		{"bad mode", []string{"run", "--base-url", openai.URL, "--api-key-env", "-", "--model", "m", "--mode", "chaos", "hi"}, 2, ""},
		{"replay without file", []string{"run", "--provider", "replay", "hi"}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--dir", toolpacks, "--log-level", "off"}, tc.args...)
			code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code || stdout.String() != tc.stdout {
				t.Fatalf("exit %d, stdout %q; want %d, %q; stderr %s", code, stdout.String(), tc.code, tc.stdout, stderr.String())
			}
		})
	}
}
