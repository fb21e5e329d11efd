package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// GeminiConfig configures the Gemini API provider (generateContent).
type GeminiConfig struct {
	// BaseURL is the API root (default
	// https://generativelanguage.googleapis.com/v1beta);
	// "/models/{model}:generateContent" is added.
	BaseURL string
	// APIKeyEnv names the environment variable holding the key (default
	// GEMINI_API_KEY), sent as x-goog-api-key.
	APIKeyEnv string
	// Timeout, MaxRetries and RetryBase as for OpenAIConfig.
	Timeout    time.Duration
	MaxRetries int
	RetryBase  time.Duration
	Client     *http.Client
	// Stream uses streamGenerateContent (server-sent events): text
	// deltas reach Request.OnDelta as they come.
	Stream bool
}

// Gemini is the Gemini API provider. Tools go as functionDeclarations
// with their JSON Schema as parametersJsonSchema.
type Gemini struct {
	cfg GeminiConfig
	key string
}

// NewGemini returns the provider; an unset key variable is an error.
func NewGemini(cfg GeminiConfig) (*Gemini, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://generativelanguage.googleapis.com/v1beta"
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = "GEMINI_API_KEY"
	}
	retryDefaults(&cfg.Timeout, &cfg.MaxRetries, &cfg.RetryBase)
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	k, ok := os.LookupEnv(cfg.APIKeyEnv)
	if !ok || k == "" {
		return nil, fmt.Errorf("gemini: the environment variable %s holding the API key is not set", cfg.APIKeyEnv)
	}
	return &Gemini{cfg: cfg, key: k}, nil
}

type gmPart struct {
	Text             string        `json:"text,omitempty"`
	FunctionCall     *gmCall       `json:"functionCall,omitempty"`
	FunctionResponse *gmFuncResult `json:"functionResponse,omitempty"`
	// ThoughtSignature goes back with the part it came with.
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
}

type gmCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type gmFuncResult struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type gmContent struct {
	Role  string   `json:"role,omitempty"`
	Parts []gmPart `json:"parts"`
}

