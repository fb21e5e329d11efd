package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/agenthost/agenthost/host/prompt"
)

func promptCommand() command {
	return command{
		name: "prompt", usage: "prompt [--compact]", summary: "print the system-prompt block: tool catalogue and ACTION protocol",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.compact, "compact", false, "fewer tokens: no examples, one line per parameter")
		},
		run: runPrompt,
	}
}

func runPrompt(ctx context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usageError{"prompt takes no arguments"}
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	_, err = fmt.Fprint(e.stdout, prompt.Render(h.Tools(), prompt.Options{Compact: e.compact}))
	return err
}
