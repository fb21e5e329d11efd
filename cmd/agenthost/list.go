package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
)

func listCommand() command {
	return command{
		name: "list", usage: "list [--json] [--namespace NS] [--tag TAG]", summary: "list the loaded tools: id, version, handler, tags",
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
		tools = append(tools, listedTool{ID: t.ToolID, Version: t.Version, Handler: handler, DisplayName: t.DisplayName, Tags: tags})
	}
	if e.asJSON {
		return e.printJSON(tools)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tVERSION\tHANDLER\tTAGS")
	for _, t := range tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, t.Version, t.Handler, strings.Join(t.Tags, ","))
	}
	for _, f := range h.Failures() {
		fmt.Fprintf(e.stderr, "agenthost: failed to load %s: %s\n", f.Path, f.Err)
	}
	return tw.Flush()
}
