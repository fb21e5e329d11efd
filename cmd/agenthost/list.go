package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/agenthost/agenthost/host/registry"
)

func listCommand() command {
	return command{
		name: "list", usage: "list [--json] [--namespace NS] [--tag TAG]", summary: "list the tools: id, version, handler, tags; denied tools and load errors marked (exit 1 on a load error)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.asJSON, "json", false, "print JSON")
			fs.StringVar(&e.namespace, "namespace", "", "only tools in this namespace")
			fs.StringVar(&e.tag, "tag", "", "only tools with this tag")
		},
		run: runList,
	}
}

type listedTool struct {
	ID          string   `json:"id"`
	Version     string   `json:"version"`
	Handler     string   `json:"handler"`
	DisplayName string   `json:"displayName"`
	Tags        []string `json:"tags"`
	// Status is "ok", "denied" (the policy denies the tool) or "load error".
	Status string `json:"status"`
	// Error is the load error, when Status is "load error".
	Error string `json:"error,omitempty"`
	// Path is the manifest of a tool that failed to load.
	Path string `json:"path,omitempty"`
}

func runList(ctx context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usageError{"list takes no arguments"}
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	tools := []listedTool{}
	for _, t := range h.Filter(e.namespace, e.tag) {
		handler := t.Handler.Type
		switch {
		case t.Handler.ABI != "":
			handler += "/" + t.Handler.ABI
		case t.Handler.Language != "":
			handler += "/" + t.Handler.Language
		}
		tags := t.Tags
		if tags == nil {
			tags = []string{}
		}
		status := "ok"
		if g, err := h.Grant(t.ToolID + "@" + t.Version); err == nil && g.Denied {
			status = "denied"
		}
		tools = append(tools, listedTool{ID: t.ToolID, Version: t.Version, Handler: handler, DisplayName: t.DisplayName, Tags: tags, Status: status})
	}
	for _, f := range h.Failures() {
		if e.namespace != "" || e.tag != "" {
			break
		}
		tools = append(tools, listedTool{ID: f.ToolID, Handler: "-", Tags: []string{}, Status: "load error", Error: f.Err.Error(), Path: f.Path})
	}
	if e.asJSON {
		if err := e.printJSON(tools); err != nil {
			return err
		}
		return failedLoads(h)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tVERSION\tHANDLER\tTAGS\tSTATUS")
	for _, t := range tools {
		id := t.ID
		if id == "" {
			id = t.Path
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, t.Version, t.Handler, strings.Join(t.Tags, ","), t.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return failedLoads(h)
}

// failedLoads is exit 1 when any manifest failed to load.
func failedLoads(h interface{ Failures() []registry.Failure }) error {
	if len(h.Failures()) > 0 {
		return exitError{1}
	}
	return nil
}
