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
	return command{
		name: "mcp", serves: true, jsonOnly: true, usage: "mcp [--watch]",
		summary: "serve the catalogue as an MCP server on stdin/stdout (tools the policy allows, by wire name)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.watch, "watch", false, "reload when files under the toolpack folders change (clients get list_changed)")
		},
		run: runMCP,
	}
}

func runMCP(ctx context.Context, e *env, args []string) error {
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
	srv := mcp.New(h, mcp.Options{Name: "agenthost", Version: v.Version, Logger: e.log.Named("mcp")})
	defer srv.Close()
	if err := srv.RunStdio(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}
