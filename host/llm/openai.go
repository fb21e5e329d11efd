package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// Stream asks for a streamed answer (server-sent events), read whole.
	Stream bool
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
	retryDefaults(&cfg.Timeout, &cfg.MaxRetries, &cfg.RetryBase)
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
	if p.cfg.Stream {
		body["stream"] = true
	}
	b, err := json.Marshal(body)
	if err != nil {
		return Response{}, fmt.Errorf("openai: %w", err)
	}
	url := strings.TrimSuffix(p.cfg.BaseURL, "/") + "/chat/completions"
	headers := map[string]string{}
	if p.key != "" {
		headers["Authorization"] = "Bearer " + p.key
	}
	return withRetries(ctx, p.cfg.MaxRetries, p.cfg.RetryBase, func() (Response, bool, error) {
		raw, retry, err := postJSON(ctx, p.cfg.Client, p.cfg.Timeout, url, headers, b, p.key, "openai")
		if err != nil {
			return Response{}, retry, err
		}
		if p.cfg.Stream {
			resp, err := parseStream(raw)
			if err != nil {
				return Response{}, false, fmt.Errorf("openai: %s: %w (%s)", url, err, snippet(raw, p.key))
			}
			return resp, false, nil
		}
		return parseCompletion(raw, url, p.key)
	})
}

// parseCompletion reads a non-streaming answer.
func parseCompletion(raw []byte, url, key string) (Response, bool, error) {
	var out struct {
		Choices []struct {
			Message struct {
				Content   *string      `json:"content"`
				ToolCalls []oaToolCall `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 {
		return Response{}, false, fmt.Errorf("openai: %s does not look like a Chat Completions API (no choices in its answer: %s)", url, snippet(raw, key))
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

// parseStream reads a streamed answer (server-sent events of chunks):
// content deltas are joined, tool-call deltas merged by index.
func parseStream(raw []byte) (Response, error) {
	var resp Response
	type partial struct{ id, name, args strings.Builder }
	var calls []*partial
	chunks := 0
	for _, line := range strings.Split(string(raw), "\n") {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return Response{}, fmt.Errorf("a stream chunk is not JSON: %w", err)
		}
		chunks++
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				resp.Content += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index < 0 || tc.Index > 128 {
					return Response{}, fmt.Errorf("a tool call index %d is out of range", tc.Index)
				}
				for len(calls) <= tc.Index {
					calls = append(calls, &partial{})
				}
				pc := calls[tc.Index]
				pc.id.WriteString(tc.ID)
				pc.name.WriteString(tc.Function.Name)
				pc.args.WriteString(tc.Function.Arguments)
			}
		}
	}
	if chunks == 0 {
		return Response{}, errors.New("the answer holds no stream chunks: not a Chat Completions stream")
	}
	for _, pc := range calls {
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: pc.id.String(), Name: pc.name.String(), Arguments: pc.args.String()})
	}
	return resp, nil
}
