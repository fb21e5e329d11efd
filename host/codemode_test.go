package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/runner"
)

// testBudgets end the adversarial programs fast.
const testBudgets = `{maxSteps: "200000", maxCalls: "5", maxCallOutputBytes: "6000"}`

// codeHost is a host over the code, fs and core toolpacks with a small
// workspace, tight program budgets (so the adversarial programs end
// fast; config is code:starlark's handler config) and a 64 MiB memory cap for
// code:starlark.
func codeHost(t testing.TB, config string) *host.Host {
	t.Helper()
	return codeHostJS(t, config, `{maxCalls: "5"}`)
}

// codeHostJS is codeHost with code:js's handler config too.
func codeHostJS(t testing.TB, config, jsConfig string) *host.Host {
	t.Helper()
	ws := t.TempDir()
	for name, text := range map[string]string{"a.txt": "alpha", "b.txt": "beta", "big.txt": strings.Repeat("x", 4000), "large.txt": strings.Repeat("y", 200000)} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tp := hosttest.Toolpacks(t)
	p := hosttest.Policy(t, "workspace: "+ws+`
fileAccess: {allowRead: ["*.txt"]}
tools:
  "code:starlark":
    config: `+config+`
    limits: {max: {memoryMb: 64}}
  "code:js":
    config: `+jsConfig+`
    limits: {max: {timeoutMs: 3000, memoryMb: 96}}
`)
	h := hosttest.NewHost(t, p, filepath.Join(tp, "code"), filepath.Join(tp, "fs"), filepath.Join(tp, "core"))
	// Every tool on the compiled tier: on the interpreter (an empty cache)
	// an endless loop meets the timeout before its step budget, and a
	// program's inner calls can outrun its tight time limit.
	h.Warm(context.Background(), host.WarmOptions{})
	return h
}

// TestCodeStarlark runs programs through the real code:starlark module:
// results, logs and inner calls, and every way a program can go wrong,
// each with its own code (plus details.budget for the budgets) and a
// message the model can act on; the host serves plain calls after all.
func TestCodeStarlark(t *testing.T) {
	h := codeHost(t, testBudgets)
	tests := []struct {
		name    string
		code    string
		allowed func(string) bool
		code0   abi.Code // "" = success
		budget  string   // details.budget of a failure
		want    string   // in the output JSON, or in the error message
		steps   int      // inner calls recorded
	}{
		{name: "result and log", code: "print('hi')\nresult = {'n': 1 + 2}", want: `"result":{"n":3}`},
		{name: "main", code: "def main():\n    return [x * 2 for x in range(3)]", want: `"result":[0,2,4]`},
		{name: "inner calls by attribute, id and wire name", code: "result = [tools.fs.read(path = 'a.txt')['content'], call('fs:read', {'path': 'b.txt'})['content'], call('fs__read', path = 'a.txt')['content']]",
			want: `"result":["alpha","beta","alpha"]`, steps: 3},
		{name: "tools.search", code: "found = tools.search('read a file')\nresult = [found[0]['id'], found[0]['declaration']]", want: `"result":["fs:read","# Reads a file`},
		{name: "syntax error", code: "x = 1\nresult = (1 +", code0: abi.CodeInvalidArguments, want: "line 2, column"},
		{name: "undefined name", code: "result = nosuch", code0: abi.CodeInvalidArguments, want: "line 1, column 10: undefined: nosuch"},
		{name: "throw", code: "fail('boom')", code0: abi.CodeToolError, want: "boom"},
		{name: "infinite loop", code: "while True:\n    pass", code0: abi.CodeFuelExhausted, budget: "steps", want: "endless loop"},
		{name: "unbounded allocation", code: "x = []\nfor i in range(100000):\n    x.append('y' * 1000000)", code0: abi.CodeMemoryLimit, want: "memory cap"},
		{name: "tight loop of tool calls", code: "while True:\n    tools.core.echo(n = 1)", code0: abi.CodeFuelExhausted, budget: "calls", want: "maxCalls", steps: 5},
		{name: "inner output budget", code: "for i in range(3):\n    tools.fs.read(path = 'big.txt')", code0: abi.CodeOutputLimit, budget: "callOutputBytes", want: "maxCallOutputBytes", steps: 2},
		{name: "recursion into the code tool", code: "tools.code.starlark(code = 'result = 1')", code0: abi.CodePermissionDenied, want: "do not call each other", steps: 1},
		{name: "huge return value", code: "result = 'x' * 2000000", code0: abi.CodeOutputLimit, want: "cap"},
		{name: "outside the caller's inventory", code: "tools.fs.read(path = 'a.txt')", allowed: func(id string) bool { return id == "core:echo" },
			code0: abi.CodePermissionDenied, want: "not among the tools this caller may use", steps: 1},
		{name: "outside the caller's grant", code: "tools.fs.read(path = '../etc/passwd')", code0: abi.CodePermissionDenied, want: "fs:read failed with PERMISSION_DENIED", steps: 1},
		{name: "unknown tool", code: "tools.fs.nosuch(path = 'a.txt')", code0: abi.CodeUnknownTool, want: "fs:nosuch", steps: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var steps []host.CodeStep
			ctx := host.WithCodeScope(context.Background(), host.CodeScope{Allowed: tc.allowed, Step: func(s host.CodeStep) { steps = append(steps, s) }})
			args, _ := json.Marshal(map[string]any{"code": tc.code})
			env := h.Call(ctx, "code:starlark", args)
			if tc.code0 == "" {
				if env.Error != nil {
					t.Fatalf("failed: %v", env.Error)
				}
				if !strings.Contains(string(env.Output), tc.want) {
					t.Fatalf("output %s, want %s", env.Output, tc.want)
				}
			} else {
				if env.Error == nil || env.Error.Code != tc.code0 || !strings.Contains(env.Error.Message, tc.want) {
					t.Fatalf("got %+v, want %s with %q", env.Error, tc.code0, tc.want)
				}
				d, _ := env.Error.Details.(map[string]any)
				if b, _ := d["budget"].(string); b != tc.budget {
					t.Fatalf("details.budget = %q, want %q (details %v)", b, tc.budget, env.Error.Details)
				}
			}
			if len(steps) != tc.steps {
				t.Fatalf("%d steps recorded, want %d", len(steps), tc.steps)
			}
		})
	}
	if env := h.Call(context.Background(), "core:echo", json.RawMessage(`{"still":"serving"}`)); env.Error != nil {
		t.Fatalf("host stopped serving: %v", env.Error)
	}
}

