package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/manifest"
)

func testCommand() command {
	return command{
		name: "test", usage: "test DIR... [--json]", summary: "run every manifest example of the tools under DIR as a test suite, with its fixtures; prints N passed, M failed, K skipped",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.asJSON, "json", false, "print JSON: every failure and skip, passed, failed and skipped counts")
		},
		run: runTest,
	}
}

// runTest loads DIR... under the policy and runs each tool's examples
// with their fixtures (exampleTester), comparing expectedOutput where
// given. A manifest that fails to load is a failed test too, unless what
// it lacks is something a test cannot have (then it is skipped, as is an
// example that needs one). Exit 1 when anything failed.
func runTest(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usageError{"test takes one or more toolpack folders"}
	}
	saved := e.dirs
	e.dirs = args
	h, err := e.newHost(ctx)
	e.dirs = saved
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	out := e.stdout
	if e.asJSON {
		out = io.Discard
	}
	rep := &testReport{Failures: []testFailure{}, Skips: []testFailure{}}
	for _, f := range h.Failures() {
		if reason := loadSkip(f, e.issuer != nil); reason != "" {
			rep.add(out, f.Path, outcomeSkip, reason)
			continue
		}
		rep.add(out, f.Path, outcomeFail, "load: "+f.Err.Error())
	}
	tools := h.Tools(host.Query{Uncallable: true})
	sort.Slice(tools, func(i, j int) bool { return tools[i].ToolID < tools[j].ToolID })
	var loaded []*manifest.Tool
	for _, t := range tools {
		mt, err := h.Tool(t.ToolID + "@" + t.Version)
		if err != nil {
			rep.add(out, t.ToolID, outcomeFail, err.Error())
			continue
		}
		loaded = append(loaded, mt)
	}
	if err := e.runExamplesInto(ctx, out, h, loaded, rep); err != nil {
		return err
	}
	if e.asJSON {
		if err := e.printJSON(rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", rep.Passed, rep.Failed, rep.Skipped)
	}
	if rep.Failed > 0 {
		return exitError{1}
	}
	return nil
}

// runExamplesInto runs the examples of tools (loaded by h) with their
// fixtures and adds each outcome to rep, printing one line each to out.
func (e *env) runExamplesInto(ctx context.Context, out io.Writer, h *host.Host, tools []*manifest.Tool, rep *testReport) error {
	p, err := e.loadPolicy()
	if err != nil {
		return err
	}
	x := &exampleTester{e: e, base: h, policy: p}
	for _, r := range x.runAll(ctx, tools) {
		rep.add(out, r.name, r.outcome, r.reason)
	}
	return nil
}

// testReport is what test --json prints.
type testReport struct {
	Passed   int           `json:"passed"`
	Failed   int           `json:"failed"`
	Skipped  int           `json:"skipped"`
	Failures []testFailure `json:"failures"`
	Skips    []testFailure `json:"skips"`
}

type testFailure struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// add counts one outcome and prints its line.
func (r *testReport) add(out io.Writer, name, outcome, reason string) {
	switch outcome {
	case outcomePass:
		r.Passed++
		fmt.Fprintf(out, "ok   %s\n", escapeText(name))
		return
	case outcomeSkip:
		r.Skipped++
		r.Skips = append(r.Skips, testFailure{Name: name, Reason: reason})
	default:
		r.Failed++
		r.Failures = append(r.Failures, testFailure{Name: name, Reason: reason})
	}
	fmt.Fprintf(out, "%-4s %s: %s\n", outcome, escapeText(name), escapeText(reason))
}
