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
	// Stream asks for a streamed answer (server-sent events): text
	// deltas reach Request.OnDelta as they come.
	Stream bool
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

// anthropicMessages maps a conversation to Anthropic's shape: system text
// apart, tool results as user messages of tool_result blocks, consecutive
// messages of one role merged (the API wants them alternating).
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
				var obj map[string]any
				if json.Unmarshal(in, &obj) != nil || obj == nil {
					in = json.RawMessage(`{}`) // input must be an object
				}
				add("assistant", anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: in})
			}
		default:
			if m.Content != "" {
				add("user", anBlock{Type: "text", Text: m.Content})
			}
		}
	}
	return strings.Join(system, "\n\n"), out
}

// AnthropicBody is the Messages request body of req; maxTokens is used
// when req sets none.
func AnthropicBody(req Request, maxTokens int, stream bool) map[string]any {
	system, msgs := anthropicMessages(req.Messages)
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
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
	if stream {
		body["stream"] = true
	}
	return body
}

// Complete sends one Messages request.
func (p *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	b, err := json.Marshal(AnthropicBody(req, p.cfg.MaxTokens, p.cfg.Stream))
	if err != nil {
		return Response{}, fmt.Errorf("anthropic: %w", err)
	}
	c := call{who: "anthropic", client: p.cfg.Client, timeout: p.cfg.Timeout, url: strings.TrimSuffix(p.cfg.BaseURL, "/") + "/v1/messages",
		headers: map[string]string{"x-api-key": p.key, "anthropic-version": "2023-06-01"}, body: b, key: p.key, tools: req.Tools}
	return withRetries(ctx, p.cfg.MaxRetries, p.cfg.RetryBase, func() (Response, bool, error) {
		if !p.cfg.Stream {
			raw, retry, err := c.post(ctx)
			if err != nil {
				return Response{}, retry, err
			}
			var out struct {
				Content []anBlock `json:"content"`
			}
			if err := json.Unmarshal(raw, &out); err != nil || out.Content == nil {
				return Response{}, false, fmt.Errorf("anthropic: %s does not look like the Messages API (no content in its answer: %s)", c.url, snippet(raw, p.key))
			}
			var resp Response
			for _, b := range out.Content {
				switch b.Type {
				case "text":
					resp.Content += b.Text
				case "tool_use":
					resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
				}
			}
			return resp, false, nil
		}
		c.headers["Accept"] = "text/event-stream"
		resp, done, retry, err := c.send(ctx)
		if err != nil {
			return Response{}, retry, err
		}
		defer done()
		out, err := parseAnthropicStream(stream(resp), req.OnDelta)
		if err != nil {
			return Response{}, false, fmt.Errorf("anthropic: %s: %w", c.url, err)
		}
		return out, false, nil
	})
}

// parseAnthropicStream reads a Messages stream: message_start, then per
// content block content_block_start / _delta (text_delta, input_json_delta)
// / _stop, message_delta and message_stop; ping events are skipped and an
// error event ends it with the provider's message. Text deltas go to
// onDelta. An event that is not JSON, a delta for a block never started,
// or a stream that ends before message_stop is an error.
func parseAnthropicStream(r io.Reader, onDelta func(string)) (Response, error) {
	type block struct {
		typ, id, name string
		text, input   strings.Builder
	}
	var blocks []*block
	var resp Response
	stopped := false
	err := readSSE(r, func(ev sseEvent) (bool, error) {
		var e struct {
			Type         string `json:"type"`
			Index        *int   `json:"index"`
			ContentBlock *struct {
				Type string `json:"type"`
				ID   string `json:"id"`
				Name string `json:"name"`
				Text string `json:"text"`
			} `json:"content_block"`
			Delta *struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
			Error *struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil || e.Type == "" {
			return false, fmt.Errorf("a malformed stream event %q: %s", ev.name, snippet([]byte(ev.data), ""))
		}
		at := func() (*block, error) {
			if e.Index == nil || *e.Index < 0 || *e.Index >= len(blocks) || blocks[*e.Index] == nil {
				return nil, fmt.Errorf("a malformed stream event: %s for a content block never started", e.Type)
			}
			return blocks[*e.Index], nil
		}
		switch e.Type {
		case "content_block_start":
			if e.Index == nil || e.ContentBlock == nil || *e.Index < 0 || *e.Index >= maxStreamCalls {
				return false, errors.New("a malformed stream event: content_block_start without an index or a block")
			}
			for len(blocks) <= *e.Index {
				blocks = append(blocks, nil)
			}
			b := &block{typ: e.ContentBlock.Type, id: e.ContentBlock.ID, name: e.ContentBlock.Name}
			b.text.WriteString(e.ContentBlock.Text)
			blocks[*e.Index] = b
		case "content_block_delta":
			b, err := at()
			if err != nil {
				return false, err
			}
			if e.Delta == nil {
				return false, errors.New("a malformed stream event: content_block_delta without a delta")
			}
			switch e.Delta.Type {
			case "text_delta":
				b.text.WriteString(e.Delta.Text)
				if onDelta != nil && e.Delta.Text != "" {
					onDelta(e.Delta.Text)
				}
			case "input_json_delta":
				b.input.WriteString(e.Delta.PartialJSON)
			}
		case "content_block_stop":
			if _, err := at(); err != nil {
				return false, err
			}
		case "message_stop":
			stopped = true
			return true, nil
		case "error":
			msg := "no message"
			if e.Error != nil {
				msg = e.Error.Type + ": " + e.Error.Message
			}
			return false, fmt.Errorf("the stream reported an error: %s", msg)
		}
		return false, nil
	})
	if err != nil {
		return Response{}, err
	}
	if !stopped {
		return Response{}, errors.New("the stream ended before its message_stop event")
	}
	for _, b := range blocks {
		if b == nil {
			continue
		}
		switch b.typ {
		case "text":
			resp.Content += b.text.String()
		case "tool_use":
			args := b.input.String()
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: b.id, Name: b.name, Arguments: args})
		}
	}
	return resp, nil
}

var _ Provider = (*Anthropic)(nil)
