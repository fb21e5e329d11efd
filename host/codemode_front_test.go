package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
)

// TestCodeAPIText renders the API a model reads: declarations while the
// tools fit, namespaces and a pointer at tools.search past MaxListed,
// never the code tools, and only the tools the caller may see.
func TestCodeAPIText(t *testing.T) {
	tp := hosttest.Toolpacks(t)
	h := hosttest.NewHost(t, nil, filepath.Join(tp, "code"), filepath.Join(tp, "fs"), filepath.Join(tp, "core"))
	tests := []struct {
		name      string
		o         host.CodeAPIOptions
		want, not []string
	}{
		{name: "declarations", want: []string{"tools.fs.read(args: {", "tools.core.echo(", "run_code"}, not: []string{"tools.code.", "by namespace"}},
		{name: "past MaxListed", o: host.CodeAPIOptions{MaxListed: 2}, want: []string{"tools, by namespace", "tools.fs: list, read, write", "tools.search("}, not: []string{"args: {"}},
		{name: "allowed", o: host.CodeAPIOptions{Allowed: func(id string) bool { return id == "core:echo" }}, want: []string{"tools.core.echo("}, not: []string{"tools.fs.list("}},
		{name: "none allowed", o: host.CodeAPIOptions{Allowed: func(string) bool { return false }}, want: []string{"No tools are callable"}},
		{name: "search tool", o: host.CodeAPIOptions{SearchTool: "search_tools"}, want: []string{"The tool search_tools"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text, err := h.CodeAPIText(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("lacks %q:\n%s", w, text)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(text, n) {
					t.Errorf("holds %q:\n%s", n, text)
				}
			}
		})
	}
}

// TestRunCodeArgs refuses bad run_code arguments before any program
// runs, each with INVALID_ARGUMENTS under the tool name run_code.
func TestRunCodeArgs(t *testing.T) {
	tp := hosttest.Toolpacks(t)
	h := hosttest.NewHost(t, nil, filepath.Join(tp, "code"), filepath.Join(tp, "core"))
	for _, args := range []string{`not json`, `{"code":""}`, `{"code":"1","language":"ruby"}`, `{"code":"1","extra":true}`, `{}`} {
		env := h.RunCode(context.Background(), json.RawMessage(args), host.CodeScope{})
		if env.ToolID != host.RunCodeName || env.Error == nil || env.Error.Code != abi.CodeInvalidArguments {
			t.Errorf("%s: %+v", args, env)
		}
	}
}

// ExampleHost_RunCode runs a model's run_code call: a Starlark program
// that calls core:echo twice; each inner call reaches the scope's Step.
func ExampleHost_RunCode() {
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: []string{filepath.Join(toolpacks(), "code"), filepath.Join(toolpacks(), "core")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close(ctx)
	scope := host.CodeScope{Step: func(s host.CodeStep) { fmt.Println("called", s.Envelope.ToolID, s.Envelope.Status) }}
	env := h.RunCode(ctx, json.RawMessage(`{"language":"starlark","code":"result = [tools.core.echo(n = i)['n'] for i in range(2)]"}`), scope)
	fmt.Println(env.ToolID, env.Status, string(env.Output))
	// Output:
	// called core:echo success
	// called core:echo success
	// run_code success {"result":[0,1],"log":[],"calls":2}
}
