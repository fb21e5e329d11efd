package llm

import (
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
	// BaseURL is the API root, e.g. https://api.openai.com/v1,
	// http://localhost:11434/v1 (Ollama) or http://localhost:8000/v1
	// (vLLM); "/chat/completions" is added.
	BaseURL string
	// APIKeyEnv names the environment variable holding the key (the key
	// is never taken from a flag or a file); "" sends no key.
	APIKeyEnv string
	// Timeout bounds one request, a stream included (default 60 s);
	// MaxRetries the retries of a 429 or 5xx answer (default 3; negative:
	// none), with exponential back-off from RetryBase (default 500 ms)
	// unless the server names its wait.
	Timeout    time.Duration
	MaxRetries int
	RetryBase  time.Duration
	// Client is the HTTP client; nil means a default one.
	Client *http.Client
	// Stream asks for a streamed answer (server-sent events): text
	// deltas reach Request.OnDelta as they come.
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

// OpenAIBody is the Chat Completions request body of req: messages with
// tool calls and tool results by ID, tools only when there are some (an
// empty array is refused), strict only where a definition asks for it.
func OpenAIBody(req Request, stream bool) map[string]any {
	msgs := make([]oaMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		c := m.Content
		om := oaMessage{Role: m.Role, Content: &c, ToolCallID: m.ToolCallID}
		if m.Role == RoleAssistant && c == "" && len(m.ToolCalls) > 0 {
			om.Content = nil // content is optional next to tool calls
		}
		for _, tc := range m.ToolCalls {
			var o oaToolCall
			o.ID, o.Type = tc.ID, "function"
			o.Function.Name, o.Function.Arguments = tc.Name, tc.Arguments
			if !json.Valid([]byte(o.Function.Arguments)) {
				o.Function.Arguments = "{}"
			}
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
			fn := map[string]any{"name": t.Name, "description": t.Description, "parameters": t.Parameters}
			if t.Strict {
				fn["strict"] = true
			}
			tools = append(tools, map[string]any{"type": "function", "function": fn})
		}
		body["tools"] = tools
	}
	if stream {
		body["stream"] = true
	}
	return body
}

// Complete sends one Chat Completions request.
func (p *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	b, err := json.Marshal(OpenAIBody(req, p.cfg.Stream))
	if err != nil {
		return Response{}, fmt.Errorf("openai: %w", err)
	}
	c := call{who: "openai", client: p.cfg.Client, timeout: p.cfg.Timeout, url: strings.TrimSuffix(p.cfg.BaseURL, "/") + "/chat/completions",
		headers: map[string]string{}, body: b, key: p.key, tools: req.Tools}
	if p.key != "" {
		c.headers["Authorization"] = "Bearer " + p.key
	}
	return withRetries(ctx, p.cfg.MaxRetries, p.cfg.RetryBase, func() (Response, bool, error) {
		if !p.cfg.Stream {
			raw, retry, err := c.post(ctx)
			if err != nil {
				return Response{}, retry, err
			}
			return parseCompletion(raw, c.url, p.key)
		}
		c.headers["Accept"] = "text/event-stream"
		resp, done, retry, err := c.send(ctx)
		if err != nil {
			return Response{}, retry, err
		}
		defer done()
		out, err := parseOpenAIStream(stream(resp), req.OnDelta)
		if err != nil {
			return Response{}, false, fmt.Errorf("openai: %s: %w", c.url, err)
		}
		return out, false, nil
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

// maxStreamCalls bounds the tool calls of one streamed turn.
const maxStreamCalls = 128

// parseOpenAIStream reads a Chat Completions stream: "data: {chunk}"
// events ending with "data: [DONE]". Content deltas go to onDelta and are
// joined; tool-call deltas are merged by index. A chunk that is not JSON,
// an error chunk, or a stream that ends before [DONE] is an error.
func parseOpenAIStream(r io.Reader, onDelta func(string)) (Response, error) {
	var resp Response
	var text strings.Builder
	type partial struct{ id, name, args strings.Builder }
	var calls []*partial
	done := false
	err := readSSE(r, func(ev sseEvent) (bool, error) {
		if strings.TrimSpace(ev.data) == "[DONE]" {
			done = true
			return true, nil
		}
		var c struct {
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    *int   `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			return false, fmt.Errorf("a malformed stream event (not a JSON chunk): %s", snippet([]byte(ev.data), ""))
		}
		if c.Error != nil {
			return false, fmt.Errorf("the stream reported an error: %s", c.Error.Message)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				text.WriteString(*ch.Delta.Content)
				if onDelta != nil {
					onDelta(*ch.Delta.Content)
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil || *tc.Index < 0 || *tc.Index >= maxStreamCalls {
					return false, errors.New("a malformed stream event: a tool call delta without a valid index")
				}
				for len(calls) <= *tc.Index {
					calls = append(calls, &partial{})
				}
				pc := calls[*tc.Index]
				pc.id.WriteString(tc.ID)
				pc.name.WriteString(tc.Function.Name)
				pc.args.WriteString(tc.Function.Arguments)
			}
		}
		return false, nil
	})
	if err != nil {
		return Response{}, err
	}
	if !done {
		return Response{}, errors.New("the stream ended before its final [DONE] event")
	}
	resp.Content = text.String()
	for _, pc := range calls {
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: pc.id.String(), Name: pc.name.String(), Arguments: pc.args.String()})
	}
	return resp, nil
}
