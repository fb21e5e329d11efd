package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
)

func testCommand() command {
	return command{
		name: "test", usage: "test DIR... [--json]", summary: "run every manifest example of the tools under DIR as a test suite; prints N passed, M failed",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.asJSON, "json", false, "print JSON: every result, passed and failed counts")
		},
		run: runTest,
	}
}

// runTest loads DIR... under the policy and runs each tool's examples,
// comparing expectedOutput where given. A manifest that fails to load is a
// failed test too. Exit 1 when anything failed.
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
	var rep testReport
	out := e.stdout
	if e.asJSON {
		out = io.Discard
	}
	for _, f := range h.Failures() {
		rep.Failed++
		rep.Failures = append(rep.Failures, testFailure{Name: f.Path, Reason: "load: " + f.Err.Error()})
		fmt.Fprintf(out, "FAIL %s: load: %s\n", escapeText(f.Path), escapeText(f.Err.Error()))
	}
	tools := h.Filter("", "")
	sort.Slice(tools, func(i, j int) bool { return tools[i].ToolID < tools[j].ToolID })
	for _, t := range tools {
		results, err := h.RunExamples(ctx, t.ToolID+"@"+t.Version)
		if err != nil {
			rep.Failed++
			rep.Failures = append(rep.Failures, testFailure{Name: t.ToolID, Reason: err.Error()})
			fmt.Fprintf(out, "FAIL %s: %s\n", t.ToolID, escapeText(err.Error()))
			continue
		}
		for _, r := range results {
			name := fmt.Sprintf("%s example %d (%s)", r.ToolID, r.Index+1, r.Description)
			if r.Passed {
				rep.Passed++
				fmt.Fprintf(out, "ok   %s\n", escapeText(name))
				continue
			}
			rep.Failed++
			rep.Failures = append(rep.Failures, testFailure{Name: name, Reason: r.Reason})
			fmt.Fprintf(out, "FAIL %s: %s\n", escapeText(name), escapeText(r.Reason))
		}
	}
	if e.asJSON {
		if rep.Failures == nil {
			rep.Failures = []testFailure{}
		}
		if err := e.printJSON(rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%d passed, %d failed\n", rep.Passed, rep.Failed)
	}
	if rep.Failed > 0 {
		return exitError{1}
	}
	return nil
}

// testReport is what test --json prints.
type testReport struct {
	Passed   int           `json:"passed"`
	Failed   int           `json:"failed"`
	Failures []testFailure `json:"failures"`
}

type testFailure struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}
