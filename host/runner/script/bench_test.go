package script_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/script"
)

// BenchmarkBridge compares one call through the bridge (fresh $TMP,
// Landlock, namespaces, prlimit, scrubbed env, capped output) with a bare
// spawn of the same interpreter on the same script and input. The
// isolation overhead is isolated/bare - 1.
func BenchmarkBridge(b *testing.B) {
	r, err := script.New(script.Options{CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	input := []byte(`{"a":1,"b":"two"}`)
	for _, tc := range []struct{ lang, code string }{
		{script.LangPython, pyEcho},
		{script.LangNode, nodeEcho},
	} {
		prog := map[string]string{script.LangPython: "python3", script.LangNode: "node"}[tc.lang]
		if _, err := exec.LookPath(prog); err != nil {
			continue
		}
		f := newFixtureB(b, tc.lang, tc.code)
		exe, err := script.InterpreterExe(r, tc.lang)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.lang+"/bare", func(b *testing.B) {
			args := []string{filepath.Join(f.tool.Dir, f.tool.Handler.ScriptPath)}
			if tc.lang == script.LangPython {
				args = append([]string{"-B"}, args...)
			}
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(exe, args...)
				cmd.Stdin = bytes.NewReader(input)
				cmd.Dir = b.TempDir()
				out, err := cmd.Output()
				if err != nil || len(out) == 0 {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.lang+"/isolated", func(b *testing.B) {
			p, err := r.Prepare(context.Background(), f.tool, f.grant)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				res, err := p.Run(context.Background(), runner.Request{Input: input})
				if err != nil || res.Err != nil {
					b.Fatal(err, res.Err)
				}
			}
		})
	}
}
