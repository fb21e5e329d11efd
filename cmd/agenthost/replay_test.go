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

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/receipt"
	"github.com/agenthost/agenthost/host/store"
)

// replayEnv is a history whose receipts a host with the receipts hook
// wrote (the real SQLite store), and what `agenthost replay` needs to
// find the same tools under the same grants: the toolpack folders, the
// policy file and the cache folder.
type replayEnv struct {
	data, cache, policy, workspace string
	dirs                           []string
}

// replayPolicy is the policy of the replay tests: a workspace holding the
// first-party examples' fixture files, readable as a whole, and fuel
// metering (so a receipt holds the fuel used).
const replayPolicy = `workspace: %s
fileAccess:
  allowRead: ["**"]
  allowWrite: ["out/**"]
limits:
  default:
    fuel: 100000000000
`

// newReplayEnv makes the workspace (the fixture files of the data and fs
// toolpacks) and writes the policy file with extra appended.
func newReplayEnv(t *testing.T, extra string) replayEnv {
	t.Helper()
	root, _ := filepath.Abs("../..")
	tp := filepath.Join(root, "toolpacks")
	if _, err := os.Stat(filepath.Join(tp, "core", "echo.wasm")); err != nil {
		t.Fatalf("toolpacks are not built; run `make toolpacks` first (%v)", err)
	}
	base := t.TempDir()
	re := replayEnv{data: filepath.Join(base, "data"), cache: filepath.Join(os.TempDir(), "agenthost-test-cache"), workspace: filepath.Join(base, "ws"), dirs: []string{tp}}
	for _, pack := range []string{"fs", "data"} {
		// The packs share some files (the same in both): the first copy
		// of each stays.
		src := filepath.Join(tp, pack, "testdata", "workspace")
		err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			dst := filepath.Join(re.workspace, rel)
			if _, err := os.Stat(dst); err == nil {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	re.policy = filepath.Join(base, "policy.yaml")
	re.writePolicy(t, extra)
	return re
}

// writePolicy rewrites the policy file with extra appended.
func (re replayEnv) writePolicy(t *testing.T, extra string) {
	t.Helper()
	doc := strings.Replace(replayPolicy, "%s", re.workspace, 1) + extra
	if err := os.WriteFile(re.policy, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// record runs calls on a host over dirs that writes a receipt per call
// into the history, and waits for them to be written.
func (re replayEnv) record(t *testing.T, dirs []string, calls func(h *host.Host)) {
	t.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(re.data, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, filepath.Join(re.data, "agenthost.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := receipt.NewRecorder(st, receipt.RecorderOptions{})
	pol, err := policy.Load(re.policy)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(ctx, host.Options{Dirs: dirs, Policy: pol, CacheDir: re.cache, Receipts: rec})
	if err != nil {
		t.Fatal(err)
	}
	calls(h)
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if rec.Lost() > 0 {
		t.Fatalf("%d receipts lost", rec.Lost())
	}
}

// replay runs `agenthost replay` over the history with dirs (the env's
// own when nil) and returns its exit code and output.
func (re replayEnv) replay(t *testing.T, dirs []string, args ...string) (int, string) {
	t.Helper()
	code, stdout, stderr := re.run(t, dirs, args...)
	return code, stdout + stderr
}

// run runs replay with args; it returns the exit code, stdout and stderr.
func (re replayEnv) run(t *testing.T, dirs []string, args ...string) (int, string, string) {
	t.Helper()
	if dirs == nil {
		dirs = re.dirs
	}
	all := []string{"replay", "--data", re.data, "--cache-dir", re.cache, "--policy", re.policy}
	for _, d := range dirs {
		all = append(all, "--dir", d)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append(all, args...), strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// replayJSON runs replay --json with args and decodes what it printed on
// stdout (log lines go to stderr); out is both, for messages.
func (re replayEnv) replayJSON(t *testing.T, args ...string) (code int, got replayJSON, out string) {
	t.Helper()
	code, stdout, stderr := re.run(t, nil, append(args, "--json")...)
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("replay --json: %v\n%s%s", err, stdout, stderr)
	}
	return code, got, stdout + stderr
}

// replayJSON is replay --json's output.
type replayJSON struct {
	Results []replayLine  `json:"results"`
	Summary replaySummary `json:"summary"`
}

// wasiTools are the first-party tools that run on the wasi-command
// runner, code mode's guests aside (their programs call other tools).
func wasiTools(t *testing.T, h *host.Host) []*manifest.Tool {
	t.Helper()
	var out []*manifest.Tool
	for _, s := range h.Tools(host.Query{}) {
		mt, err := h.Tool(s.ToolID)
		if err != nil {
			t.Fatal(err)
		}
		if mt.Handler.Type == manifest.HandlerWasm && mt.Handler.ABI == manifest.ABIWasiCommand && !strings.HasPrefix(mt.ToolID, "code:") {
			out = append(out, mt)
		}
	}
	return out
}

// TestReplayExamples: every example of every first-party wasi-command
// tool, called through a host that writes receipts, replays from its
// receipt with the same output bit for bit (by digest), in a new
// process's host that never ran it.
func TestReplayExamples(t *testing.T) {
	re := newReplayEnv(t, "")
	calls := 0
	re.record(t, re.dirs, func(h *host.Host) {
		for _, tool := range wasiTools(t, h) {
			res, err := h.RunExamples(context.Background(), tool.ToolID)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if !r.Passed {
					t.Errorf("%s example %d: %s", r.ToolID, r.Index, r.Reason)
				}
			}
			calls += len(res)
		}
	})
	if calls < 10 {
		t.Fatalf("only %d example calls", calls)
	}
	code, got, out := re.replayJSON(t, "--since", "1")
	if code != 0 || got.Summary.Match != calls || len(got.Results) != calls {
		t.Fatalf("exit %d, %d calls: %+v\n%s", code, calls, got.Summary, out)
	}
	for _, l := range got.Results {
		if l.Status != "match" || l.OutputDigest != l.CallDigest || l.Diverged != "" {
			t.Errorf("%s: %+v", l.Tool, l)
		}
	}
	// One receipt by its call ID, in text.
	code, out = re.replay(t, nil, got.Results[0].CallID)
	if code != 0 || !strings.Contains(out, "match (output sha256 "+got.Results[0].CallDigest+")") || !strings.Contains(out, "1 replayed: 1 match") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestReplayRefusals: a receipt whose module is no longer loaded names
// the digest it needs; a changed policy is named with how the grant
// changed; a changed workspace file is a mismatch with the outputs'
// diff; a receipt that does not exist is an error.
func TestReplayRefusals(t *testing.T) {
	re := newReplayEnv(t, "")
	re.record(t, re.dirs, func(h *host.Host) {
		for _, c := range []struct{ tool, args string }{
			{"core:echo", `{"message":"hello"}`},
			{"fs:read", `{"path":"hello.txt"}`},
		} {
			if env := h.Call(context.Background(), c.tool, json.RawMessage(c.args)); env.Status != abi.StatusSuccess {
				t.Fatalf("%s: %v", c.tool, env.Error)
			}
		}
	})
	echo, err := manifest.Load(filepath.Join(re.dirs[0], "core", "echo.tool.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("module gone", func(t *testing.T) {
		code, out := re.replay(t, []string{t.TempDir()}, "1")
		if code != 1 || !strings.Contains(out, "not replayable: no loaded tool has the module the call ran (sha256 "+echo.Handler.SHA256) {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("file changed", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(re.workspace, "hello.txt"), []byte("changed since\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out := re.replay(t, nil, "2")
		if code != 1 || !strings.Contains(out, "MISMATCH") || !strings.Contains(out, "+++ replay") || !strings.Contains(out, "changed since") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("policy changed", func(t *testing.T) {
		re.writePolicy(t, "    memoryMb: 32\n  max:\n    memoryMb: 32\n")
		defer re.writePolicy(t, "")
		code, out := re.replay(t, nil, "1")
		if code != 1 || !strings.Contains(out, "the policy changed since the call") || !strings.Contains(out, `"memoryBytes":67108864`) || !strings.Contains(out, `"memoryBytes":33554432`) {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("no such receipt", func(t *testing.T) {
		code, out := re.replay(t, nil, "99")
		if code != 1 || !strings.Contains(out, "has no receipt 99") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
}

// TestReplayNotReplayable: calls of a script tool, of an Extism tool and
// of a code-mode program have receipts but are reported as not
// replayable, each with why.
func TestReplayNotReplayable(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	re := newReplayEnv(t, "isolation:\n  allowDegraded: true\n")
	re.record(t, re.dirs, func(h *host.Host) {
		ctx := context.Background()
		// The outcome does not matter: a script or Extism call is never
		// replayed, whether it ran or not.
		_ = h.Call(ctx, "py:markdown-outline", json.RawMessage(`{"markdown":"# A\n## B\n"}`))
		_ = h.Call(ctx, "web:extract-links", json.RawMessage(`{"html":"<a href=\"https://example.com\">x</a>"}`))
		// A code-mode program's inner calls answer from outside the record.
		if _, err := h.RunExamples(ctx, "code:starlark"); err != nil {
			t.Fatal(err)
		}
	})
	code, got, out := re.replayJSON(t, "--since", "1")
	if code != 1 || got.Summary.NotReplayable < 3 || got.Summary.Match+got.Summary.Mismatch > 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []struct{ tool, why string }{
		{"py:markdown-outline", "native interpreter"},
		{"web:extract-links", "Extism guest's host functions"},
		{"code:starlark", "called other tools"},
	} {
		found := false
		for _, l := range got.Results {
			if strings.HasPrefix(l.Tool, want.tool+"@") {
				found = true
				if l.Status != "not-replayable" || !strings.Contains(l.Reason, want.why) {
					t.Errorf("%s: %+v", want.tool, l)
				}
			}
		}
		if !found {
			t.Errorf("no receipt of %s: %s", want.tool, out)
		}
	}
}

// TestReplayWith: another version of core:echo (testdata/replay/echo-v2,
// which upper-cases strings) runs on the recorded calls; the call whose
// output it changes is shown as a diff, the other as the same.
func TestReplayWith(t *testing.T) {
	v2 := buildEchoV2(t)
	re := newReplayEnv(t, "")
	re.record(t, re.dirs, func(h *host.Host) {
		for _, args := range []string{`{"message":"hello"}`, `{"n":3}`} {
			if env := h.Call(context.Background(), "core:echo", json.RawMessage(args)); env.Status != abi.StatusSuccess {
				t.Fatal(env.Error)
			}
		}
	})
	code, out := re.replay(t, nil, "--since", "1", "--with", v2)
	for _, want := range []string{
		"receipt 1 (default) core:echo@1.0.0: match",
		"--with 1.1.0: output differs",
		`-  "message": "hello"`,
		`+  "message": "HELLO"`,
		"--with 1.1.0: same output",
		"2 replayed: 2 match, 0 mismatch, 0 not replayable; the other version: 1 same, 1 differ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if code != 1 || t.Failed() {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, got, out := re.replayJSON(t, "--since", "1", "--with", v2)
	if code != 1 || got.Summary.Match != 2 || got.Summary.Same != 1 || got.Summary.Differs != 1 || got.Results[0].With.Grant == "" {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// buildEchoV2 builds testdata/replay/echo-v2 as a reactor (as the
// first-party toolpacks are built) into a toolpack folder of its own.
func buildEchoV2(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("testdata", "replay", "echo-v2")
	manifestBytes, err := os.ReadFile(filepath.Join(src, "echo.tool.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "echo.tool.json"), manifestBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-o", filepath.Join(dir, "echo.wasm"), "./"+filepath.ToSlash(src))
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build echo-v2: %v\n%s", err, b)
	}
	return dir
}
