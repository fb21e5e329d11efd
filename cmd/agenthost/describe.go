package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
)

func describeCommand() command {
	return command{
		name: "describe", usage: "describe ID [--json]", summary: "show a tool's manifest and effective grant",
		flags: func(fs *flag.FlagSet, e *env) { fs.BoolVar(&e.asJSON, "json", false, "print JSON") },
		run:   runDescribe,
	}
}

type description struct {
	Manifest *manifest.Tool `json:"manifest"`
	Path     string         `json:"path"`
	Digest   string         `json:"digest,omitempty"`
	Grant    *policy.Grant  `json:"grant"`
}

func runDescribe(ctx context.Context, e *env, args []string) error {
	if len(args) != 1 {
		return usageError{"describe takes one tool ID"}
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	t, err := h.Tool(args[0])
	if err != nil {
		var ae *abi.Error
		if errors.As(err, &ae) && ae.Code == abi.CodeUnknownTool {
			return usageError{ae.Message}
		}
		return err
	}
	g, err := h.Grant(t.ToolID + "@" + t.Version)
	if err != nil {
		return err
	}
	d := description{Manifest: t, Path: t.Path, Digest: t.Digest(), Grant: g}
	if e.asJSON {
		return e.printJSON(d)
	}
	fmt.Fprintf(e.stdout, "%s %s — %s\n%s\n\nmanifest: %s\nhandler:  %s", t.ToolID, t.Version, t.DisplayName, t.Description, t.Path, t.Handler.Type)
	if t.Handler.ABI != "" {
		fmt.Fprintf(e.stdout, " (%s)", t.Handler.ABI)
	}
	fmt.Fprintln(e.stdout)
	if len(t.Parameters) > 0 {
		fmt.Fprintf(e.stdout, "parameters: %s\n", compactJSON(t.Parameters))
	}
	fmt.Fprintln(e.stdout, "\neffective grant:")
	b, _ := json.MarshalIndent(g, "  ", "  ")
	fmt.Fprintf(e.stdout, "  %s\n", b)
	return nil
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