// TestCodeStarlarkExample runs the manifest's example: a program with
// input, print and main().
func TestCodeStarlarkInput(t *testing.T) {
	h := codeHost(t, testBudgets)
	env := h.Call(context.Background(), "code:starlark", json.RawMessage(`{"code":"result = {'sum': input['a'] + input['b'], 'calls': tools.core.echo(x = input['a'])}","input":{"a":2,"b":3}}`))
	if env.Error != nil {
		t.Fatalf("failed: %v", env.Error)
	}
	if got, want := string(env.Output), `{"result":{"calls":{"x":2},"sum":5},"log":[],"calls":1}`; got != want {
		t.Fatalf("output %s, want %s", got, want)
	}
}

// TestCodeJS runs JavaScript programs through the real code:js module:
// await on a tool, a caught failure, and the errors a program can end
// with. goja has no step counter, so an endless loop ends at the
// deadline.
func TestCodeJS(t *testing.T) {
	h := codeHost(t, testBudgets)
	tests := []struct {
		name  string
		code  string
		code0 abi.Code
		want  string
	}{
		{name: "await tools", code: "const a = await tools.fs.read({path: 'a.txt'});\nconst b = await call('fs__read', {path: 'b.txt'});\nconsole.log(a.content);\nreturn a.content + b.content", want: `"result":"alphabeta","log":["alpha"],"calls":2`},
		{name: "caught denial", code: "try { await tools.fs.read({path: '../etc/passwd'}) } catch (e) { return e.code }", want: `"result":"PERMISSION_DENIED"`},
		{name: "tools.search", code: "const found = await tools.search('read a file');\nreturn found[0].declaration", want: `tools.fs.read(args: {`},
		{name: "recursion", code: "return await tools.code.starlark({code: 'result = 1'})", code0: abi.CodePermissionDenied, want: "do not call each other"},
		{name: "syntax error", code: "let x = 1;\nreturn (1 +;", code0: abi.CodeInvalidArguments, want: "syntax error at line 2"},
		{name: "throw", code: "throw new Error('boom')", code0: abi.CodeToolError, want: "boom"},
		{name: "endless loop", code: "for (;;) {}", code0: abi.CodeTimeout, want: "3000 ms"},
		{name: "tight loop of tool calls", code: "for (;;) { await tools.core.echo({n: 1}) }", code0: abi.CodeFuelExhausted, want: "maxCalls"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]any{"code": tc.code})
			env := h.Call(context.Background(), "code:js", args)
			if tc.code0 == "" {
				if env.Error != nil || !strings.Contains(string(env.Output), tc.want) {
					t.Fatalf("got %s, %v; want %s", env.Output, env.Error, tc.want)
				}
				return
			}
			if env.Error == nil || env.Error.Code != tc.code0 || !strings.Contains(env.Error.Message, tc.want) {
				t.Fatalf("got %+v, want %s with %q", env.Error, tc.code0, tc.want)
			}
		})
	}
}

