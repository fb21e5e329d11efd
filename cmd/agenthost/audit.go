package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/agenthost/agenthost/host/audit"
)

func auditCommand() command {
	return command{
		name: "audit", usage: "audit [--format text|json|markdown] [--fail-on low|medium|high]", summary: "requested vs granted capabilities, denials and risk flags per tool",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&e.format, "format", "text", "output format: text, json or markdown")
			fs.StringVar(&e.failOn, "fail-on", "", "exit 1 when a finding is at or above this `LEVEL`: low, medium or high")
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
	var gate audit.Severity
	if e.failOn != "" {
		s, err := audit.ParseSeverity(e.failOn)
		if err != nil {
			return usageError{"--fail-on: " + err.Error()}
		}
		gate = s
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	rep := h.Audit()
	if err := rep.Write(e.stdout, e.format); err != nil {
		return err
	}
	if gate != 0 {
		if found := rep.AtOrAbove(gate); len(found) > 0 {
			w := e.messages()
			fmt.Fprintf(w, "agenthost: audit: %d finding(s) at or above %s:\n", len(found), gate)
			for _, f := range found {
				fmt.Fprintf(w, "  %s\n", escapeText(f.String()))
			}
			return exitError{1}
		}
	}
	if len(h.Failures()) > 0 {
		return exitError{1}
	}
	return nil
}
