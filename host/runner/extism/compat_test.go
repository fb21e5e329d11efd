package extism_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/policy"
)

// thirdParty is the folder of the prebuilt plugins from go-sdk v1.7.1.
const thirdParty = "../../../testdata/extism"

// TestThirdParty runs plugins built by others with other PDKs (Rust,
// Haskell, TinyGo, hand-written), unmodified, given only a manifest.
func TestThirdParty(t *testing.T) {
	r := newRunner(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-Probe", "yes")
		fmt.Fprint(w, "<p>hi</p>")
	}))
	defer srv.Close()
	loopback := func(g *policy.Grant) {
		g.Hosts = []policy.HostRule{{Host: "127.0.0.1"}}
		g.AllowPrivate = true
	}
	tests := []struct {
		module, entry, input string
		grant                func(*policy.Grant)
		check                func(t *testing.T, out string, logs []string)
		code                 abi.Code
		message              string
	}{
		{module: "count_vowels.wasm", entry: "count_vowels", input: "hello world",
			check: func(t *testing.T, out string, _ []string) {
				var v struct{ Count, Total int }
				if err := json.Unmarshal([]byte(out), &v); err != nil || v.Count != 3 || v.Total != 3 {
					t.Fatalf("output %q: want count 3 and total 3 (vars start empty each call)", out)
				}
			}},
		{module: "hello_haskell.wasm", entry: "testing", input: "John",
			grant: func(g *policy.Grant) { g.Config = map[string]string{"greeting": "Howdy"} },
			check: wantOutput("Howdy, John")},
		{module: "config.wasm", entry: "run_test",
			grant: func(g *policy.Grant) { g.Config = map[string]string{"thing": "hello"} },
			check: wantOutput(`{"config": "hello"}`)},
		{module: "config.wasm", entry: "run_test", check: wantOutput(`{"config": "<unset by host>"}`)},
		{module: "var.wasm", entry: "run_test", check: wantOutput("a: 0")}, // a fresh instance: the var starts unset
		{module: "log.wasm", entry: "run_test", check: func(t *testing.T, _ string, logs []string) {
			all := strings.Join(logs, "\n")
			for _, s := range []string{"[info] this is an info log", "[warn] this is a warning log", "[error] this is an error log", "[debug] this is a debug log"} {
				if !strings.Contains(all, s) {
					t.Errorf("logs %q lack %q", logs, s)
				}
			}
			if strings.Contains(all, "trace log") {
				t.Errorf("logs %q keep a trace line", logs)
			}
		}},
		{module: "fail.wasm", entry: "run_test", code: abi.CodeToolError, message: "Some error message"},
		{module: "sleep.wasm", entry: "run_test", grant: func(g *policy.Grant) {
			g.Config = map[string]string{"duration": "30"}
			g.Limits.Timeout = 300 * time.Millisecond
		}, code: abi.CodeTimeout},
		{module: "http.wasm", entry: "run_test", code: abi.CodePermissionDenied, message: "jsonplaceholder.typicode.com"},
		{module: "http_headers.wasm", entry: "http_get", input: `{"url":"` + srv.URL + `"}`, grant: loopback,
			check: func(t *testing.T, out string, _ []string) {
				var h map[string]string
				if err := json.Unmarshal([]byte(out), &h); err != nil || h["content-type"] != "text/html; charset=utf-8" || h["x-probe"] != "yes" {
					t.Fatalf("headers %q", out)
				}
			}},
		{module: "http_headers.wasm", entry: "http_get", input: `{"url":"` + srv.URL + `"}`, code: abi.CodePermissionDenied, message: "127.0.0.1"},
		{module: "input_offset.wasm", entry: "input_offset_length", input: "hello world", check: func(t *testing.T, out string, _ []string) {
			if len(out) == 0 || out[0] != 11 {
				t.Fatalf("output %q, want first byte 11", out)
			}
		}},
		{module: "hello.wasm", entry: "run_test", check: wantOutput("Hello, world!")},
		{module: "alloc.wasm", entry: "run_test", check: wantOutput("")},
	}
	for _, tc := range tests {
		t.Run(tc.module+"/"+tc.entry, func(t *testing.T) {
			path, err := filepath.Abs(filepath.Join(thirdParty, tc.module))
			if err != nil {
				t.Fatal(err)
			}
			tool := toolFor(path, tc.entry)
			g := grantFor(tool)
			if tc.grant != nil {
				tc.grant(g)
			}
			res := run(t, prepare(t, r, tool, g), tc.input)
			if tc.code != "" {
				if res.Err == nil || res.Err.Code != tc.code || !strings.Contains(res.Err.Message, tc.message) {
					t.Fatalf("err = %v, want %s containing %q (logs %q)", res.Err, tc.code, tc.message, res.Logs)
				}
				return
			}
			if res.Err != nil {
				t.Fatalf("err = %v (logs %q)", res.Err, res.Logs)
			}
			tc.check(t, string(res.Output), res.Logs)
		})
	}
}

func wantOutput(want string) func(*testing.T, string, []string) {
	return func(t *testing.T, out string, logs []string) {
		t.Helper()
		if out != want {
			t.Fatalf("output %q, want %q (logs %q)", out, want, logs)
		}
	}
}
