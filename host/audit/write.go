package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Output formats of Report.Write.
const (
	FormatText     = "text"
	FormatJSON     = "json"
	FormatMarkdown = "markdown"
)

// Write renders the report as "text", "json", "markdown" or "html".
func (r Report) Write(w io.Writer, format string) error {
	var err error
	switch format {
	case FormatText:
		err = r.writeText(w)
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(r)
	case FormatMarkdown:
		err = r.writeMarkdown(w)
	case FormatHTML:
		err = r.writeHTML(w)
	default:
		return fmt.Errorf("audit: unknown format %q (want text, json, markdown or html)", format)
	}
	if err != nil {
		return fmt.Errorf("audit: write %s: %w", format, err)
	}
	return nil
}

// errWriter keeps the first write error, so rendering code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// String formats the summary as one line: "3 tools, 1 denied, ...".
func (s Summary) String() string {
	return fmt.Sprintf("%d %s, %d denied, %d with denials, %d with risk flags, %d %s",
		s.Tools, plural(s.Tools, "tool", "tools"), s.Denied, s.WithDenials, s.WithRisks,
		s.LoadErrors, plural(s.LoadErrors, "load error", "load errors"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// String formats the handler as "wasm (extism)", "external-script
// (python)" or "service-method (svc.Method)".
func (h Handler) String() string {
	var extra []string
	for _, s := range []string{h.ABI, h.Language, h.Service} {
		if s != "" {
			extra = append(extra, s)
		}
	}
	if len(extra) == 0 {
		return h.Type
	}
	return h.Type + " (" + strings.Join(extra, ", ") + ")"
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "-"
	}
	return strings.Join(xs, ", ")
}

// granted formats granted limits; unlike LimitValues.String it names an
// unmetered fuel budget.
func granted(l LimitValues) string {
	s := l.String()
	if l.Fuel == 0 && s != "-" {
		s += ", fuel unmetered"
	}
	return s
}

func (t Tool) hostsGranted() string {
	s := list(t.Network.Granted)
	if t.Network.AllowPrivate {
		s += " (private addresses allowed)"
	}
	return s
}

func (r Report) writeText(w io.Writer) error {
	e := &errWriter{w: w}
	e.printf("agenthost audit: %s\n", r.Summary)
	for _, t := range r.Tools {
		e.printf("\n%s %s  %s\n", t.ID, t.Version, t.Handler)
		e.printf("  manifest:  %s\n", t.Path)
		if t.Handler.Module != "" {
			e.printf("  module:    %s\n", t.Handler.Module)
		}
		e.printf("  digest:    %s\n", cmpOr(t.Digest, "none"))
		e.printf("  workspace: %s\n", t.Workspace)
		if t.Denied {
			e.printf("  status:    DENIED by policy (every call is PERMISSION_DENIED)\n")
		}
		row := func(name, req, got string) {
			e.printf("  %-12s requested: %s\n  %-12s granted:   %s\n", name, req, "", got)
		}
		row("read", list(t.Files.Requested.Read), list(t.Files.Granted.Read))
		row("write", list(t.Files.Requested.Write), list(t.Files.Granted.Write))
		if len(t.Files.Requested.Mounts)+len(t.Files.Granted.Mounts) > 0 {
			row("mounts", list(t.Files.Requested.Mounts), list(t.Files.Granted.Mounts))
		}
		row("network", list(t.Network.Requested), t.hostsGranted())
		row("env", list(t.Env.Requested), list(t.Env.Granted))
		row("limits", t.Limits.Requested.String(), granted(t.Limits.Granted))
		if t.Reach != nil {
			e.printf("  calls:     %s\n", list(t.Calls))
			e.printf("  reach (the union of what the tools it calls were granted):\n")
			e.printf("    read: %s; write: %s; network: %s; env: %s\n", list(t.Reach.Read), list(t.Reach.Write), list(t.Reach.Network), list(t.Reach.Env))
			if len(t.Reach.Mounts) > 0 {
				e.printf("    mounts: %s\n", list(t.Reach.Mounts))
			}
			if len(t.Reach.Missing) > 0 {
				e.printf("    not loaded: %s\n", list(t.Reach.Missing))
			}
		}
		if h := t.History; h != nil {
			var codes []string
			for _, c := range slices.Sorted(maps.Keys(h.Codes)) {
				codes = append(codes, fmt.Sprintf("%s %d", c, h.Codes[c]))
			}
			e.printf("  history:   %d calls, %d failed (%s)\n", h.Calls, h.Failures, list(codes))
		}
		if len(t.Denials) > 0 {
			e.printf("  denials:\n")
			for _, d := range t.Denials {
				e.printf("    - %s %s: %s\n", d.Capability, d.Requested, d.Reason)
			}
		}
		if len(t.Risks) > 0 {
			e.printf("  risks:\n")
			for _, k := range t.Risks {
				e.printf("    ! %s: %s\n", k.Flag, k.Detail)
			}
		}
		if len(t.SchemaRewrites) > 0 {
			e.printf("  schema rewritten for model providers:\n")
			for _, w := range t.SchemaRewrites {
				e.printf("    ~ %s\n", w)
			}
		}
	}
	if len(r.LoadErrors) > 0 {
		e.printf("\nload errors:\n")
		for _, l := range r.LoadErrors {
			id := ""
			if l.ToolID != "" {
				id = " (" + l.ToolID + ")"
			}
			e.printf("  %s%s: %s\n", l.Path, id, l.Error)
		}
	}
	if len(r.Environment) > 0 {
		e.printf("\nisolation on this machine:\n")
		for _, p := range r.Environment {
			state := "unavailable"
			if p.Available {
				state = "available"
			}
			detail := ""
			if p.Detail != "" {
				detail = " (" + p.Detail + ")"
			}
			e.printf("  %-20s %s%s\n", p.Name, state, detail)
		}
	}
	return e.err
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// md escapes text for a Markdown table cell or list item.
func md(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "|", "\\|", "*", "\\*", "_", "\\_", "`", "\\`", "<", "&lt;", ">", "&gt;", "\n", " ", "[", "\\[", "]", "\\]", "#", "\\#")
	return r.Replace(s)
}

// mdCode renders s as inline code, or "-" when empty.
func mdCode(xs []string) string {
	if len(xs) == 0 {
		return "-"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = code(x)
	}
	return strings.Join(parts, ", ")
}

// code wraps s in a code span long enough not to be closed by s, with
// pipes escaped for tables.
func code(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", "\\|")
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

func (r Report) writeMarkdown(w io.Writer) error {
	e := &errWriter{w: w}
	e.printf("# agenthost audit\n\n%s.\n", md(r.Summary.String()))
	if len(r.Tools) > 0 {
		e.printf("\n| tool | version | handler | status | denials | risks |\n|---|---|---|---|---|---|\n")
		for _, t := range r.Tools {
			status := "granted"
			if t.Denied {
				status = "**denied**"
			}
			e.printf("| %s | %s | %s | %s | %d | %d |\n", code(t.ID), md(t.Version), md(t.Handler.String()), status, len(t.Denials), len(t.Risks))
		}
	}
	for _, t := range r.Tools {
		e.printf("\n## %s %s\n\n", code(t.ID), md(t.Version))
		e.printf("- manifest: %s\n", code(t.Path))
		e.printf("- handler: %s\n", md(t.Handler.String()))
		if t.Handler.Module != "" {
			e.printf("- module: %s\n", code(t.Handler.Module))
		}
		if t.Digest != "" {
			e.printf("- digest: %s\n", code(t.Digest))
		} else {
			e.printf("- digest: none\n")
		}
		e.printf("- workspace: %s\n", code(t.Workspace))
		if t.Denied {
			e.printf("- status: **denied by policy** (every call is PERMISSION\\_DENIED)\n")
		}
		e.printf("\n| capability | requested | granted |\n|---|---|---|\n")
		e.printf("| read | %s | %s |\n", mdCode(t.Files.Requested.Read), mdCode(t.Files.Granted.Read))
		e.printf("| write | %s | %s |\n", mdCode(t.Files.Requested.Write), mdCode(t.Files.Granted.Write))
		if len(t.Files.Requested.Mounts)+len(t.Files.Granted.Mounts) > 0 {
			e.printf("| mounts | %s | %s |\n", mdCode(t.Files.Requested.Mounts), mdCode(t.Files.Granted.Mounts))
		}
		hosts := mdCode(t.Network.Granted)
		if t.Network.AllowPrivate {
			hosts += " (private addresses allowed)"
		}
		e.printf("| network | %s | %s |\n", mdCode(t.Network.Requested), hosts)
		e.printf("| env | %s | %s |\n", mdCode(t.Env.Requested), mdCode(t.Env.Granted))
		e.printf("| limits | %s | %s |\n", md(t.Limits.Requested.String()), md(granted(t.Limits.Granted)))
		if len(t.Denials) > 0 {
			e.printf("\nDenials:\n\n")
			for _, d := range t.Denials {
				e.printf("- %s %s: %s\n", code(d.Capability), code(d.Requested), md(d.Reason))
			}
		}
		if len(t.Risks) > 0 {
			e.printf("\nRisks:\n\n")
			for _, k := range t.Risks {
				e.printf("- **%s**: %s\n", md(k.Flag), md(k.Detail))
			}
		}
		if len(t.SchemaRewrites) > 0 {
			e.printf("\nSchema rewritten for model providers:\n\n")
			for _, w := range t.SchemaRewrites {
				e.printf("- %s\n", md(w))
			}
		}
	}
	if len(r.LoadErrors) > 0 {
		e.printf("\n## Load errors\n\n| manifest | tool | error |\n|---|---|---|\n")
		for _, l := range r.LoadErrors {
			id := "-"
			if l.ToolID != "" {
				id = code(l.ToolID)
			}
			e.printf("| %s | %s | %s |\n", code(l.Path), id, md(l.Error))
		}
	}
	if len(r.Environment) > 0 {
		e.printf("\n## Isolation on this machine\n\n| protection | available | detail |\n|---|---|---|\n")
		for _, p := range r.Environment {
			e.printf("| %s | %s | %s |\n", md(p.Name), strconv.FormatBool(p.Available), md(p.Detail))
		}
	}
	return e.err
}
