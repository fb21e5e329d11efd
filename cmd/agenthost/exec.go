package main

import (
	"context"
	"io"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
)

func execCommand() command {
	return command{
		name: "exec", usage: "exec < output.txt", summary: "run the ACTION calls in LLM output on stdin; print results and observation",
		run: runExec,
	}
}

// execResult is the SPEC §8 output of exec.
type execResult struct {
	ResponseText string         `json:"responseText"`
	Results      []abi.Envelope `json:"results"`
	Observation  string         `json:"observation"`
	Status       abi.Status     `json:"status"`
	Error        *abi.Error     `json:"error,omitempty"`
}

func runExec(ctx context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usageError{"exec reads LLM output from stdin and takes no arguments"}
	}
	in, err := io.ReadAll(e.stdin)
	if err != nil {
		return err
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	turn := h.Exec(ctx, string(in))
	if err := e.printJSON(turnResult(turn)); err != nil {
		return err
	}
	if turn.Status != abi.StatusSuccess {
		return exitError{1}
	}
	return nil
}

func turnResult(t host.Turn) execResult {
	return execResult{ResponseText: t.ResponseText, Results: t.Results, Observation: t.Observation, Status: t.Status, Error: t.Error}
}
