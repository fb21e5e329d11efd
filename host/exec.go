package host

import (
	"context"
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/action"
	"github.com/agenthost/agenthost/host/observation"
)

// Turn is the outcome of one model turn run through [Host.Exec].
type Turn struct {
	// ResponseText is the model's text before the ACTION block.
	ResponseText string `json:"responseText"`
	// Calls are the parsed calls, arguments as written (uncoerced).
	Calls []action.Call `json:"calls"`
	// Results holds one envelope per call, in order; calls after the
	// first failure are SKIPPED unless Options.OnFailure is
	// OnFailureContinue.
	Results []abi.Envelope `json:"results"`
	// IgnoredBlocks counts the ACTION blocks after the first, which did not
	// run; the observation tells the model to send one block.
	IgnoredBlocks int `json:"ignoredBlocks"`
	// Observation is the text to feed back to the model; empty when the
	// output held no ACTION block.
	Observation string `json:"observation"`
	// Status is success when every call succeeded (or nothing ran),
	// failure when none did, partial otherwise.
	Status abi.Status `json:"status"`
	// Error is set when the ACTION block itself was malformed; nothing
	// ran then.
	Error *abi.Error `json:"error,omitempty"`
}

// Exec parses raw LLM output for an ACTION block, runs its calls in order,
// and writes the observation. By default the calls after the first failure
// are SKIPPED (a later call may depend on an earlier one);
// Options.OnFailure = OnFailureContinue runs them all.
// An output without an ACTION block is a plain reply: nothing runs and the
// observation is empty.
func (h *Host) Exec(ctx context.Context, llmOutput string) Turn {
	return h.ExecWith(ctx, llmOutput, ExecOptions{})
}

// ExecOptions adjust one [Host.ExecWith]. The zero value is [Host.Exec].
type ExecOptions struct {
	// Allowed, when set, limits the turn to the tools of an agent that
	// sees only some: a call to a tool for which Allowed (given the ID
	// without a version) is false is an UNKNOWN_TOOL failure and does not
	// run, as if the tool did not exist.
	Allowed func(id string) bool
}

// ExecWith is [Host.Exec] adjusted by opts.
func (h *Host) ExecWith(ctx context.Context, llmOutput string, opts ExecOptions) Turn {
	allowed := opts.Allowed
	parsed, err := action.Parse(llmOutput, h.opts.Action)
	turn := Turn{Calls: []action.Call{}, Results: []abi.Envelope{}, Status: abi.StatusSuccess}
	if parsed != nil {
		turn.ResponseText = parsed.ResponseText
	}
	if err != nil {
		turn.Error = asABIError(err)
		turn.Status = abi.StatusFailure
		turn.Observation = observation.Error("", turn.Error)
		return turn
	}
	turn.Calls = parsed.Calls
	turn.IgnoredBlocks = parsed.IgnoredBlocks
	// The calls run one after another; the modules they need compile
	// at once, while the first calls run.
	h.prepareAhead(parsed.Calls, allowed)
	failed := false
	ok := 0
	for _, c := range parsed.Calls {
		if failed && h.opts.OnFailure != OnFailureContinue {
			env := abi.Failure(c.Tool, abi.Errorf(abi.CodeSkipped, "not run: an earlier call in this ACTION failed"))
			turn.Results = append(turn.Results, env)
			continue
		}
		var env abi.Envelope
		if id, _, _ := strings.Cut(c.Tool, "@"); allowed != nil && !allowed(id) {
			env = abi.Failure(c.Tool, abi.Errorf(abi.CodeUnknownTool, "unknown tool '%s': it is not among the tools of this agent", c.Tool))
		} else {
			env = h.CallArgs(ctx, c.Tool, c.Args)
		}
		if env.Status != abi.StatusSuccess {
			failed = true
		} else {
			ok++
		}
		turn.Results = append(turn.Results, env)
	}
	switch {
	case !failed:
		turn.Status = abi.StatusSuccess
	case ok == 0:
		turn.Status = abi.StatusFailure
	default:
		turn.Status = abi.StatusPartial
	}
	if len(turn.Results) > 0 {
		turn.Observation = observation.Turn(turn.Results, h.opts.Observation)
	}
	if turn.IgnoredBlocks > 0 {
		turn.Observation += "\n" + observation.IgnoredBlocks(turn.IgnoredBlocks)
	}
	return turn
}
