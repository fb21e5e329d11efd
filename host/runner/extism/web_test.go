package extism_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner/extism"
)

// webTool loads a toolpacks/web manifest and places the freshly built
// module next to a copy of it, pinned to that module's digest: the test
// build's flags need not match the toolpack build's, and the runner checks
// the bytes it reads against the pin.
func webTool(t *testing.T, manifestName, guest string) *manifest.Tool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "toolpacks", "web", manifestName))
	if err != nil {
		t.Fatal(err)
	}
	var tool manifest.Tool
	if err := json.Unmarshal(b, &tool); err != nil {
		t.Fatalf("%s: %v", manifestName, err)
	}
	dir := t.TempDir()
	code, err := os.ReadFile(guests[guest])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, tool.Handler.Module), code, 0o644); err != nil {
		t.Fatal(err)
	}
	tool.Dir = dir
	sum := sha256.Sum256(code)
	tool.Handler.SHA256 = hex.EncodeToString(sum[:])
	return &tool
}

// webGrant grants the loopback server, as a test policy would.
func webGrant(tool *manifest.Tool, private bool) *policy.Grant {
	g := grantFor(tool)
	g.Hosts = []policy.HostRule{{Host: "127.0.0.1"}}
	g.AllowPrivate = private
	return g
}

func TestWebTools(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("ETag", `"v1"`)
			fmt.Fprint(w, `<html><head><base href="/docs/"></head><body>
<a href="intro.html">Intro <b>page</b></a>
<a href='https://example.org/x#frag'>Elsewhere</a>
<!-- <a href="/hidden">no</a> -->
<a href="intro.html">dup</a>
<a href="mailto:someone@example.org">mail</a>
<a href=/abs>Abs &amp; more</a>
</body></html>`)
		case "/text":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprint(w, "héllo wörld, a longer body")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	r := newNetRunner(t, extism.Options{})
	fetch := webTool(t, "web-fetch.tool.json", "web-fetch")
	links := webTool(t, "web-links.tool.json", "web-links")

	tests := []struct {
		name    string
		tool    *manifest.Tool
		private bool
		input   string
		want    string // JSON output on success
		code    abi.Code
		message string
	}{
		{name: "fetch text truncated", tool: fetch, private: true,
			input: `{"url":"` + srv.URL + `/text","maxBytes":2}`,
			want:  `{"url":"` + srv.URL + `/text","status":200,"headers":{"content-length":"28","content-type":"text/plain; charset=utf-8"},"text":"h","bytes":28,"truncated":true}`},
		{name: "fetch HEAD", tool: fetch, private: true,
			input: `{"url":"` + srv.URL + `/page","method":"HEAD"}`,
			want:  `{"url":"` + srv.URL + `/page","status":200,"headers":{"content-length":"295","content-type":"text/html; charset=utf-8","etag":"\"v1\""},"text":"","bytes":0,"truncated":false}`},
		{name: "fetch 404 is a result", tool: fetch, private: true,
			input: `{"url":"` + srv.URL + `/nope"}`,
			want:  `{"url":"` + srv.URL + `/nope","status":404,"headers":{"content-length":"19","content-type":"text/plain; charset=utf-8"},"text":"404 page not found\n","bytes":19,"truncated":false}`},
		{name: "fetch refused without private", tool: fetch, private: false,
			input: `{"url":"` + srv.URL + `/text"}`, code: abi.CodePermissionDenied, message: "127.0.0.1"},
		{name: "fetch outside the grant", tool: fetch, private: true,
			input: `{"url":"https://example.com/"}`, code: abi.CodePermissionDenied, message: "example.com"},
		{name: "links of a fetched page", tool: links, private: true,
			input: `{"url":"` + srv.URL + `/page"}`,
			want: `{"base":"` + srv.URL + `/page","links":[` +
				`{"url":"` + srv.URL + `/docs/intro.html","text":"Intro page"},` +
				`{"url":"https://example.org/x","text":"Elsewhere"},` +
				`{"url":"` + srv.URL + `/abs","text":"Abs \u0026 more"}],"truncated":false}`},
		{name: "links of given html", tool: links,
			input: `{"html":"<a href=\"/docs\">Docs</a> <a href=\"https://example.org/\">Example</a>","baseUrl":"https://example.com/","maxLinks":1}`,
			want:  `{"base":"https://example.com/","links":[{"url":"https://example.com/docs","text":"Docs"}],"truncated":true}`},
		{name: "links need url or html", tool: links, input: `{}`, code: abi.CodeToolError, message: "exactly one of url and html"},
		{name: "links page refused", tool: links, private: false,
			input: `{"url":"` + srv.URL + `/page"}`, code: abi.CodePermissionDenied, message: "loopback"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, prepare(t, r, tc.tool, webGrant(tc.tool, tc.private)), tc.input)
			if tc.code != "" {
				if res.Err == nil || res.Err.Code != tc.code || !strings.Contains(res.Err.Message, tc.message) {
					t.Fatalf("err = %v, want %s containing %q (logs %q)", res.Err, tc.code, tc.message, res.Logs)
				}
				return
			}
			if res.Err != nil {
				t.Fatalf("err = %v (logs %q)", res.Err, res.Logs)
			}
			var got, want any
			if err := json.Unmarshal(res.Output, &got); err != nil {
				t.Fatalf("output %q: %v", res.Output, err)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if string(gb) != string(wb) {
				t.Fatalf("output\n %s\nwant\n %s", gb, wb)
			}
		})
	}
}
