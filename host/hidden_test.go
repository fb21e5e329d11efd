package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/hosttest"
)

// TestHiddenFiles pins the shell's rule for hidden names under the default
// ceiling "**": .env, .ssh/id_rsa and .git/config are neither readable nor
// listed (the default policy handed them to any tool that asked for
// "**"). A tool that needs one requests it by name and the operator grants
// it by name (see the policy package's tests).
func TestHiddenFiles(t *testing.T) {
	ws := t.TempDir()
	for path, body := range map[string]string{".env": "API_KEY=hunter2", ".ssh/id_rsa": "PRIVATE", ".git/config": "[core]", "data/x.csv": "a,b"} {
		p := filepath.Join(ws, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	def := hosttest.NewHost(t, hosttest.Policy(t, "workspace: "+ws), hosttest.Toolpacks(t))
	for _, path := range []string{".env", ".ssh/id_rsa", ".git/config"} {
		env := def.Call(ctx, "fs:read", json.RawMessage(`{"path":"`+path+`"}`))
		if code(env) != abi.CodePermissionDenied {
			t.Errorf("read %s under the default ceiling: %s %s", path, env.Status, env.Output)
		}
	}
	env := def.Call(ctx, "fs:list", json.RawMessage(`{"path":".","recursive":true,"includeHidden":true}`))
	if env.Status != abi.StatusSuccess || strings.Contains(string(env.Output), ".env") || strings.Contains(string(env.Output), ".ssh") || !strings.Contains(string(env.Output), "data/x.csv") {
		t.Errorf("listing under the default ceiling: %s %v", env.Output, env.Error)
	}
}