// TestCodeLargeAnswer reads an answer larger than the guest's first
// buffer (64 KiB): the import holds it and the guest fetches it with a
// second call, and the tool runs once.
func TestCodeLargeAnswer(t *testing.T) {
	h := codeHost(t, `{maxCallOutputBytes: "1000000"}`)
	var steps int
	ctx := host.WithCodeScope(context.Background(), host.CodeScope{Step: func(host.CodeStep) { steps++ }})
	env := h.Call(ctx, "code:starlark", json.RawMessage(`{"code":"r = tools.fs.read(path = 'large.txt', limit = 150000)\nresult = [len(r['content']), r['content'][-3:]]"}`))
	if env.Error != nil || string(env.Output) != `{"result":[150000,"yyy"],"log":[],"calls":1}` || steps != 1 {
		t.Fatalf("got %s, %v, %d steps", env.Output, env.Error, steps)
	}
}

// TestCodeReuse runs programs of two callers of one host (two scopes:
// tenants have hosts and pools of their own) alternately on the code
// tools' pooled instances: what one program leaves (globals, patched
// prototypes and JSON, a secret in its memory) is never seen by the
// next, also after a program that hit its memory limit, and ordinary
// programs (a few MiB of data, as a program over many files holds)
// reuse their instance: only the memory bomb discards one.
func TestCodeReuse(t *testing.T) {
	h := codeHost(t, testBudgets)
	const secret = "s3cr3t-7f1c"
	type prog struct {
		code  string
		code0 abi.Code // "" = success
		want  string   // the output, or in the error message
	}
	langs := []struct {
		tool         string
		set, probe   prog
		bomb         prog
		probeCleanly string
	}{
		{
			tool: "code:js",
			set: prog{code: "const rows = [];\nfor (let i = 0; i < 3000; i++) rows.push({i, s: input + i});\nglobalThis.secret = input; var kept = input;\nObject.prototype.leak = input;\nArray.prototype.map = function () { return [input] };\nJSON.stringify = function () { return '\"' + input + '\"' };\nreturn (await tools.core.echo({s: input})).s",
				want: `{"result":"` + secret + `","log":[],"calls":1}`},
			probe: prog{code: "return [typeof secret, typeof kept, typeof ({}).leak, [1].map(x => x + 1)[0], JSON.stringify({a: 1}), (await tools.core.echo({n: 2})).n]",
				want: `{"result":["undefined","undefined","undefined",2,"{\"a\":1}",2],"log":[],"calls":1}`},
			bomb: prog{code: "const a = [];\nfor (;;) a.push(input.repeat(1000000) + a.length)", code0: abi.CodeMemoryLimit},
		},
		{
			tool: "code:starlark",
			set:  prog{code: "rows = [{'i': i, 's': input + str(i)} for i in range(2000)]\nsecret = input\nresult = tools.core.echo(s = input)['s']", want: `{"result":"` + secret + `","log":[],"calls":1}`},
			// A global of an earlier program is not even declared.
			probe: prog{code: "result = [secret, tools.core.echo(n = 2)['n']]", code0: abi.CodeInvalidArguments, want: "undefined: secret"},
			bomb:  prog{code: "a = []\nfor i in range(100000):\n    a.append(input * 100000 + str(i))", code0: abi.CodeMemoryLimit},
		},
	}
	for _, lang := range langs {
		t.Run(lang.tool, func(t *testing.T) {
			run := func(caller string, p prog) {
				t.Helper()
				var steps []host.CodeStep
				ctx := host.WithCodeScope(context.Background(), host.CodeScope{
					Allowed: func(id string) bool { return id == "core:echo" },
					Step:    func(s host.CodeStep) { steps = append(steps, s) },
				})
				args, _ := json.Marshal(map[string]any{"code": p.code, "input": secret})
				env := h.Call(ctx, lang.tool, args)
				if p.code0 == "" {
					if env.Error != nil || string(env.Output) != p.want {
						t.Fatalf("%s: got %s, %v; want %s", caller, env.Output, env.Error, p.want)
					}
				} else if env.Error == nil || env.Error.Code != p.code0 || !strings.Contains(env.Error.Message, p.want) {
					t.Fatalf("%s: got %s, %+v; want %s with %q", caller, env.Output, env.Error, p.code0, p.want)
				}
				if p.code0 == "" && len(steps) != 1 {
					t.Fatalf("%s: %d steps recorded, want 1", caller, len(steps))
				}
			}
			before := poolStats(t, h, lang.tool)
			for range 4 { // more rounds than the pool has instances
				run("A", lang.set)
				run("B", lang.probe)
			}
			run("A", lang.bomb)
			for range 4 {
				run("B", lang.probe)
				run("A", lang.set)
			}
			after := poolStats(t, h, lang.tool)
			if d := after.Discards - before.Discards; d > 1 {
				t.Fatalf("%d instances discarded, want at most the memory bomb's (a program within the heap's headroom keeps its instance)", d)
			}
		})
	}
}

// poolStats is the pool of tool id, from Host.Health.
func poolStats(t *testing.T, h *host.Host, id string) runner.PoolStats {
	t.Helper()
	for _, th := range h.Health() {
		if th.ID == id && th.Pool != nil {
			return *th.Pool
		}
	}
	t.Fatalf("%s has no pool", id)
	return runner.PoolStats{}
}
