// Package llm talks to model providers: OpenAI-compatible Chat Completions
// (OpenAI, vLLM, llama.cpp server, Ollama...), Anthropic Messages, Gemini's
// generateContent, and replay, a JSONL file of scripted turns for tests
// and demos. Requests follow each provider's documented rules, which
// CheckRequest states in code. It knows nothing of tools beyond
// their definitions: the agent loop (host/agent) maps them.
package llm

import (
	"context"
	"encoding/json"
)

// Roles of a Message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are an assistant message's tool calls.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is a model's request to call a tool.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text the model wrote (it may be invalid).
	Arguments string `json:"arguments"`
	// Signature is opaque provider state to send back with the call
	// (Gemini's thoughtSignature, which its thinking models check).
	Signature string `json:"signature,omitempty"`
}

// ToolDef is a tool offered to the model. Parameters must already be in a
// form the providers accept (see host/wire's Adapt).
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Strict asks OpenAI for strict schema adherence; set it only for a
	// schema in its strict subset, or the request is refused.
	Strict bool `json:"strict,omitempty"`
}

// Request is one completion request.
type Request struct {
	Model    string
	Messages []Message
	// Tools are offered to the model; with none the request carries no
	// tools field at all (servers for models without tool calling refuse
	// one, even empty).
	Tools     []ToolDef
	MaxTokens int
	// OnDelta, when set and the provider streams, is told each piece of
	// the turn's text as it arrives (the Response still holds it whole).
	OnDelta func(text string)
}

// Response is the model's turn.
type Response struct {
	Content   string
	ToolCalls []ToolCall
}

// Provider completes conversations. Implementations are safe for
// concurrent use.
type Provider interface {
	Complete(ctx context.Context, req Request) (Response, error)
}
