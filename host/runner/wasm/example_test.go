package wasm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// A wasi-command tool gets its arguments on stdin and answers on stdout;
// each Run is a fresh instance.
func Example() {
	ctx := context.Background()
	r, err := wasm.New(ctx, wasm.Options{})
	if err != nil {
		panic(err)
	}
	defer r.Close(ctx)

	dir, _ := filepath.Abs("../../../testdata/guests/echo")
	tool := &manifest.Tool{
		ToolID:  "core:echo",
		Handler: manifest.Handler{Type: manifest.HandlerWasm, Module: "echo.wasm", ABI: manifest.ABIWasiCommand},
		Dir:     dir,
	}
	grant := &policy.Grant{
		ToolID:    tool.ToolID,
		Workspace: os.TempDir(),
		ToolDir:   dir,
		Read:      []policy.PathRule{{Root: policy.RootTool, Pattern: "**"}},
		Limits:    policy.Limits{Timeout: 5 * time.Second, MemoryBytes: 16 << 20, MaxOutputBytes: 1 << 10},
	}
	p, err := r.Prepare(ctx, tool, grant)
	if err != nil {
		panic(err)
	}
	res, err := p.Run(ctx, runner.Request{Input: []byte(`{"message":"hi"}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Output), res.Err, res.Usage.MemoryBytes)
	// Output: {"message":"hi"} <nil> 65536
}
