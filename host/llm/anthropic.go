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
	"strconv"
	"strings"
	"time"
)

// AnthropicConfig configures the Anthropic Messages provider.
type AnthropicConfig struct {
	// BaseURL is the API root (default https://api.anthropic.com);
	// "/v1/messages" is added.
	BaseURL string
	// APIKeyEnv names the environment variable holding the key (default
	// ANTHROPIC_API_KEY).
	APIKeyEnv string
	// MaxTokens is sent when a request sets none (the API requires it;
	// default 1024).
	MaxTokens int
	// Timeout, MaxRetries and RetryBase as for OpenAIConfig.
	Timeout    time.Duration
	MaxRetries int
	RetryBase  time.Duration
	Client     *http.Client
}

// Anthropic is the Anthropic Messages provider.
type Anthropic struct {
	cfg AnthropicConfig
	key string
}

// NewAnthropic returns the provider; an unset key variable is an error.
func NewAnthropic(cfg AnthropicConfig) (*Anthropic, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.anthropic.com"
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = "ANTHROPIC_API_KEY"
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 1024
	}
	retryDefaults(&cfg.Timeout, &cfg.MaxRetries, &cfg.RetryBase)
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	k, ok := os.LookupEnv(cfg.APIKeyEnv)
	if !ok || k == "" {
		return nil, fmt.Errorf("anthropic: the environment variable %s holding the API key is not set", cfg.APIKeyEnv)
	}
	return &Anthropic{cfg: cfg, key: k}, nil
}

type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

// messages maps a conversation to Anthropic's shape: system text apart,
// tool results as user messages of tool_result blocks.
func anthropicMessages(msgs []Message) (string, []anMessage) {
	var system []string
	var out []anMessage
	add := func(role string, b anBlock) {
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, b)
			return
		}
		out = append(out, anMessage{Role: role, Content: []anBlock{b}})
	}
	for _, m := range msgs {
		switch m.Role {
		case RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
		case RoleTool:
			add("user", anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content})
		case RoleAssistant:
			if m.Content != "" {
				add("assistant", anBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				in := json.RawMessage(tc.Arguments)
				if !json.Valid(in) {
					in = json.RawMessage(`{}`)
				}
				add("assistant", anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: in})
			}
		default:
			add("user", anBlock{Type: "text", Text: m.Content})
		}
	}
	return strings.Join(system, "\n\n"), out
}

// Complete sends one Messages request.
func (p *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	system, msgs := anthropicMessages(req.Messages)
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.MaxTokens
	}
	body := map[string]any{"model": req.Model, "max_tokens": maxTokens, "messages": msgs}
	if system != "" {
		body["system"] = system
	}
	if len(req.Tools) > 0 {
		var tools []map[string]any
		for _, t := range req.Tools {
			tools = append(tools, map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.Parameters})
		}
		body["tools"] = tools
	}
	b, err := json.Marshal(body)
	if err != nil {
		return Response{}, fmt.Errorf("anthropic: %w", err)
	}
	url := strings.TrimSuffix(p.cfg.BaseURL, "/") + "/v1/messages"
	headers := map[string]string{"x-api-key": p.key, "anthropic-version": "2023-06-01"}
	return withRetries(ctx, p.cfg.MaxRetries, p.cfg.RetryBase, func() (Response, bool, error) {
		raw, retry, err := postJSON(ctx, p.cfg.Client, p.cfg.Timeout, url, headers, b, p.key, "anthropic")
		if err != nil {
			return Response{}, retry, err
		}
		var out struct {
			Content []anBlock `json:"content"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || out.Content == nil {
			return Response{}, false, fmt.Errorf("anthropic: %s does not look like the Messages API (no content in its answer: %s)", url, snippet(raw, p.key))
		}
		var resp Response
		for _, c := range out.Content {
			switch c.Type {
			case "text":
				resp.Content += c.Text
			case "tool_use":
				resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Arguments: string(c.Input)})
			}
		}
		return resp, false, nil
	})
}

// retryDefaults fills zero retry settings (shared by the providers).
func retryDefaults(timeout *time.Duration, retries *int, base *time.Duration) {
	if *timeout <= 0 {
		*timeout = 60 * time.Second
	}
	switch {
	case *retries == 0:
		*retries = 3
	case *retries < 0:
		*retries = 0
	}
	if *base <= 0 {
		*base = 500 * time.Millisecond
	}
}

// withRetries runs try until it succeeds, fails for good, or the retries
// (429 and 5xx, with exponential back-off) are spent.
func withRetries(ctx context.Context, retries int, base time.Duration, try func() (Response, bool, error)) (Response, error) {
	var last error
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			wait := base << (attempt - 1)
			var ra *retryAfter
			if errors.As(last, &ra) && ra.wait > wait {
				wait = min(ra.wait, maxRetryAfter)
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return Response{}, ctx.Err()
			}
		}
		resp, retry, err := try()
		if err == nil {
			return resp, nil
		}
		last = err
		if !retry {
			break
		}
	}
	if last == nil {
		last = errors.New("no attempt made")
	}
	return Response{}, last
}

// postJSON posts body and returns a 200 answer's bytes; retry says
// whether a failure may pass (429, 5xx, a network error). The key never
// appears in an error.
func postJSON(ctx context.Context, c *http.Client, timeout time.Duration, url string, headers map[string]string, body []byte, key, who string) ([]byte, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", who, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, ctx.Err() == nil, fmt.Errorf("%s: %s: %s", who, url, redactErr(err, key))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		err := fmt.Errorf("%s: %s answered %s", who, url, resp.Status)
		if secs, perr := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); perr == nil && secs > 0 {
			return nil, true, &retryAfter{err: err, wait: time.Duration(secs) * time.Second}
		}
		return nil, true, err
	case resp.StatusCode != http.StatusOK:
		return nil, false, fmt.Errorf("%s: %s answered %s: %s", who, url, resp.Status, snippet(raw, key))
	}
	return raw, false, nil
}

var _ Provider = (*Anthropic)(nil)

// maxRetryAfter caps the wait a server's Retry-After can ask for.
const maxRetryAfter = 60 * time.Second

// retryAfter is a retryable failure whose answer named a wait in seconds.
type retryAfter struct {
	err  error
	wait time.Duration
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }

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
