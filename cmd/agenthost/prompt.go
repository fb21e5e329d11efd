package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/agenthost/agenthost/host/prompt"
)

func promptCommand() command {
	return command{
		name: "prompt", usage: "prompt [--compact] [--profile FILE] [--json]", summary: "print the system-prompt block: tool catalogue and ACTION protocol",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.compact, "compact", false, "fewer tokens: no examples, one line per parameter")
			fs.BoolVar(&e.asJSON, "json", false, `print {"prompt": "...", "tools": [IDs]}`)
			profileFlag(fs, e)
		},
		run: runPrompt,
	}
}

func runPrompt(ctx context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usageError{"prompt takes no arguments"}
	}
	prof, err := e.loadProfile()
	if err != nil {
		return err
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	tools, err := visibleTools(h, prof)
	if err != nil {
		return err
	}
	text := prompt.Render(tools, prompt.Options{Compact: e.compact})
	if e.asJSON {
		ids := make([]string, len(tools))
		for i, t := range tools {
			ids[i] = t.ToolID
		}
		return e.printJSON(struct {
			Prompt string   `json:"prompt"`
			Tools  []string `json:"tools"`
		}{text, ids})
	}
	_, err = fmt.Fprint(e.stdout, text)
	return err
}
