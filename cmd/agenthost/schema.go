package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/host/wire"
)

func schemaCommand() command {
	return command{
		name: "schema", jsonOnly: true, usage: "schema --format openai|anthropic|mcp|gemini [--profile FILE]",
		summary: "print the tool definitions for native tool calling (wire names), only the tools a model may call",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&e.format, "format", "", "`FORMAT`: openai, anthropic, mcp or gemini")
			profileFlag(fs, e)
		},
		run: runSchema,
	}
}

func runSchema(ctx context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usageError{"schema takes no arguments"}
	}
	known := false
	for _, f := range wire.Formats {
		known = known || f == e.format
	}
	if !known {
		return usageError{fmt.Sprintf("--format must be one of %s", strings.Join(wire.Formats, ", "))}
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
	var defs []wire.Def
	for _, t := range tools {
		defs = append(defs, wire.Def{ID: t.ToolID, Title: t.DisplayName, Description: t.Description, Parameters: t.Parameters, Output: t.Output})
	}
	out, err := wire.Export(e.format, defs)
	if err != nil {
		return err
	}
	return e.printJSON(out)
}
