package audit

import (
	"bytes"
	"strings"
	"testing"
)

// TestDiff pins each kind of change and its severity on synthetic audits.
func TestDiff(t *testing.T) {
	tool := func(id, version string, mod func(*Tool)) Tool {
		t := Tool{ID: id, Version: version, Handler: Handler{Type: "wasm", ABI: "wasi-command"}, Digest: "sha256:a",
			Files:   Files{Granted: FileSet{Read: []string{"data/**"}, Write: []string{}, Mounts: []string{}}},
			Limits:  Limits{Granted: LimitValues{TimeoutMs: 1000, MemoryMb: 64, MaxOutputBytes: 1 << 20, Fuel: 100}},
			Imports: []string{"wasi_snapshot_preview1.fd_write"}}
		if mod != nil {
			mod(&t)
		}
		return t
	}
	old := Report{Tools: []Tool{tool("a:same", "1.0.0", nil), tool("a:grow", "1.0.0", nil), tool("a:gone", "1.0.0", nil)}}
	cur := Report{Tools: []Tool{
		tool("a:same", "1.0.0", nil),
		tool("a:grow", "1.1.0", func(t *Tool) {
			t.Handler = Handler{Type: "external-script", Language: "python"}
			t.Network.Granted = []string{"https://api.example.com:443"}
			t.Files.Granted.Write = []string{"out/**"}
			t.Files.Granted.Read = []string{"data/**", "**"}
			t.Files.Granted.Mounts = []string{"/models -> /srv/models"}
			t.Env.Granted = []string{"API_TOKEN"}
			t.Limits.Granted.TimeoutMs = 9000
			t.Limits.Granted.Fuel = 0
			t.Imports = append(t.Imports, "wasi_snapshot_preview1.sock_send", "wasi_snapshot_preview1.random_get")
			t.Digest = "sha256:b"
		}),
		tool("a:new", "1.0.0", func(t *Tool) { t.Network.Granted = []string{"https://x.org:443"} }),
		tool("a:quiet", "1.0.0", nil),
	}, LoadErrors: []LoadError{{Path: "p", ToolID: "a:broken", Error: "bad"}}}
	d := Diff(old, cur, "old", "new")
	want := []string{
		"high a:broken load error bad",
		"high a:grow handler wasm (wasi-command) → external-script (python)",
		"high a:grow network host https://api.example.com:443",
		"high a:grow write path out/**",
		"high a:grow mount /models -> /srv/models",
		"high a:grow env API_TOKEN",
		"high a:grow import wasi_snapshot_preview1.sock_send",
		"high a:new new tool",
		"medium a:grow read path **",
		"medium a:grow limit raised timeoutMs 1000 → 9000",
		"medium a:grow limit raised fuel 100 → unmetered",
		"medium a:quiet new tool",
		"low a:gone removed tool a:gone 1.0.0",
		"low a:grow import wasi_snapshot_preview1.random_get",
		"low a:grow code changed",
	}
	var got []string
	for _, c := range d.Changes {
		got = append(got, strings.Join([]string{c.Level, c.Tool, c.Kind, c.What}, " "))
	}
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("missing %q in\n%s", w, all)
		}
	}
	if strings.Contains(all, "a:same") {
		t.Errorf("an unchanged tool is listed:\n%s", all)
	}
	if n := len(d.AtOrAbove(SeverityHigh)); n != 8 {
		t.Errorf("%d high changes", n)
	}
	for _, f := range []string{"text", "json", "markdown", "html"} {
		var b bytes.Buffer
		if err := d.Write(&b, f); err != nil || !strings.Contains(b.String(), "api.example.com") {
			t.Errorf("%s: %v\n%s", f, err, b.String())
		}
	}
	var b bytes.Buffer
	hostile := Diff(Report{}, Report{Tools: []Tool{tool("a:x", "1.0.0", func(t *Tool) { t.Files.Granted.Write = []string{"<script>alert(1)</script>"} })}}, "o", "n")
	hostile.Write(&b, "html")
	if strings.Contains(b.String(), "<script>") {
		t.Error("the HTML page does not escape what manifests say")
	}
}
