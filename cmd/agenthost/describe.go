package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
)

func describeCommand() command {
	return command{
		name: "describe", usage: "describe ID [--json]", summary: "show a tool's manifest and effective grant",
		flags: func(fs *flag.FlagSet, e *env) { fs.BoolVar(&e.asJSON, "json", false, "print JSON") },
		run:   runDescribe,
	}
}

type description struct {
	Manifest *manifest.Tool `json:"manifest"`
	Path     string         `json:"path"`
	Digest   string         `json:"digest,omitempty"`
	Grant    *policy.Grant  `json:"grant"`
	// Limits are the grant's limits in human units ("10s", "256 MiB").
	Limits humanLimits `json:"limits"`
}

// humanLimits renders policy.Limits for people: durations and sizes with
// units instead of nanoseconds and bytes.
type humanLimits struct {
	Timeout   string `json:"timeout"`
	Memory    string `json:"memory"`
	MaxOutput string `json:"maxOutput"`
	Fuel      string `json:"fuel"`
}

func limitsOf(l policy.Limits) humanLimits {
	fuel := "not metered"
	if l.Fuel > 0 {
		fuel = fmt.Sprintf("%d", l.Fuel)
	}
	return humanLimits{Timeout: l.Timeout.String(), Memory: bytesHuman(int64(l.MemoryBytes)), MaxOutput: bytesHuman(l.MaxOutputBytes), Fuel: fuel}
}

// bytesHuman prints n in the largest binary unit that divides it, or in
// bytes.
func bytesHuman(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

func runDescribe(ctx context.Context, e *env, args []string) error {
	if len(args) != 1 {
		return usageError{"describe takes one tool ID"}
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	t, err := h.Tool(args[0])
	if err != nil {
		var ae *abi.Error
		if errors.As(err, &ae) && ae.Code == abi.CodeUnknownTool {
			return usageError{ae.Message}
		}
		return err
	}
	g, err := h.Grant(t.ToolID + "@" + t.Version)
	if err != nil {
		return err
	}
	d := description{Manifest: t, Path: t.Path, Digest: t.Digest(), Grant: g, Limits: limitsOf(g.Limits)}
	if e.asJSON {
		return e.printJSON(d)
	}
	fmt.Fprintf(e.stdout, "%s %s — %s\n%s\n\nmanifest: %s\nhandler:  %s", t.ToolID, t.Version, t.DisplayName, t.Description, t.Path, t.Handler.Type)
	if t.Handler.ABI != "" {
		fmt.Fprintf(e.stdout, " (%s)", t.Handler.ABI)
	}
	fmt.Fprintln(e.stdout)
	if len(t.Parameters) > 0 {
		fmt.Fprintf(e.stdout, "parameters: %s\n", compactJSON(t.Parameters))
	}
	fmt.Fprintln(e.stdout, "\neffective grant:")
	writeGrant(e.stdout, g, d.Limits)
	return nil
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// writeGrant prints a grant as aligned lines a reviewer can scan.
func writeGrant(w io.Writer, g *policy.Grant, l humanLimits) {
	if g.Denied {
		fmt.Fprintln(w, "  DENIED by the policy")
	}
	paths := func(rules []policy.PathRule) string {
		var out []string
		for _, r := range rules {
			out = append(out, fmt.Sprintf("%s:%s", r.Root, r.Pattern))
		}
		return orNone(out)
	}
	var hosts []string
	for _, h := range g.Hosts {
		hosts = append(hosts, h.String())
	}
	fmt.Fprintf(w, "  read:     %s\n", paths(g.Read))
	fmt.Fprintf(w, "  write:    %s\n", paths(g.Write))
	fmt.Fprintf(w, "  network:  %s\n", orNone(hosts))
	fmt.Fprintf(w, "  env:      %s\n", orNone(g.EnvNames))
	fmt.Fprintf(w, "  limits:   timeout %s, memory %s, output %s, fuel %s\n", l.Timeout, l.Memory, l.MaxOutput, l.Fuel)
	for _, d := range g.Denials {
		fmt.Fprintf(w, "  denied:   %s %s: %s\n", d.Capability, d.Requested, d.Reason)
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
