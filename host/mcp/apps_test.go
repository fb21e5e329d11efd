package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// tablePack is core:echo as test:table, with ui hints: its result's
// /items shown as a table.
func tablePack(t *testing.T) string {
	t.Helper()
	core := filepath.Join(hosttest.Toolpacks(t), "core")
	wasm, err := os.ReadFile(filepath.Join(core, "echo.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	b, err := os.ReadFile(filepath.Join(core, "echo.tool.json"))
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("echo manifest: %v", err)
	}
	m["toolId"], m["displayName"], m["ui"] = "test:table", "Table", map[string]string{"kind": "table", "rows": "/items"}
	delete(m, "examples")
	dir := t.TempDir()
	b, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "table.tool.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "echo.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMCPApps pins MCP Apps: a tool with ui hints names its view
// (_meta.ui.resourceUri), listed and read as a ui:// resource of
// text/html;profile=mcp-app; a tool without hints names none.
func TestMCPApps(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t), tablePack(t))
	_, ts := serveHTTP(t, h, mcp.Options{})
	const uri = "ui://agenthost/test__table.html"
	_, m := postStateless(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`, modernHeaders("tools/list", ""))
	var list struct {
		Tools []struct {
			Name string
			Meta map[string]json.RawMessage `json:"_meta"`
		}
	}
	if err := json.Unmarshal(m["result"], &list); err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		switch tl.Name {
		case "test__table":
			if string(tl.Meta["ui"]) != `{"resourceUri":"`+uri+`"}` || string(tl.Meta["ui/resourceUri"]) != `"`+uri+`"` {
				t.Errorf("test__table _meta %s", tl.Meta)
			}
		case "core__echo":
			if tl.Meta["ui"] != nil {
				t.Errorf("core__echo has a view: %s", tl.Meta["ui"])
			}
		}
	}
	_, m = postStateless(t, ts.URL, `{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{`+modernMeta+`}}`, modernHeaders("resources/list", ""))
	if r := string(m["result"]); !strings.Contains(r, `"uri":"`+uri+`"`) || !strings.Contains(r, `"mimeType":"text/html;profile=mcp-app"`) {
		t.Fatalf("resources/list: %s %s", r, m["error"])
	}
	_, m = postStateless(t, ts.URL, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"`+uri+`",`+modernMeta+`}}`, modernHeaders("resources/read", uri))
	var read struct {
		Contents []struct{ URI, MIMEType, Text string }
	}
	if err := json.Unmarshal(m["result"], &read); err != nil || len(read.Contents) != 1 || read.Contents[0].MIMEType != "text/html;profile=mcp-app" ||
		!strings.Contains(read.Contents[0].Text, `"ui/initialize"`) || !strings.Contains(read.Contents[0].Text, `&#34;kind&#34;:&#34;table&#34;`) {
		t.Fatalf("resources/read: %s %s", m["result"], m["error"])
	}
}

// TestMCPAppsInChromium renders a view in Chromium as an MCP Apps host
// does, with @modelcontextprotocol/ext-apps' own host side (AppBridge):
// the result's rows become a table, cell text stays text (no markup from
// a tool's output runs), and the page logs no error.
func TestMCPAppsInChromium(t *testing.T) {
	n := node22(t)
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is missing (.ci/run installs it)")
		}
		t.Skip("chromium is not installed")
	}
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t), tablePack(t))
	_, ts := serveHTTP(t, h, mcp.Options{})
	bundle := filepath.Join(t.TempDir(), "bridge.js")
	build := exec.Command(n, "node_modules/rolldown/bin/cli.mjs", "apps-bridge.mjs", "--format", "iife", "--name", "ExtAppsBridge", "--platform", "browser", "-o", bundle)
	build.Dir = "testdata/node"
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("bundle the app bridge: %v\n%s", err, out)
	}
	args := `{"items":[{"name":"alpha","size":1},{"name":"<img src=x onerror=alert(1)>","size":22}]}`
	// A view that never answers must not hang the test: two minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, n, "apps.mjs", ts.URL+"/mcp", "test__table", args, bundle, chromium)
	cmd.Dir = "testdata/node"
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("apps.mjs: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		URI, MIMEType string
		Shown         struct {
			Headers []string
			Rows    [][]string
			Scripts int
		}
		Errors []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.URI != "ui://agenthost/test__table.html" || got.MIMEType != "text/html;profile=mcp-app" {
		t.Errorf("view %s %s", got.URI, got.MIMEType)
	}
	if strings.Join(got.Shown.Headers, ",") != "name,size" || len(got.Shown.Rows) != 2 ||
		strings.Join(got.Shown.Rows[0], ",") != "alpha,1" || got.Shown.Rows[1][0] != "<img src=x onerror=alert(1)>" {
		t.Errorf("shown %+v", got.Shown)
	}
	if len(got.Errors) > 0 {
		t.Errorf("page errors %v", got.Errors)
	}
}
