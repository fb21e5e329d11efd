package host

import (
	"context"

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
	// first failure are SKIPPED.
	Results []abi.Envelope `json:"results"`
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

// Exec parses raw LLM output for an ACTION block (SPEC §7), runs its calls
// in order, stopping at the first failure, and writes the observation.
// An output without an ACTION block is a plain reply: nothing runs and the
// observation is empty.
func (h *Host) Exec(ctx context.Context, llmOutput string) Turn {
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
	failed := false
	ok := 0
	for _, c := range parsed.Calls {
		if failed {
			env := abi.Failure(c.Tool, abi.Errorf(abi.CodeSkipped, "not run: an earlier call in this ACTION failed"))
			turn.Results = append(turn.Results, env)
			continue
		}
		env := h.CallArgs(ctx, c.Tool, c.Args)
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
	return turn
}
