package host

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/registry"
	"github.com/agenthost/agenthost/host/runner/mcpclient"
	"github.com/agenthost/agenthost/host/runner/script"
	"github.com/agenthost/agenthost/host/wire"
)

// startMCP builds the runner of imported tools when the policy names MCP
// servers: their pins come from the lock file beside the policy.
func (h *Host) startMCP(sr *script.Runner) error {
	if len(h.policy.MCPServers) == 0 {
		return nil
	}
	lock, err := mcpclient.ReadLock(mcpclient.LockPath(h.policy.Source()))
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	h.mcpLock = lock
	h.mcp = mcpclient.New(mcpclient.Options{
		Policy: h.policy, Lock: lock, Spawn: sr.Spawn, Logger: h.log.Named("mcp"),
		Protected: append([]string{h.policy.Source(), mcpclient.LockPath(h.policy.Source())}, h.opts.Protected...),
		Grant: func(server string) *policy.Grant {
			return h.policy.Grant(mcpServerTool(h.policy, server), h.opts.LookupEnv)
		},
	})
	h.runners[manifest.HandlerMCP] = h.mcp
	// First: the servers' processes run under the script runner, whose
	// Close removes their scratch folders.
	h.closers = append([]func(context.Context) error{func(context.Context) error { return h.mcp.Close() }}, h.closers...)
	return nil
}

// mcpServerTool stands for a server's process in grant computations: its
// securityContext, its folder as $TOOL, and the ID mcp:<server> (so the
// policy's tools section may override it).
func mcpServerTool(p *policy.Policy, server string) *manifest.Tool {
	cfg := p.MCPServers[server]
	return &manifest.Tool{ToolID: manifest.NamespaceMCP + ":" + server, Dir: cfg.Cwd, SecurityContext: cfg.SecurityContext}
}

// MCPDefinitions starts (or reaches) the MCP server and returns its tool
// definitions as it offers them now, for pinning and diffs.
func (h *Host) MCPDefinitions(ctx context.Context, server string) ([]mcpclient.Definition, error) {
	if h.mcp == nil {
		return nil, fmt.Errorf("the policy names no MCP server")
	}
	_, defs, stop, err := h.mcp.Connect(ctx, server)
	if err != nil {
		return nil, err
	}
	stop()
	return defs, nil
}

// importedTools builds the manifests of the pinned tools of every MCP
// server of the policy. A server without pins is a failure saying how to
// pin it.
func (h *Host) importedTools() ([]*manifest.Tool, []registry.Failure) {
	if h.mcp == nil {
		return nil, nil
	}
	var tools []*manifest.Tool
	var failures []registry.Failure
	lockPath := mcpclient.LockPath(h.policy.Source())
	for _, name := range slices.Sorted(maps.Keys(h.policy.MCPServers)) {
		cfg := h.policy.MCPServers[name]
		pins := h.mcpLock.Servers[name]
		if len(pins) == 0 {
			failures = append(failures, registry.Failure{Path: lockPath, ToolID: manifest.NamespaceMCP + ":" + name,
				Err: &manifest.Error{Path: lockPath, Reason: fmt.Sprintf("the MCP server %s has no pinned tools: review them and run agenthost mcp-import pin %s", name, name)}})
			continue
		}
		var names []string
		for n := range pins {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			d := pins[n].Definition
			var ann struct {
				Idempotent bool `json:"idempotentHint"`
			}
			_ = json.Unmarshal(d.Annotations, &ann)
			t, err := manifest.Imported(name, d.Name, d.Title, d.Description, d.InputSchema, d.OutputSchema, cfg.SecurityContext, ann.Idempotent)
			if err != nil {
				failures = append(failures, registry.Failure{Path: lockPath, Err: err})
				continue
			}
			t.Path, t.Dir = lockPath+"#"+name+"/"+d.Name, cfg.Cwd
			tools = append(tools, t)
		}
	}
	return dropColliding(tools, failures)
}

// dropColliding leaves out the imported tools whose wire names collide
// (a.b and a_b of one server, or s.a_b and s_a.b of two): a model or an
// MCP client could not tell them apart, and one such pair would fail
// every agent run and schema export. Each is a load failure naming all.
func dropColliding(tools []*manifest.Tool, failures []registry.Failure) ([]*manifest.Tool, []registry.Failure) {
	ids := make([]string, len(tools))
	for i, t := range tools {
		ids[i] = t.ToolID
	}
	clash := wire.Collisions(ids)
	if len(clash) == 0 {
		return tools, failures
	}
	kept := tools[:0:0]
	for _, t := range tools {
		n := wire.Name(t.ToolID)
		group, ok := clash[n]
		if !ok {
			kept = append(kept, t)
			continue
		}
		failures = append(failures, registry.Failure{Path: t.Path, ToolID: t.ToolID,
			Err: &manifest.Error{Path: t.Path, Reason: fmt.Sprintf("the tools %s share the wire name %q (what models and MCP clients call them), so none of them loads; rename one on its server or remove the server", strings.Join(group, " and "), n)}})
	}
	return kept, failures
}
