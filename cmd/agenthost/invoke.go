package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/agenthost/agenthost/abi"
)

func invokeCommand() command {
	return command{
		name: "invoke", usage: "invoke ID [JSON|-]", summary: "run one tool and print its result envelope",
		run: runInvoke,
	}
}

func runInvoke(ctx context.Context, e *env, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return usageError{"invoke takes a tool ID and optional JSON arguments (or - for stdin)"}
	}
	var raw []byte
	if len(args) == 2 {
		raw = []byte(args[1])
		if args[1] == "-" {
			b, err := io.ReadAll(io.LimitReader(e.stdin, 64<<20))
			if err != nil {
				return err
			}
			raw = b
		}
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
