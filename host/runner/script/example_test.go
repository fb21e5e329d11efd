package script_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/script"
)

// A Python tool run under a grant: the arguments arrive on stdin, the
// JSON on stdout is the output, and the first log line says how the call
// was confined.
func ExampleRunner() {
	dir, _ := os.MkdirTemp("", "example-tool-")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "greet.py"), []byte(`import json, sys
args = json.load(sys.stdin)
json.dump({"greeting": "hello " + args["name"]}, sys.stdout)
`), 0o644)
	tool := &manifest.Tool{ToolID: "demo:greet", Version: "1.0.0", Dir: dir,
		Handler: manifest.Handler{Type: manifest.HandlerScript, ScriptPath: "greet.py", Language: script.LangPython}}
	grant := &policy.Grant{ToolID: tool.ToolID, Workspace: dir, ToolDir: dir,
		Limits: policy.Limits{Timeout: 10 * time.Second, MemoryBytes: 128 << 20, MaxOutputBytes: 1 << 20}}

	cache, _ := os.MkdirTemp("", "example-cache-")
	defer os.RemoveAll(cache)
	r, err := script.New(script.Options{CacheDir: cache})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := r.Prepare(context.Background(), tool, grant)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := p.Run(context.Background(), runner.Request{Input: []byte(`{"name":"world"}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Output), res.Err == nil)
	// Output: {"greeting": "hello world"} true
}
