package script_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// TestToolpackExamples runs every example of the script toolpack through
// the bridge and compares the output with expectedOutput.
func TestToolpackExamples(t *testing.T) {
	r := newRunner(t)
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "toolpacks", "scripts", "*.tool.json"))
	if err != nil || len(paths) < 2 {
		t.Fatalf("want the script toolpack's manifests, got %v %v", paths, err)
	}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var tool manifest.Tool
		if err := json.Unmarshal(b, &tool); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		abs, _ := filepath.Abs(path)
		tool.Path, tool.Dir = abs, filepath.Dir(abs)
		t.Run(tool.ToolID, func(t *testing.T) {
			requireLang(t, tool.Handler.Language)
			grant := &policy.Grant{ToolID: tool.ToolID, Workspace: t.TempDir(), ToolDir: tool.Dir,
				Limits: policy.Limits{Timeout: 10 * time.Second, MemoryBytes: 128 << 20, MaxOutputBytes: 1 << 20}}
			p, err := r.Prepare(context.Background(), &tool, grant)
			if err != nil {
				t.Fatal(err)
			}
			if len(tool.Examples) == 0 {
				t.Fatal("no examples")
			}
			for _, ex := range tool.Examples {
				res, err := p.Run(context.Background(), runner.Request{Input: ex.Input})
				if err != nil || res.Err != nil {
					t.Fatalf("%s: %v %v %q", ex.Description, err, res.Err, res.Logs)
				}
				var got, want any
				if err := json.Unmarshal(res.Output, &got); err != nil {
					t.Fatalf("%s: output %s: %v", ex.Description, res.Output, err)
				}
				if err := json.Unmarshal(ex.ExpectedOutput, &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s:\n got %s\nwant %s", ex.Description, res.Output, ex.ExpectedOutput)
				}
			}
			// Bad input is a TOOL_ERROR carrying the tool's own message.
			res, err := p.Run(context.Background(), runner.Request{Input: []byte(`{"a":"1.2","b":"x","markdown":7}`)})
			if err != nil || !hasCode(res.Err, "TOOL_ERROR") {
				t.Fatalf("bad input: %v %v", err, res.Err)
			}
		})
	}
}
