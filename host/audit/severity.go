package audit

import (
	"fmt"
	"strings"
)

// Severity ranks a finding for a CI gate: a report fails a gate of level L
// when it holds a finding at L or above.
type Severity int

// Severities, lowest first.
const (
	SeverityLow Severity = iota + 1
	SeverityMedium
	SeverityHigh
)

func (s Severity) String() string {
	switch s {
	case SeverityLow:
		return "low"
	case SeverityMedium:
		return "medium"
	case SeverityHigh:
		return "high"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// ParseSeverity reads "low", "medium" or "high".
func ParseSeverity(s string) (Severity, error) {
	switch strings.ToLower(s) {
	case "low":
		return SeverityLow, nil
	case "medium":
		return SeverityMedium, nil
	case "high":
		return SeverityHigh, nil
	}
	return 0, fmt.Errorf("severity %q: want low, medium or high", s)
}

// SeverityOf ranks a risk flag. High: the tool can change the workspace,
// reach private addresses, read secrets or run without kernel isolation, or
// its module is not pinned. Medium: network access, wildcard hosts, rules
// enforced coarser than granted, unmetered long runs, native code (scripts). Low: everything else
// (reading the whole workspace).
func SeverityOf(flag string) Severity {
	switch flag {
	case RiskWorkspaceWrite, RiskPrivate, RiskSecrets, RiskDegraded, RiskUnpinned:
		return SeverityHigh
	case RiskNetwork, RiskWildcardHost, RiskWidened, RiskNoFuel, RiskNativeCode, RiskImportsSockets, RiskImportsHTTP:
		return SeverityMedium
	}
	return SeverityLow
}

// Finding is one reason a report fails a gate.
type Finding struct {
	Tool     string   `json:"tool"`
	Severity Severity `json:"-"`
	What     string   `json:"what"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s (%s)", f.Tool, f.What, f.Severity)
}

// AtOrAbove lists the findings of r ranked min or higher: each risk flag by
// [SeverityOf], each denial (the tool asked for more than the policy
// allows) as medium, a tool the policy denies outright as low, and each
// manifest that failed to load as high.
func (r *Report) AtOrAbove(min Severity) []Finding {
	var out []Finding
	add := func(tool string, s Severity, what string) {
		if s >= min {
			out = append(out, Finding{Tool: tool, Severity: s, What: what})
		}
	}
	for _, t := range r.Tools {
		if t.Denied {
			add(t.ID, SeverityLow, "denied by the policy")
			continue
		}
		for _, d := range t.Denials {
			add(t.ID, SeverityMedium, fmt.Sprintf("denied %s %s", d.Capability, d.Requested))
		}
		for _, k := range t.Risks {
			add(t.ID, SeverityOf(k.Flag), k.Flag+": "+k.Detail)
		}
	}
	for _, l := range r.LoadErrors {
		add(l.Path, SeverityHigh, "failed to load")
	}
	return out
}
