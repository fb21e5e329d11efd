package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// copyFiles copies named files of a shipped toolpack into dir.
func copyFiles(t *testing.T, pack, dir string, names ...string) {
	t.Helper()
	src, _ := filepath.Abs(filepath.Join("../../toolpacks", pack))
	os.MkdirAll(dir, 0o755)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
}

// TestAuditDiff audits a new version of a toolpack against the old one:
// the new echo asks for a host, a write path and an env name and a new
// tool (web:fetch, importing http_request) arrives; --fail-on high exits
// 1; the HTML page opens in headless Chromium and shows the changes.
func TestAuditDiff(t *testing.T) {
	tmp := t.TempDir()
	old, cur := filepath.Join(tmp, "v1"), filepath.Join(tmp, "v2")
	copyFiles(t, "core", old, "echo.tool.json", "echo.wasm")
	copyFiles(t, "core", cur, "echo.tool.json", "echo.wasm")
	copyFiles(t, "web", cur, "web-fetch.tool.json", "web-fetch.wasm")
	mp := filepath.Join(cur, "echo.tool.json")
	var m map[string]any
	b, _ := os.ReadFile(mp)
	json.Unmarshal(b, &m)
	m["version"] = "1.1.0"
	m["securityContext"] = map[string]any{
		"networkAccess": map[string]any{"allowHosts": []string{"api.example.com"}},
		"fileAccess":    map[string]any{"allowWrite": []string{"out/**"}},
		"env":           []string{"API_TOKEN"},
		"limits":        map[string]any{"timeoutMs": 9000},
	}
	b, _ = json.Marshal(m)
	os.WriteFile(mp, b, 0o644)
	os.MkdirAll(filepath.Join(tmp, "ws", "out"), 0o755)
	policy := filepath.Join(tmp, "policy.yaml")
	os.WriteFile(policy, []byte("workspace: ws\nfileAccess: {allowRead: [\"**\"], allowWrite: [\"out/**\"]}\nnetworkAccess: {allowHosts: [\"api.example.com\", \"*.example.org\"]}\nenv: [API_TOKEN]\n"), 0o644)
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--policy", policy, "--cache-dir", filepath.Join(tmp, "cache"), "--log-level", "off"}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, stderr := cli("audit", "--diff", old, "--dir", cur, "--fail-on", "high")
	for _, want := range []string{"high   core:echo: network host: api.example.com", "core:echo: write path: out/**", "core:echo: env: API_TOKEN", "core:echo: limit raised: timeoutMs 5000 → 9000", "web:fetch: new tool"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if code != 1 || !strings.Contains(stderr, "at or above high") {
		t.Errorf("--fail-on high: exit %d, %s", code, stderr)
	}
	if code, out, _ := cli("audit", "--diff", old, "--dir", old, "--fail-on", "low"); code != 0 || !strings.Contains(out, "nothing new") {
		t.Errorf("no change: %d %s", code, out)
	}
	if code, page, stderr := cli("audit", "--dir", cur, "--format", "html"); code != 0 || !strings.HasPrefix(page, "<!doctype html>") || !strings.Contains(page, `<h2 id="web:fetch@`) {
		t.Errorf("html without --diff: %d %s %s", code, page, stderr)
	}
	code, page, _ := cli("audit", "--diff", old, "--dir", cur, "--format", "html")
	if code != 0 || !strings.HasPrefix(page, "<!doctype html>") {
		t.Fatalf("html: %d %s", code, page)
	}
	file := filepath.Join(tmp, "diff.html")
	os.WriteFile(file, []byte(page), 0o644)
	chromium := ""
	for _, c := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(c); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is missing (.ci/run installs it)")
		}
		t.Skip("chromium is not installed: the page was not rendered")
	}
	dom, err := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+filepath.Join(tmp, "chrome"), "--dump-dom", "file://"+file).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	rows := strings.Count(string(dom), "<tr class=")
	if rows < 6 || !strings.Contains(string(dom), `id="summary"`) || !strings.Contains(string(dom), "timeoutMs 5000 → 9000") {
		t.Fatalf("rendered page has %d rows:\n%s", rows, dom)
	}
}
