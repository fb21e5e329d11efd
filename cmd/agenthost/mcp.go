package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/agenthost/agenthost/host/mcp"
)

func mcpCommand() command {
	var codeMode bool
	return command{
		name: "mcp", serves: true, jsonOnly: true, usage: "mcp [--watch] [--code-mode]",
		summary: "serve the catalogue as an MCP server on stdin/stdout (tools the policy allows, by wire name)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.watch, "watch", false, "reload when files under the toolpack folders change (clients get list_changed)")
			fs.BoolVar(&codeMode, "code-mode", false, "also serve run_code (a program that calls the tools as functions, through code:js or code:starlark) and search_tools (docs/CODEMODE.md)")
		},
		run: func(ctx context.Context, e *env, args []string) error { return runMCP(ctx, e, args, codeMode) },
	}
}

func runMCP(ctx context.Context, e *env, args []string, codeMode bool) error {
	if len(args) != 0 {
		return usageError{"mcp takes no arguments"}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(context.Background())
	if e.watch {
		go func() {
			if err := h.Watch(ctx, 0, nil); err != nil {
				e.log.Warn("watch", "error", err)
			}
		}()
	}
	v := buildVersion()
	srv := mcp.New(h, mcp.Options{Name: "agenthost", Version: v.Version, Logger: e.log.Named("mcp"), CodeMode: codeMode})
	defer srv.Close()
	if err := srv.RunStdio(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}
