package audit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Change is one thing a new version of a toolpack asks for, or is granted,
// beyond the old one.
type Change struct {
	Tool     string   `json:"tool"`
	Severity Severity `json:"-"`
	Level    string   `json:"severity"`
	Kind     string   `json:"kind"`
	What     string   `json:"what"`
}

// DiffReport is what changed from one audit (the old toolpacks) to
// another (the new), tool by tool.
type DiffReport struct {
	Old     string   `json:"old"`
	New     string   `json:"new"`
	Changes []Change `json:"changes"`
}

// Change kinds.
const (
	KindNewTool     = "new tool"
	KindRemovedTool = "removed tool"
	KindHandler     = "handler"
	KindHost        = "network host"
	KindWrite       = "write path"
	KindRead        = "read path"
	KindMount       = "mount"
	KindEnv         = "env"
	KindLimit       = "limit raised"
	KindImport      = "import"
	KindCode        = "code changed"
	KindDenied      = "no longer denied"
	KindLoadError   = "load error"
)

// Diff compares two audits under one policy: for each tool (its highest
// version on each side), what the new one requests and is granted beyond
// the old: new tools, handler changes, hosts, write and read paths,
// mounts, env names, raised limits, new imports, and changed code. High:
// a new tool that can write, reach the network or read secrets, a handler
// change, a new host, write path, mount, env name, or a socket or HTTP
// import. Medium: a new tool otherwise, a new read path, a raised limit.
// Low: changed code, other imports, a removed tool.
func Diff(old, cur Report, oldName, curName string) DiffReport {
	d := DiffReport{Old: oldName, New: curName, Changes: []Change{}}
	add := func(tool string, s Severity, kind, format string, args ...any) {
		d.Changes = append(d.Changes, Change{Tool: tool, Severity: s, Level: s.String(), Kind: kind, What: fmt.Sprintf(format, args...)})
	}
	before := latest(old)
	after := latest(cur)
	for _, id := range sortedIDs(after) {
		n := after[id]
		o, ok := before[id]
		if !ok {
			s := SeverityMedium
			if len(n.Files.Granted.Write)+len(n.Network.Granted)+len(n.Env.Granted)+len(n.Files.Granted.Mounts) > 0 {
				s = SeverityHigh
			}
			add(id, s, KindNewTool, "%s %s (%s): write %s; network %s; env %s", id, n.Version, n.Handler, list(n.Files.Granted.Write), list(n.Network.Granted), list(n.Env.Granted))
			continue
		}
		if n.Handler.String() != o.Handler.String() {
			add(id, SeverityHigh, KindHandler, "%s → %s", o.Handler, n.Handler)
		}
		if o.Denied && !n.Denied {
			add(id, SeverityHigh, KindDenied, "the policy denied %s %s; it now runs", id, o.Version)
		}
		for _, h := range added(o.Network.Granted, n.Network.Granted) {
			add(id, SeverityHigh, KindHost, "%s", h)
		}
		for _, p := range added(o.Files.Granted.Write, n.Files.Granted.Write) {
			add(id, SeverityHigh, KindWrite, "%s", p)
		}
		for _, m := range added(o.Files.Granted.Mounts, n.Files.Granted.Mounts) {
			add(id, SeverityHigh, KindMount, "%s", m)
		}
		for _, e := range added(o.Env.Granted, n.Env.Granted) {
			add(id, SeverityHigh, KindEnv, "%s", e)
		}
		for _, p := range added(o.Files.Granted.Read, n.Files.Granted.Read) {
			add(id, SeverityMedium, KindRead, "%s", p)
		}
		ol, nl := o.Limits.Granted, n.Limits.Granted
		if nl.TimeoutMs > ol.TimeoutMs {
			add(id, SeverityMedium, KindLimit, "timeoutMs %d → %d", ol.TimeoutMs, nl.TimeoutMs)
		}
		if nl.MemoryMb > ol.MemoryMb {
			add(id, SeverityMedium, KindLimit, "memoryMb %d → %d", ol.MemoryMb, nl.MemoryMb)
		}
		if nl.MaxOutputBytes > ol.MaxOutputBytes {
			add(id, SeverityMedium, KindLimit, "maxOutputBytes %d → %d", ol.MaxOutputBytes, nl.MaxOutputBytes)
		}
		if ol.Fuel > 0 && (nl.Fuel == 0 || nl.Fuel > ol.Fuel) {
			to := fmt.Sprint(nl.Fuel)
			if nl.Fuel == 0 {
				to = "unmetered"
			}
			add(id, SeverityMedium, KindLimit, "fuel %d → %s", ol.Fuel, to)
		}
		for _, im := range added(o.Imports, n.Imports) {
			s := SeverityLow
			if strings.HasPrefix(im, "wasi_snapshot_preview1.sock_") || im == "extism:host/env.http_request" {
				s = SeverityHigh
			}
			add(id, s, KindImport, "%s", im)
		}
		if n.Digest != o.Digest || n.DepsDigest != o.DepsDigest {
			add(id, SeverityLow, KindCode, "%s %s → %s %s (%s → %s)", id, o.Version, id, n.Version, cmpOr(o.Digest, "none"), cmpOr(n.Digest, "none"))
		}
	}
	for _, id := range sortedIDs(before) {
		if _, ok := after[id]; !ok {
			add(id, SeverityLow, KindRemovedTool, "%s %s", id, before[id].Version)
		}
	}
	oldErrs := map[string]bool{}
	for _, l := range old.LoadErrors {
		oldErrs[l.ToolID+"|"+l.Error] = true
	}
	for _, l := range cur.LoadErrors {
		if !oldErrs[l.ToolID+"|"+l.Error] {
			add(cmpOr(l.ToolID, l.Path), SeverityHigh, KindLoadError, "%s", l.Error)
		}
	}
	slices.SortStableFunc(d.Changes, func(a, b Change) int {
		return cmp.Or(cmp.Compare(b.Severity, a.Severity), cmp.Compare(a.Tool, b.Tool))
	})
	return d
}

// AtOrAbove lists the changes ranked min or higher.
func (d DiffReport) AtOrAbove(min Severity) []Finding {
	var out []Finding
	for _, c := range d.Changes {
		if c.Severity >= min {
			out = append(out, Finding{Tool: c.Tool, Severity: c.Severity, What: c.Kind + ": " + c.What})
		}
	}
	return out
}

// latest maps each tool ID to its highest version (Tools is sorted by
// ID, then version).
func latest(r Report) map[string]Tool {
	m := map[string]Tool{}
	for _, t := range r.Tools {
		m[t.ID] = t
	}
	return m
}

func sortedIDs(m map[string]Tool) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// added returns what b holds and a does not, in b's order.
func added(a, b []string) []string {
	var out []string
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}
