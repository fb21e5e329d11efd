package main

import (
	"context"
	"flag"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
)

func execCommand() command {
	return command{
		name: "exec", jsonOnly: true, usage: "exec [FILE|-] [--on-failure skip|continue]", summary: "run the ACTION calls in an LLM output (a file, or stdin); print results and observation",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&e.onFailure, "on-failure", "skip", "after a failed call: skip the rest (SKIPPED) or continue with the independent calls")
			approveFlagSet(fs, e)
		},
		run: runExec,
	}
}

// execResult is what exec prints.
type execResult struct {
	ResponseText  string         `json:"responseText"`
	Results       []abi.Envelope `json:"results"`
	IgnoredBlocks int            `json:"ignoredBlocks"`
	Observation   string         `json:"observation"`
	Status        abi.Status     `json:"status"`
	Error         *abi.Error     `json:"error,omitempty"`
}

func runExec(ctx context.Context, e *env, args []string) error {
	if len(args) > 1 {
		return usageError{"exec takes at most one FILE (default: stdin)"}
	}
	var in []byte
	var err error
	if len(args) == 0 || args[0] == "-" {
		in, err = readCapped(e.stdin)
	} else {
		in, err = readFile(args[0])
	}
	if err != nil {
		return err
	}
	switch host.OnFailure(e.onFailure) {
	case host.OnFailureSkip, host.OnFailureContinue:
	default:
		return usageError{"--on-failure must be skip or continue"}
	}
	stopApprovals, err := e.startApprovals(ctx) // the policy's approve rules ask here (approve.go)
	if err != nil {
		return err
	}
	defer stopApprovals()
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	// Exec prepares every tool the output names at once; the warm-up
	// here only shows how that goes when it takes a while.
	stop := e.warmWithProgress(ctx, h, h.ExecTools(string(in)))
	turn := h.Exec(ctx, string(in))
	stop()
	if err := e.printJSON(turnResult(turn)); err != nil {
		return err
	}
	if turn.Status != abi.StatusSuccess {
		return exitError{1}
	}
	return nil
}

func turnResult(t host.Turn) execResult {
	return execResult{ResponseText: t.ResponseText, Results: t.Results, IgnoredBlocks: t.IgnoredBlocks, Observation: t.Observation, Status: t.Status, Error: t.Error}
}
