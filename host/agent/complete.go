package agent

import (
	"context"
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/llm"
)

// CompleteToolID is the ID of the built-in tool that asks the model
// provider for a completion (see [CompleteTool]).
const CompleteToolID = "llm:complete"

// CompleteInput is the arguments of llm:complete.
type CompleteInput struct {
	Prompt    string `json:"prompt" jsonschema:"the user message to complete"`
	System    string `json:"system,omitempty" jsonschema:"an optional system prompt"`
	Model     string `json:"model,omitempty" jsonschema:"the model; default: the one the host configured"`
	MaxTokens int    `json:"maxTokens,omitempty" jsonschema:"an upper bound on the answer's tokens (1 to 32768)"`
}

// CompleteOutput is the result of llm:complete.
type CompleteOutput struct {
	Text string `json:"text" jsonschema:"the model's answer"`
}

// maxCompleteTokens bounds CompleteInput.MaxTokens.
const maxCompleteTokens = 32768

// CompleteTool returns llm:complete, a Go tool that sends one prompt to p
// (model unless the call names one) and returns the answer's text: it
// lets workflows nest LLM calls. It is a tool like any other: the policy
// may deny it, its grant's timeout applies, and every call is logged.
// Tool calls the model asks for are not run: only the text comes back.
func CompleteTool(p llm.Provider, model string) host.Tool {
	return host.Func(host.FuncSpec{
		ID:          CompleteToolID,
		Description: "Asks the configured language model for a completion of one prompt and returns its text.",
		DisplayName: "LLM completion",
		Tags:        []string{"llm"},
	},
		func(ctx context.Context, in CompleteInput) (CompleteOutput, error) {
			if strings.TrimSpace(in.Prompt) == "" {
				return CompleteOutput{}, abi.Errorf(abi.CodeInvalidArguments, "prompt is empty")
			}
			if in.MaxTokens < 0 || in.MaxTokens > maxCompleteTokens {
				return CompleteOutput{}, abi.Errorf(abi.CodeInvalidArguments, "maxTokens %d: want 1 to %d", in.MaxTokens, maxCompleteTokens)
			}
			m := model
			if in.Model != "" {
				m = in.Model
			}
			var msgs []llm.Message
			if in.System != "" {
				msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: in.System})
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: in.Prompt})
			resp, err := p.Complete(ctx, llm.Request{Model: m, Messages: msgs, MaxTokens: in.MaxTokens})
			if err != nil {
				return CompleteOutput{}, abi.Errorf(abi.CodeToolError, "the model provider failed: %s", err.Error())
			}
			return CompleteOutput{Text: resp.Content}, nil
		})
}
