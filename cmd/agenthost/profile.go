package main

import (
	"flag"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/profile"
)

// profileFlag registers --profile.
func profileFlag(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.profile, "profile", "", "an agent profile `FILE`: only the tools of its tool_ids_inventory (and, for run, its prompt, mode, limits and model)")
}

// loadProfile reads --profile; nil without one.
func (e *env) loadProfile() (*profile.Profile, error) {
	if e.profile == "" {
		return nil, nil
	}
	p, err := profile.Load(e.profile)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return p, nil
}

// visibleTools is what a model may call: every callable tool, or those of
// the profile's inventory (an entry matching none is a usage error).
func visibleTools(h *host.Host, p *profile.Profile) ([]*manifest.Tool, error) {
	tools := h.Tools(host.Query{})
	if p == nil {
		return tools, nil
	}
	ids := make([]string, len(tools))
	for i, t := range tools {
		ids[i] = t.ToolID
	}
	keep, err := p.Resolve(ids)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	in := map[string]bool{}
	for _, id := range keep {
		in[id] = true
	}
	var out []*manifest.Tool
	for _, t := range tools {
		if in[t.ToolID] {
			out = append(out, t)
		}
	}
	return out, nil
}
