package main

import (
	"context"
	"errors"
	"io"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/action"
)

func parseCommand() command {
	return command{
		name: "parse", jsonOnly: true, usage: "parse < output.txt", summary: "parse LLM output on stdin and print the calls (uncoerced)",
		run: runParse,
	}
}

type parseFailure struct {
	Error *abi.Error `json:"error"`
}

func runParse(ctx context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usageError{"parse reads LLM output from stdin and takes no arguments"}
	}
	in, err := io.ReadAll(e.stdin)
	if err != nil {
		return err
	}
	res, err := action.Parse(string(in), action.Options{})
	if err != nil {
		var ae *abi.Error
		if !errors.As(err, &ae) {
			ae = abi.Errorf(abi.CodeInternal, "%s", err.Error())
		}
		if perr := e.printJSON(parseFailure{ae}); perr != nil {
			return perr
		}
		return exitError{1}
	}
	if res.Calls == nil {
		res.Calls = []action.Call{}
	}
	return e.printJSON(res)
}
