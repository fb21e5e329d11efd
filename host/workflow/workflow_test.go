package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
)

// newHost starts a host over the first-party toolpacks and dir, with
// tools registered first.
func newHost(t testing.TB, dir string, tools ...host.Tool) *host.Host {
	t.Helper()
	ctx := context.Background()
	dirs := []string{hosttest.Toolpacks(t)}
	if dir != "" {
		dirs = append(dirs, dir)
	}
	h, err := host.New(ctx, host.Options{Dirs: dirs, CacheDir: hosttest.CacheDir(t), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	return h
}

// writeFlows writes workflow files (name → JSON) into a new folder.
func writeFlows(t testing.TB, flows map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range flows {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSummarize runs the summarize_text example end to end: text:stats
// counts the words, llm:complete (on a replayed model) gets the prompt
// with the ComboOption's default and the count, and the one output comes
// back unwrapped.
func TestSummarize(t *testing.T) {
	model, err := llm.ParseReplay([]byte(`{"content":"一句话摘要。"}`))
	if err != nil {
		t.Fatal(err)
	}
	h := newHost(t, "testdata", agent.CompleteTool(model, "test-model"))
	tool, err := h.Tool("workflow:summarize_text")
	if err != nil {
		t.Fatalf("not loaded: %v (failures %v)", err, h.Failures())
	}
	if tool.DisplayName != "文本摘要" || !strings.Contains(string(tool.Parameters), "详细") {
		t.Fatalf("manifest %+v", tool)
	}
	env := h.Call(context.Background(), "workflow:summarize_text", json.RawMessage(`{"text":"one two three"}`))
	if env.Error != nil || string(env.Output) != `"一句话摘要。"` {
		t.Fatalf("%+v", env)
	}
	if len(model.Requests) != 1 {
		t.Fatalf("%d model requests", len(model.Requests))
	}
	prompt := model.Requests[0].Messages[0].Content
	if !strings.Contains(prompt, "请用中等的篇幅") || !strings.Contains(prompt, "（3 个词）") || !strings.HasSuffix(prompt, "one two three") || model.Requests[0].Model != "test-model" {
		t.Fatalf("prompt %q", prompt)
	}
	if env := h.Call(context.Background(), "workflow:summarize_text", json.RawMessage(`{"text":"x","length":"long"}`)); env.Error == nil || env.Error.Code != abi.CodeInvalidArguments {
		t.Fatalf("a value outside the enum: %+v", env)
	}
}

// TestLoadErrors pins the checks that need the catalogue: a missing tool
// (the workflow loads once it is registered), a type mismatch between an
// output and the argument it feeds, a missing required argument, an
// argument the tool does not take, workflows calling each other, and a
// test whose input does not fit; each a LOAD_ERROR naming the cause.
func TestLoadErrors(t *testing.T) {
	const head = `"description":"d","interfaceInputs":{"t":{"dataFlowType":"STRING","required":true}},"interfaceOutputs":{"o":{"dataFlowType":"OBJECT"}},"outputs":{"o":"${nodes.a.output}"},`
	dir := writeFlows(t, map[string]string{
		"missing.workflow.json":  `{"id":"missing",` + head + `"nodes":[{"id":"a","tool":"app:later","args":{"t":"${inputs.t}"}}]}`,
		"mismatch.workflow.json": `{"id":"mismatch",` + head + `"nodes":[{"id":"s","tool":"text:stats","args":{"text":"${inputs.t}"}},{"id":"a","tool":"text:stats","args":{"text":"${nodes.s.output.words}"}}]}`,
		"interp.workflow.json":   `{"id":"interp",` + head + `"nodes":[{"id":"a","tool":"text:stats","args":{"text":"${inputs.t}","top":"n=${inputs.t}"}}]}`,
		"required.workflow.json": `{"id":"required",` + head + `"nodes":[{"id":"a","tool":"text:stats","args":{"top":3}}]}`,
		"extra.workflow.json":    `{"id":"extra",` + head + `"nodes":[{"id":"a","tool":"text:stats","args":{"text":"x","colour":"red"}}]}`,
		"ping.workflow.json":     `{"id":"ping",` + head + `"nodes":[{"id":"a","tool":"workflow:pong","args":{"t":"${inputs.t}"}}]}`,
		"pong.workflow.json":     `{"id":"pong",` + head + `"nodes":[{"id":"a","tool":"workflow:ping","args":{"t":"${inputs.t}"}}]}`,
		"badtest.workflow.json":  `{"id":"badtest",` + head + `"nodes":[{"id":"a","tool":"core:echo","args":{"t":"${inputs.t}"}}],"tests":[{"input":{"t":5}}]}`,
		"outtype.workflow.json":  `{"id":"outtype","description":"d","interfaceOutputs":{"o":{"dataFlowType":"STRING"}},"outputs":{"o":"${nodes.a.output.words}"},"nodes":[{"id":"a","tool":"text:stats","args":{"text":"x"}}]}`,
	})
	h := newHost(t, dir)
	want := map[string]string{
		"workflow:missing":  "calls app:later, which is not loaded",
		"workflow:mismatch": `${nodes.s.output.words} is a integer, but text:stats's argument "text" is a string`,
		"workflow:interp":   `is interpolated into text, but text:stats's argument "top" is a integer`,
		"workflow:required": `text:stats requires the argument "text"`,
		"workflow:extra":    `takes no argument "colour"`,
		"workflow:ping":     "cycle: workflow:ping → workflow:pong → workflow:ping",
		"workflow:pong":     "cycle",
		"workflow:badtest":  "/tests/0/input",
		"workflow:outtype":  `is a integer, but the interface output "o" is a string`,
	}
	for id, reason := range want {
		env := h.Call(context.Background(), id, json.RawMessage(`{"t":"x"}`))
		if env.Error == nil || env.Error.Code != abi.CodeLoadError || !strings.Contains(env.Error.Message, reason) {
			t.Errorf("%s: %+v, want LOAD_ERROR with %q", id, env.Error, reason)
		}
	}
	// The missing tool arrives: the workflow loads and runs.
	type in struct {
		T string `json:"t"`
	}
	later := host.Func(host.FuncSpec{ID: "app:later", Description: "Later."}, func(_ context.Context, a in) (map[string]string, error) { return map[string]string{"got": a.T}, nil })
	if err := h.Register(later); err != nil {
		t.Fatal(err)
	}
	if env := h.Call(context.Background(), "workflow:missing", json.RawMessage(`{"t":"x"}`)); env.Error != nil {
		t.Fatalf("after Register: %+v", env.Error)
	}
	if err := h.Unregister("app:later"); err != nil {
		t.Fatal(err)
	}
	if env := h.Call(context.Background(), "workflow:missing", json.RawMessage(`{"t":"x"}`)); env.Error == nil || env.Error.Code != abi.CodeLoadError {
		t.Fatalf("after Unregister: %+v", env)
	}
}

// TestRunBehaviour pins the engine through the host: a failing node
// fails the workflow with its code and details {node, tool}; independent
// nodes run at once; a caller's cancel reaches the node (CANCELLED) and
// the workflow's timeoutMs covers all nodes (TIMEOUT); a workflow may call
// a workflow.
func TestRunBehaviour(t *testing.T) {
	type in struct {
		N int `json:"n"`
	}
	started := make(chan struct{}, 2)
	meet := host.Func(host.FuncSpec{ID: "app:meet", Description: "Waits for its sibling."}, func(ctx context.Context, a in) (map[string]int, error) {
		started <- struct{}{}
		deadline := time.After(10 * time.Second)
		for len(started) < 2 {
			select {
			case <-deadline:
				return nil, errors.New("ran alone")
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
		return map[string]int{"n": a.N}, nil
	})
	var stopped atomic.Bool
	slow := host.Func(host.FuncSpec{ID: "app:slow", Description: "Waits for its context."}, func(ctx context.Context, _ in) (map[string]int, error) {
		<-ctx.Done()
		stopped.Store(true)
		return nil, ctx.Err()
	})
	const out1 = `"interfaceOutputs":{"o":{"dataFlowType":"OBJECT"}},"outputs":{"o":"${nodes.a.output}"}`
	dir := writeFlows(t, map[string]string{
		"fail.workflow.json":  `{"id":"fail","description":"d",` + out1 + `,"nodes":[{"id":"a","tool":"text:regex","args":{"pattern":"(","text":"x"}}]}`,
		"pair.workflow.json":  `{"id":"pair","description":"d","interfaceOutputs":{"a":{"dataFlowType":"OBJECT"},"b":{"dataFlowType":"INTEGER"}},"outputs":{"a":"${nodes.a.output}","b":"${nodes.b.output.n}"},"nodes":[{"id":"a","tool":"app:meet","args":{"n":1}},{"id":"b","tool":"app:meet","args":{"n":2}}]}`,
		"slow.workflow.json":  `{"id":"slow","description":"d",` + out1 + `,"nodes":[{"id":"a","tool":"app:slow","args":{"n":1}}]}`,
		"brief.workflow.json": `{"id":"brief","description":"d","timeoutMs":100,` + out1 + `,"nodes":[{"id":"a","tool":"app:slow","args":{"n":1}}]}`,
		"outer.workflow.json": `{"id":"outer","description":"d","interfaceInputs":{"t":{"dataFlowType":"STRING","required":true}},"interfaceOutputs":{"o":{"dataFlowType":"INTEGER"}},"outputs":{"o":"${nodes.inner.output}"},"nodes":[{"id":"inner","tool":"workflow:inner","args":{"t":"${inputs.t}"}}]}`,
		"inner.workflow.json": `{"id":"inner","description":"d","interfaceInputs":{"t":{"dataFlowType":"STRING","required":true}},"interfaceOutputs":{"o":{"dataFlowType":"INTEGER"}},"outputs":{"o":"${nodes.s.output.words}"},"nodes":[{"id":"s","tool":"text:stats","args":{"text":"${inputs.t}"}}]}`,
	})
	h := newHost(t, dir, meet, slow)
	ctx := context.Background()

	env := h.Call(ctx, "workflow:fail", nil)
	d, _ := env.Error.Details.(map[string]any)
	if env.Error == nil || env.Error.Code != abi.CodeInvalidArguments && env.Error.Code != abi.CodeToolError || d["node"] != "a" || d["tool"] != "text:regex" || !strings.Contains(env.Error.Message, `node "a" (text:regex) failed`) {
		t.Fatalf("failing node: %+v", env.Error)
	}
	if env := h.Call(ctx, "workflow:pair", nil); env.Error != nil || string(env.Output) != `{"a":{"n":1},"b":2}` {
		t.Fatalf("parallel nodes: %+v %s", env.Error, env.Output)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	if env := h.Call(cctx, "workflow:slow", nil); env.Error == nil || env.Error.Code != abi.CodeCancelled || !stopped.Load() {
		t.Fatalf("cancel: %+v, node stopped %v", env.Error, stopped.Load())
	}
	if env := h.Call(ctx, "workflow:brief", nil); env.Error == nil || env.Error.Code != abi.CodeTimeout {
		t.Fatalf("timeout: %+v", env.Error)
	}
	if env := h.Call(ctx, "workflow:outer", json.RawMessage(`{"t":"a b c d"}`)); env.Error != nil || string(env.Output) != "4" {
		t.Fatalf("nested: %+v %s", env.Error, env.Output)
	}
}

// TestManifestBound pins that a manifest with handler type workflow binds
// a workflow file (which is then not loaded a second time on its own),
// and that workflows nest at most MaxDepth deep.
func TestManifestBound(t *testing.T) {
	flows := map[string]string{
		"bound.tool.json":     `{"toolId":"workflow:bound","displayName":"Bound","description":"A bound workflow.","version":"2.0.0","handler":{"type":"workflow","workflow":"inner.workflow.json"},"parameters":{"type":"object","properties":{"t":{"type":"string"}},"required":["t"]}}`,
		"inner.workflow.json": `{"id":"bound","description":"d","interfaceInputs":{"t":{"dataFlowType":"STRING","required":true}},"interfaceOutputs":{"o":{"dataFlowType":"INTEGER"}},"outputs":{"o":"${nodes.s.output.words}"},"nodes":[{"id":"s","tool":"text:stats","args":{"text":"${inputs.t}"}}]}`,
	}
	// d0 calls d1 … d9 calls text:stats: ten workflows deep.
	for i := range 10 {
		tool, args := fmt.Sprintf("workflow:d%d", i+1), `{"t":"${inputs.t}"}`
		out := "${nodes.n.output}"
		if i == 9 {
			tool, args, out = "text:stats", `{"text":"${inputs.t}"}`, "${nodes.n.output.words}"
		}
		flows[fmt.Sprintf("d%d.workflow.json", i)] = fmt.Sprintf(`{"id":"d%d","description":"d","interfaceInputs":{"t":{"dataFlowType":"STRING","required":true}},"interfaceOutputs":{"o":{"dataFlowType":"INTEGER"}},"outputs":{"o":"%s"},"nodes":[{"id":"n","tool":"%s","args":%s}]}`, i, out, tool, args)
	}
	h := newHost(t, writeFlows(t, flows))
	if len(h.Failures()) != 0 {
		t.Fatalf("failures %v", h.Failures())
	}
	tool, err := h.Tool("workflow:bound")
	if err != nil || tool.Version != "2.0.0" || tool.DisplayName != "Bound" {
		t.Fatalf("%+v %v", tool, err)
	}
	if env := h.Call(context.Background(), "workflow:bound", json.RawMessage(`{"t":"a b"}`)); env.Error != nil || string(env.Output) != "2" {
		t.Fatalf("%+v %s", env.Error, env.Output)
	}
	if env := h.Call(context.Background(), "workflow:d2", json.RawMessage(`{"t":"a b"}`)); env.Error != nil || string(env.Output) != "2" {
		t.Fatalf("eight deep: %+v %s", env.Error, env.Output)
	}
	env := h.Call(context.Background(), "workflow:d0", json.RawMessage(`{"t":"a b"}`))
	if env.Error == nil || !strings.Contains(env.Error.Message, "more than 8 deep") {
		t.Fatalf("ten deep: %+v", env.Error)
	}
}

// TestShippedWorkflows runs the tests of the workflows in toolpacks/ (what
// agenthost test does) and checks each loads with its schema.
func TestShippedWorkflows(t *testing.T) {
	h := newHost(t, "")
	for _, id := range []string{"workflow:fingerprint", "workflow:csv_column"} {
		res, err := h.RunExamples(context.Background(), id)
		if err != nil || len(res) == 0 {
			t.Fatalf("%s: %v %v", id, res, err)
		}
		for _, r := range res {
			if !r.Passed {
				t.Errorf("%s: %+v", id, r)
			}
		}
	}
}
