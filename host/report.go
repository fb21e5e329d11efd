package host

import (
	"github.com/agenthost/agenthost/host/audit"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/runner/script"
)

// Audit builds the security reviewer's report: for every loaded tool (all
// versions) the requested against the granted capabilities, denials and
// risk flags; for every broken manifest its load error; and which kernel
// protections the script bridge can apply on this machine.
func (h *Host) Audit() audit.Report {
	var entries []audit.Entry
	for _, t := range h.reg.Tools() {
		for _, v := range h.reg.Versions(t.ToolID) {
			g := h.grant(v)
			e := audit.Entry{Tool: v, Grant: g, Path: v.Path}
			if v.Handler.Type == manifest.HandlerScript {
				for _, w := range script.Widenings(g) {
					e.Widenings = append(e.Widenings, w.String())
				}
			}
			entries = append(entries, e)
		}
	}
	for _, f := range h.reg.Failures() {
		entries = append(entries, audit.Entry{Path: f.Path, LoadError: f.Err})
	}
	var env audit.Environment
	for _, p := range script.Protections() {
		env.Protections = append(env.Protections, audit.Protection{Name: p.Name, Available: p.Available, Detail: p.Detail})
	}
	return audit.Build(entries, env)
}
