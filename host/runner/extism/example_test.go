package extism_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/extism"
)

func ExampleRunner() {
	ctx := context.Background()
	r, err := extism.New(ctx, extism.Options{CacheDir: cacheDir})
	if err != nil {
		panic(err)
	}
	defer r.Close(ctx)

	tool := toolFor(guests["probe"], "config") // handler {"type":"wasm","abi":"extism","entryPoint":"config"}
	grant := &policy.Grant{
		ToolID: tool.ToolID,
		Config: map[string]string{"greeting": "hello from the policy"},
		Limits: policy.Limits{Timeout: 5 * time.Second, MemoryBytes: 128 << 20, MaxOutputBytes: 1 << 20},
	}
	p, err := r.Prepare(ctx, tool, grant)
	if err != nil {
		panic(err)
	}
	res, err := p.Run(ctx, runner.Request{Input: []byte("greeting")})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Output), res.Err == nil)
	// Output: hello from the policy true
}
