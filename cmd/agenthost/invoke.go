package main

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/abi"
)

func invokeCommand() command {
	return command{
		name: "invoke", jsonOnly: true, usage: "invoke ID [JSON|-|@FILE]", summary: "run one tool and print its result envelope",
		run: runInvoke,
	}
}

func runInvoke(ctx context.Context, e *env, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return usageError{"invoke takes a tool ID and optional JSON arguments (- reads stdin, @FILE reads a file)"}
	}
	var raw []byte
	if len(args) == 2 {
		b, err := e.readInput(args[1], true)
		if err != nil {
			return err
		}
		raw = b
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	env := h.Call(ctx, args[0], json.RawMessage(raw))
	if err := e.printJSON(env); err != nil {
		return err
	}
	if env.Status != abi.StatusSuccess {
		return exitError{1}
	}
	return nil
}