// GeminiBody is the generateContent request body of req: system text as
// systemInstruction, assistant turns as role "model" with functionCall
// parts, tool results as functionResponse parts named after their call
// (Gemini matches them by name; the ID is sent too), each result an
// object (a JSON object as it is, anything else as {"content": text}).
func GeminiBody(req Request) map[string]any {
	var system []string
	var contents []gmContent
	names := map[string]string{} // call ID -> tool name
	add := func(role string, p gmPart) {
		if n := len(contents); n > 0 && contents[n-1].Role == role {
			contents[n-1].Parts = append(contents[n-1].Parts, p)
			return
		}
		contents = append(contents, gmContent{Role: role, Parts: []gmPart{p}})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
		case RoleAssistant:
			if m.Content != "" {
				add("model", gmPart{Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Name
				var args map[string]any
				if json.Unmarshal([]byte(tc.Arguments), &args) != nil || args == nil {
					args = map[string]any{}
				}
				add("model", gmPart{FunctionCall: &gmCall{ID: tc.ID, Name: tc.Name, Args: args}, ThoughtSignature: tc.Signature})
			}
		case RoleTool:
			var obj map[string]any
			if json.Unmarshal([]byte(m.Content), &obj) != nil || obj == nil {
				obj = map[string]any{"content": m.Content}
			}
			add("user", gmPart{FunctionResponse: &gmFuncResult{ID: m.ToolCallID, Name: names[m.ToolCallID], Response: obj}})
		default:
			if m.Content != "" {
				add("user", gmPart{Text: m.Content})
			}
		}
	}
	body := map[string]any{"contents": contents}
	if len(system) > 0 {
		body["systemInstruction"] = gmContent{Parts: []gmPart{{Text: strings.Join(system, "\n\n")}}}
	}
	if req.MaxTokens > 0 {
		body["generationConfig"] = map[string]any{"maxOutputTokens": req.MaxTokens}
	}
	if len(req.Tools) > 0 {
		var decls []map[string]any
		for _, t := range req.Tools {
			decls = append(decls, map[string]any{"name": t.Name, "description": t.Description, "parametersJsonSchema": t.Parameters})
		}
		body["tools"] = []map[string]any{{"functionDeclarations": decls}}
	}
	return body
}

// Complete sends one generateContent (or streamGenerateContent) request.
func (p *Gemini) Complete(ctx context.Context, req Request) (Response, error) {
	if req.Model == "" {
		return Response{}, errors.New("gemini: no model")
	}
	b, err := json.Marshal(GeminiBody(req))
	if err != nil {
		return Response{}, fmt.Errorf("gemini: %w", err)
	}
	method := ":generateContent"
	if p.cfg.Stream {
		method = ":streamGenerateContent?alt=sse"
	}
	c := call{who: "gemini", client: p.cfg.Client, timeout: p.cfg.Timeout,
		url:     strings.TrimSuffix(p.cfg.BaseURL, "/") + "/models/" + url.PathEscape(strings.TrimPrefix(req.Model, "models/")) + method,
		headers: map[string]string{"x-goog-api-key": p.key}, body: b, key: p.key, tools: req.Tools}
	return withRetries(ctx, p.cfg.MaxRetries, p.cfg.RetryBase, func() (Response, bool, error) {
		if !p.cfg.Stream {
			raw, retry, err := c.post(ctx)
			if err != nil {
				return Response{}, retry, err
			}
			var g gmAnswer
			if err := json.Unmarshal(raw, &g); err != nil || g.Candidates == nil {
				return Response{}, false, fmt.Errorf("gemini: %s does not look like the Gemini API (no candidates in its answer: %s)", c.url, snippet(raw, p.key))
			}
			var resp Response
			var text strings.Builder
			n := 0
			if err := g.into(&resp, &text, &n, nil); err != nil {
				return Response{}, false, fmt.Errorf("gemini: %s: %w", c.url, err)
			}
			resp.Content = text.String()
			return resp, false, nil
		}
		resp, done, retry, err := c.send(ctx)
		if err != nil {
			return Response{}, retry, err
		}
		defer done()
		out, err := parseGeminiStream(stream(resp), req.OnDelta)
		if err != nil {
			return Response{}, false, fmt.Errorf("gemini: %s: %w", c.url, err)
		}
		return out, false, nil
	})
}

// gmAnswer is a GenerateContentResponse (whole, or one streamed chunk).
type gmAnswer struct {
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text             string  `json:"text"`
				Thought          bool    `json:"thought"`
				FunctionCall     *gmCall `json:"functionCall"`
				ThoughtSignature string  `json:"thoughtSignature"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// into adds the first candidate's text to text and its calls to resp;
// n numbers calls that came without an ID (older models send none).
func (g gmAnswer) into(resp *Response, text *strings.Builder, n *int, onDelta func(string)) error {
	if g.Error != nil {
		return fmt.Errorf("the answer reported an error: %s", g.Error.Message)
	}
	if len(g.Candidates) == 0 {
		if g.PromptFeedback != nil && g.PromptFeedback.BlockReason != "" {
			return fmt.Errorf("the prompt was blocked: %s", g.PromptFeedback.BlockReason)
		}
		return nil
	}
	for _, part := range g.Candidates[0].Content.Parts {
		switch {
		case part.FunctionCall != nil:
			if *n >= maxStreamCalls {
				return fmt.Errorf("more than %d function calls in one answer", maxStreamCalls)
			}
			*n++
			id := part.FunctionCall.ID
			if id == "" {
				id = "gemini_call_" + strconv.Itoa(*n)
			}
			args := part.FunctionCall.Args
			if args == nil {
				args = map[string]any{}
			}
			a, _ := json.Marshal(args)
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: id, Name: part.FunctionCall.Name, Arguments: string(a), Signature: part.ThoughtSignature})
		case part.Text != "" && !part.Thought:
			text.WriteString(part.Text)
			if onDelta != nil {
				onDelta(part.Text)
			}
		}
	}
	return nil
}

// parseGeminiStream reads a streamGenerateContent?alt=sse answer: "data:
// {GenerateContentResponse}" events, the last with a finishReason. An
// event that is not JSON, or a stream that ends before a finishReason,
// is an error.
func parseGeminiStream(r io.Reader, onDelta func(string)) (Response, error) {
	var resp Response
	var text strings.Builder
	n := 0
	finished := false
	err := readSSE(r, func(ev sseEvent) (bool, error) {
		var g gmAnswer
		if err := json.Unmarshal([]byte(ev.data), &g); err != nil {
			return false, fmt.Errorf("a malformed stream event (not a JSON chunk): %s", snippet([]byte(ev.data), ""))
		}
		if err := g.into(&resp, &text, &n, onDelta); err != nil {
			return false, err
		}
		if len(g.Candidates) > 0 && g.Candidates[0].FinishReason != "" {
			finished = true
		}
		return false, nil
	})
	if err != nil {
		return Response{}, err
	}
	if !finished {
		return Response{}, errors.New("the stream ended before a chunk with a finishReason")
	}
	resp.Content = text.String()
	return resp, nil
}

var _ Provider = (*Gemini)(nil)
