package main

import (
	"context"
	"flag"
)

func auditCommand() command {
	return command{
		name: "audit", usage: "audit [--format text|json|markdown]", summary: "requested vs granted capabilities, denials and risk flags per tool",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&e.format, "format", "text", "output format: text, json or markdown")
		},
		run: runAudit,
	}
}

func runAudit(ctx context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usageError{"audit takes no arguments"}
	}
	switch e.format {
	case "text", "json", "markdown":
	default:
		return usageError{"--format must be text, json or markdown"}
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	if err := h.Audit().Write(e.stdout, e.format); err != nil {
		return err
	}
	if len(h.Failures()) > 0 {
		return exitError{1}
	}
	return nil
}
