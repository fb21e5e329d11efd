package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/host/audit"
	"github.com/agenthost/agenthost/host/store"
)

func auditCommand() command {
	return command{
		name: "audit", usage: "audit [--diff OLD] [--format text|json|markdown|html] [--fail-on low|medium|high]", summary: "requested vs granted capabilities, denials and risk flags per tool; --diff: what the toolpacks ask for beyond an older version",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&e.format, "format", "text", "output format: text, json, markdown or html (one self-contained page)")
			fs.StringVar(&e.storePath, "store", "", "add each tool's failure analytics from a serve history `DIR` (or database file)")
			fs.StringVar(&e.diff, "diff", "", "compare with the old version: a toolpack `DIR` or NAME.tar.gz, audited under the same policy")
			fs.StringVar(&e.failOn, "fail-on", "", "exit 1 when a finding is at or above this `LEVEL`: low, medium or high")
		},
		run: runAudit,
	}
}

func runAudit(ctx context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usageError{"audit takes no arguments"}
	}
	switch {
	case e.format == "text", e.format == "json", e.format == "markdown", e.format == "html":
	default:
		return usageError{"--format must be text, json, markdown or html"}
	}
	var gate audit.Severity
	if e.failOn != "" {
		s, err := audit.ParseSeverity(e.failOn)
		if err != nil {
			return usageError{"--fail-on: " + err.Error()}
		}
		gate = s
	}
	if e.diff != "" {
		return runAuditDiff(ctx, e, gate)
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	rep := h.Audit()
	if e.storePath != "" {
		if err := addHistory(ctx, &rep, e.storePath); err != nil {
			return err
		}
	}
	if err := rep.Write(e.stdout, e.format); err != nil {
		return err
	}
	if gate != 0 {
		if err := e.failGate("audit: %d finding(s)", gate, rep.AtOrAbove(gate)); err != nil {
			return err
		}
	}
	if len(h.Failures()) > 0 {
		return exitError{1}
	}
	return nil
}

// runAuditDiff audits the old version (--diff) and the current folders
// under one policy and writes what the new ones ask for beyond the old.
func runAuditDiff(ctx context.Context, e *env, gate audit.Severity) error {
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	cur := h.Audit()
	saved := e.dirs
	e.dirs = multiFlag{e.diff}
	old, err := e.newHost(ctx)
	e.dirs = saved
	if err != nil {
		return err
	}
	defer old.Close(ctx)
	d := audit.Diff(old.Audit(), cur, e.diff, strings.Join(e.toolDirs(), ", "))
	if err := d.Write(e.stdout, e.format); err != nil {
		return err
	}
	if gate != 0 {
		return e.failGate("audit --diff: %d change(s)", gate, d.AtOrAbove(gate))
	}
	return nil
}

// addHistory reads the failure analytics of every tenant from a serve
// history database.
func addHistory(ctx context.Context, rep *audit.Report, path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "agenthost.db")
	}
	if _, err := os.Stat(path); err != nil {
		return usageError{"--store: " + err.Error()}
	}
	st, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	stats, err := st.ToolStats(ctx, "")
	if err != nil {
		return err
	}
	counts := make([]audit.CallCount, len(stats))
	for i, s := range stats {
		counts[i] = audit.CallCount{Tool: s.Tool, Status: s.Status, Code: s.Code, Calls: s.Calls}
	}
	rep.AddHistory(counts)
	return nil
}

// failGate lists the findings at or above gate and exits 1 when there are
// any (what: "audit: %d finding(s)").
func (e *env) failGate(what string, gate audit.Severity, found []audit.Finding) error {
	if len(found) == 0 {
		return nil
	}
	w := e.messages()
	fmt.Fprintf(w, "agenthost: "+what+" at or above %s:\n", len(found), gate)
	for _, f := range found {
		fmt.Fprintf(w, "  %s\n", escapeText(f.String()))
	}
	return exitError{1}
}
