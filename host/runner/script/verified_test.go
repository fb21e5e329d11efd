package script_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/runner/script"
)

// TestRunsTheVerifiedScript: a script changed after its manifest loaded
// never runs. Changed before Prepare, the tool is a LOAD_ERROR; changed
// after Prepare, every call still runs the bytes read and checked then.
// The script's neighbours (a helper module it imports) stay reachable.
func TestRunsTheVerifiedScript(t *testing.T) {
	r := newRunner(t)
	requireIsolation(t, r)
	tests := []struct {
		lang, name, code, helperName, helper, edited, want string
	}{
		{
			lang: script.LangPython, name: "main.py",
			code:       "import json, sys, helper\njson.dump({\"v\": helper.V}, sys.stdout)\n",
			helperName: "helper.py", helper: "V = \"signed\"\n",
			edited: "import sys\nsys.stdout.write('{\"v\": \"edited\"}')\n",
			want:   `{"v": "signed"}`,
		},
		{
			lang: script.LangNode, name: "main.js",
			code:       "process.stdout.write(JSON.stringify({v: require(\"./helper\").v}));\n",
			helperName: "helper.js", helper: "exports.v = \"signed\";\n",
			edited: "process.stdout.write('{\"v\":\"edited\"}');\n",
			want:   `{"v":"signed"}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.lang, func(t *testing.T) {
			requireLang(t, tc.lang)
			load := func(t *testing.T) (*fixture, string) {
				t.Helper()
				f := newFixture(t, tc.lang, tc.code)
				dir := f.tool.Dir
				if err := os.WriteFile(filepath.Join(dir, tc.helperName), []byte(tc.helper), 0o644); err != nil {
					t.Fatal(err)
				}
				doc := `{"toolId":"test:tool","displayName":"Test tool","version":"1.0.0","description":"A test tool that reports a value from its helper module.",
"handler":{"type":"external-script","scriptPath":"` + tc.name + `","language":"` + tc.lang + `"},
"parameters":{"type":"object"}}`
				path := filepath.Join(dir, "t.tool.json")
				if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
				tool, err := manifest.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				f.tool = tool
				return f, filepath.Join(dir, tc.name)
			}
			edit := func(t *testing.T, path string) {
				t.Helper()
				if err := os.WriteFile(path, []byte(tc.edited), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			t.Run("changed after Prepare", func(t *testing.T) {
				f, path := load(t)
				p := prepare(t, r, f)
				for i, change := range []bool{false, true} {
					if change {
						edit(t, path)
					}
					res := call(t, p, `{}`)
					if res.Err != nil || string(res.Output) != tc.want {
						t.Fatalf("call %d: %s (%v), want %s; logs %q", i, res.Output, res.Err, tc.want, res.Logs)
					}
				}
			})
			t.Run("changed before Prepare", func(t *testing.T) {
				f, path := load(t)
				edit(t, path)
				_, err := r.Prepare(context.Background(), f.tool, f.grant)
				if !errors.Is(err, abi.ErrLoadError) || !strings.Contains(err.Error(), "changed since load") {
					t.Fatalf("Prepare of an edited script: %v, want a LOAD_ERROR saying it changed", err)
				}
			})
		})
	}
}
