package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
)

// ExampleRun_code runs agent mode code: the model (a replay here) sends
// one run_code call whose Starlark program calls a Go tool three times;
// each inner call is a step under the run_code call, and the model
// answers from the program's result.
func ExampleRun_code() {
	_, file, _, _ := runtime.Caller(0)
	code := filepath.Join(filepath.Dir(file), "..", "..", "toolpacks", "code")
	type in struct {
		N int `json:"n"`
	}
	type out struct {
		Square int `json:"square"`
	}
	square := host.Func(host.FuncSpec{ID: "math:square", Description: "Squares n."}, func(_ context.Context, a in) (out, error) {
		return out{Square: a.N * a.N}, nil
	})
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: []string{code}, Tools: []host.Tool{square}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close(ctx)
	model, err := llm.ParseReplay([]byte(`{"tool_calls":[{"name":"run_code","arguments":{"language":"starlark","code":"def main():\n    t = 0\n    for i in range(1, 4):\n        t += tools.math.square(n = i)['square']\n    return t"}}]}
{"content":"1 + 4 + 9 = 14"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := agent.Run(ctx, h, "Add the squares of 1 to 3.", agent.Options{Provider: model, Mode: agent.ModeCode})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range res.Steps {
		fmt.Println(s.ToolName, s.Status, string(s.Result), s.ParentCallID != "")
	}
	fmt.Println(res.Answer)
	// Output:
	// math:square success {"square":1} true
	// math:square success {"square":4} true
	// math:square success {"square":9} true
	// run_code success {"result":14,"log":[],"calls":3} false
	// 1 + 4 + 9 = 14
}
