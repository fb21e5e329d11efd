package main

import (
	"context"
	"fmt"
	"sort"
)

func testCommand() command {
	return command{
		name: "test", usage: "test DIR...", summary: "run every manifest example of the tools under DIR as a test suite; prints N passed, M failed",
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
	passed, failed := 0, 0
	for _, f := range h.Failures() {
		failed++
		fmt.Fprintf(e.stdout, "FAIL %s: load: %s\n", escapeText(f.Path), escapeText(f.Err.Error()))
	}
	tools := h.Tools()
	sort.Slice(tools, func(i, j int) bool { return tools[i].ToolID < tools[j].ToolID })
	for _, t := range tools {
		results, err := h.RunExamples(ctx, t.ToolID+"@"+t.Version)
		if err != nil {
			failed++
			fmt.Fprintf(e.stdout, "FAIL %s: %s\n", t.ToolID, escapeText(err.Error()))
			continue
		}
		for _, r := range results {
			name := fmt.Sprintf("%s example %d (%s)", r.ToolID, r.Index+1, escapeText(r.Description))
			if r.Passed {
				passed++
				fmt.Fprintf(e.stdout, "ok   %s\n", name)
				continue
			}
			failed++
			fmt.Fprintf(e.stdout, "FAIL %s: %s\n", name, escapeText(r.Reason))
		}
	}
	fmt.Fprintf(e.stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return exitError{1}
	}
	return nil
}
