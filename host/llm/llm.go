// Package llm talks to model providers: OpenAI-compatible Chat Completions
// (OpenAI, vLLM, llama.cpp server, Ollama...) and replay, a JSONL file of
// scripted turns for tests and demos. It knows nothing of tools beyond
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
}

// ToolDef is a tool offered to the model.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one completion request.
type Request struct {
	Model     string
	Messages  []Message
	Tools     []ToolDef
	MaxTokens int
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
