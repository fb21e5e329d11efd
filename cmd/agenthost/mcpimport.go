package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/host/runner/mcpclient"
	"github.com/agenthost/agenthost/internal/unidiff"
)

func mcpImportCommand() command {
	return command{
		name: "mcp-import", usage: "mcp-import pin|diff [--json] [SERVER...]",
		summary: "pin the tool definitions of the policy's MCP servers (a lock file beside the policy), or show what changed since: the whole old and new text of each changed field as a unified diff (diff exits 1)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.asJSON, "json", false, "print the changes as JSON (diff)")
		},
		run: runMCPImport,
	}
}

// toolChange is one tool whose live definition differs from its pin.
type toolChange struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Change is "added" (not pinned), "removed" (pinned, no longer
	// served) or "changed".
	Change string        `json:"change"`
	Fields []fieldChange `json:"fields"`
}

// fieldChange is one field of a definition: the whole pinned and live
// text (schemas as indented JSON), and the unified diff between them.
type fieldChange struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
	Diff  string `json:"diff"`
}

func runMCPImport(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || (args[0] != "pin" && args[0] != "diff") {
		return usageError{"mcp-import takes pin or diff, then optionally server names"}
	}
	if e.policy == "" {
		return usageError{"mcp-import needs --policy (the policy's mcpServers, and the lock file beside it)"}
	}
	h, err := e.newHostNoDirs(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	servers := args[1:]
	if len(servers) == 0 {
		servers = slices.Sorted(maps.Keys(h.Policy().MCPServers))
	}
	if len(servers) == 0 {
		return usageError{"the policy names no MCP server (mcpServers)"}
	}
	path := mcpclient.LockPath(h.Policy().Source())
	lock, err := mcpclient.ReadLock(path)
	if err != nil {
		return err
	}
	changes := []toolChange{}
	for _, name := range servers {
		defs, err := h.MCPDefinitions(ctx, name)
		if err != nil {
			return err
		}
		if args[0] == "pin" {
			lock.Pin(name, defs)
			fmt.Fprintf(e.stdout, "pinned %d tools of %s\n", len(defs), name)
			continue
		}
		changes = append(changes, diffServer(name, lock.Servers[name], defs)...)
	}
	if args[0] == "pin" {
		if err := lock.Write(path); err != nil {
			return err
		}
		fmt.Fprintf(e.messages(), "agenthost: wrote %s\n", path)
		return nil
	}
	if e.asJSON {
		if err := e.printJSON(changes); err != nil {
			return err
		}
	} else {
		printChanges(e, changes)
	}
	if len(changes) > 0 {
		return exitError{1}
	}
	return nil
}

// diffServer compares a server's pins with its live definitions, tool by
// tool (sorted by name).
func diffServer(server string, pinned map[string]mcpclient.Pinned, live []mcpclient.Definition) []toolChange {
	var out []toolChange
	seen := map[string]bool{}
	for _, d := range live {
		seen[d.Name] = true
		p, ok := pinned[d.Name]
		switch {
		case !ok:
			out = append(out, toolChange{server, d.Name, "added", fieldChanges(mcpclient.Definition{}, d)})
		case p.SHA256 != d.Hash():
			out = append(out, toolChange{server, d.Name, "changed", fieldChanges(p.Definition, d)})
		}
	}
	for name, p := range pinned {
		if !seen[name] {
			out = append(out, toolChange{server, name, "removed", fieldChanges(p.Definition, mcpclient.Definition{})})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// fieldChanges are the fields of two definitions that differ, each with
// its whole old and new text and their diff (every line as context: a
// reviewer sees the whole text, never a cut).
func fieldChanges(a, b mcpclient.Definition) []fieldChange {
	var out []fieldChange
	for _, f := range []struct {
		name     string
		old, new string
	}{
		{"title", a.Title, b.Title},
		{"description", a.Description, b.Description},
		{"inputSchema", jsonText(a.InputSchema), jsonText(b.InputSchema)},
		{"outputSchema", jsonText(a.OutputSchema), jsonText(b.OutputSchema)},
		{"annotations", jsonText(a.Annotations), jsonText(b.Annotations)},
	} {
		if f.old == f.new {
			continue
		}
		old, cur := lines(f.old), lines(f.new)
		all := strings.Count(old, "\n") + strings.Count(cur, "\n")
		res, ok := unidiff.Unified(old, cur, f.name+" (pinned)", f.name+" (live)", all, all)
		diff := res.Diff
		if !ok {
			diff = "" // cannot happen: the limit is every line
		}
		out = append(out, fieldChange{Field: f.name, Old: f.old, New: f.new, Diff: diff})
	}
	return out
}

// jsonText is a schema or annotations as indented JSON with sorted keys,
// so that a diff compares values, not spelling; "" for none.
func jsonText(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// lines ends a non-empty text with a newline, so that a diff of two
// texts does not report a missing final newline the reviewer never saw.
func lines(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// printChanges writes the changes for a reviewer: one line per tool, then
// each changed field's unified diff.
func printChanges(e *env, changes []toolChange) {
	if len(changes) == 0 {
		fmt.Fprintln(e.stdout, "no change since the pins")
		return
	}
	for _, c := range changes {
		fields := make([]string, len(c.Fields))
		for i, f := range c.Fields {
			fields[i] = f.Field
		}
		switch c.Change {
		case "added":
			fmt.Fprintf(e.stdout, "+ %s.%s: new tool (not pinned)\n", c.Server, c.Tool)
		case "removed":
			fmt.Fprintf(e.stdout, "- %s.%s: removed\n", c.Server, c.Tool)
		default:
			fmt.Fprintf(e.stdout, "~ %s.%s: changed %s\n", c.Server, c.Tool, strings.Join(fields, ", "))
		}
		for _, f := range c.Fields {
			for _, line := range strings.SplitAfter(strings.TrimSuffix(f.Diff, "\n"), "\n") {
				fmt.Fprintln(e.stdout, "    "+escapeText(strings.TrimSuffix(line, "\n")))
			}
		}
	}
}
