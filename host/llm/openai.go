package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// OpenAIConfig configures an OpenAI-compatible Chat Completions provider.
type OpenAIConfig struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1 (Ollama); "/chat/completions" is added.
	BaseURL string
	// APIKeyEnv names the environment variable holding the key (the key
	// is never taken from a flag or a file); "" sends no key.
	APIKeyEnv string
	// Timeout bounds one request (default 60 s); MaxRetries the retries
	// of a 429 or 5xx answer (default 3; negative: none), with exponential
	// back-off from RetryBase (default 500 ms).
	Timeout    time.Duration
	MaxRetries int
	RetryBase  time.Duration
	// Client is the HTTP client; nil means a default one.
	Client *http.Client
}

// OpenAI is an OpenAI-compatible Chat Completions provider.
type OpenAI struct {
	cfg OpenAIConfig
	key string
}

// NewOpenAI returns the provider; a named key variable that is unset is
// an error.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("openai: no base URL")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = 3
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 500 * time.Millisecond
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	p := &OpenAI{cfg: cfg}
	if cfg.APIKeyEnv != "" {
		k, ok := os.LookupEnv(cfg.APIKeyEnv)
		if !ok || k == "" {
			return nil, fmt.Errorf("openai: the environment variable %s holding the API key is not set", cfg.APIKeyEnv)
		}
		p.key = k
	}
	return p, nil
}

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Complete sends one Chat Completions request (non-streaming).
func (p *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	msgs := make([]oaMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		c := m.Content
		om := oaMessage{Role: m.Role, Content: &c, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			var o oaToolCall
			o.ID, o.Type = tc.ID, "function"
			o.Function.Name, o.Function.Arguments = tc.Name, tc.Arguments
			om.ToolCalls = append(om.ToolCalls, o)
		}
		msgs = append(msgs, om)
	}
	body := map[string]any{"model": req.Model, "messages": msgs}
	if req.MaxTokens > 0 {
		body["max_tokens"] = req.MaxTokens
	}
	if len(req.Tools) > 0 {
		var tools []map[string]any
		for _, t := range req.Tools {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": t.Name, "description": t.Description, "parameters": t.Parameters}})
		}
		body["tools"] = tools
	}
	b, err := json.Marshal(body)
	if err != nil {
		return Response{}, fmt.Errorf("openai: %w", err)
	}
	url := strings.TrimSuffix(p.cfg.BaseURL, "/") + "/chat/completions"
	var last error
	for attempt := 0; attempt <= p.cfg.MaxRetries; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(p.cfg.RetryBase << (attempt - 1)):
			case <-ctx.Done():
				return Response{}, fmt.Errorf("openai: %w", ctx.Err())
			}
		}
		resp, retry, err := p.post(ctx, url, b)
		if err == nil {
			return resp, nil
		}
		last = err
		if !retry {
			break
		}
	}
	return Response{}, last
}

// post sends one request; retry says whether the failure may pass.
func (p *OpenAI) post(ctx context.Context, url string, body []byte) (Response, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Response{}, false, fmt.Errorf("openai: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if p.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+p.key)
	}
	hresp, err := p.cfg.Client.Do(hreq)
	if err != nil {
		return Response{}, ctx.Err() == nil, fmt.Errorf("openai: %s: %s", url, redactErr(err, p.key))
	}
	defer hresp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(hresp.Body, 16<<20))
	if hresp.StatusCode == http.StatusTooManyRequests || hresp.StatusCode >= 500 {
		return Response{}, true, fmt.Errorf("openai: %s answered %s", url, hresp.Status)
	}
	if hresp.StatusCode != http.StatusOK {
		return Response{}, false, fmt.Errorf("openai: %s answered %s: %s", url, hresp.Status, snippet(raw, p.key))
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content   *string      `json:"content"`
				ToolCalls []oaToolCall `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 {
		return Response{}, false, fmt.Errorf("openai: %s does not look like a Chat Completions API (no choices in its answer: %s)", url, snippet(raw, p.key))
	}
	m := out.Choices[0].Message
	resp := Response{}
	if m.Content != nil {
		resp.Content = *m.Content
	}
	for _, tc := range m.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return resp, false, nil
}

// snippet is the start of an answer body for an error, the key removed.
func snippet(b []byte, key string) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if key != "" {
		s = strings.ReplaceAll(s, key, "[REDACTED]")
	}
	return s
}

func redactErr(err error, key string) string {
	if key == "" {
		return err.Error()
	}
	return strings.ReplaceAll(err.Error(), key, "[REDACTED]")
}

var _ Provider = (*OpenAI)(nil)
