package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/wire"
)

// The code-mode task set (testdata/codetasks): tasks that need 10 to 50
// tool calls, each run in native mode (a scripted model that makes one
// call per turn and works out the next call and the answer from the
// results it was sent) and in code mode (a scripted model that sends one
// real program, JavaScript or Starlark, and answers with its result).
// Both answers must equal each other and the fixture's expected.json;
// the tokens sent to the model are counted with o200k_base.

// M is a decoded JSON object.
type M = map[string]any

// nextCall is a native model's next tool call.
type nextCall struct {
	tool string
	args M
}

// codeTask is one task of the set.
type codeTask struct {
	name   string
	prompt string
	// native decides the native model's next calls (every call known to
	// be needed next, in order: the sequential model sends the first,
	// the parallel one all of them), or its answer, from the outputs of
	// the calls made so far.
	native func(r []M) ([]nextCall, any)
}

// taskTools are the tools both modes may use.
var taskTools = []string{"core:echo", "data:csv-to-json", "fs:list", "fs:read", "hash:digest", "json:query", "text:regex", "text:stats"}

// each is one call of tool per path, under prefix.
func each(tool, prefix string, paths []string) []nextCall {
	out := make([]nextCall, len(paths))
	for i, p := range paths {
		out[i] = nextCall{tool, M{"path": prefix + p}}
	}
	return out
}

func files(r M, suffix string) []string {
	var out []string
	for _, e := range r["entries"].([]any) {
		e := e.(M)
		if e["type"] == "file" && strings.HasSuffix(e["path"].(string), suffix) {
			out = append(out, e["path"].(string))
		}
	}
	sort.Strings(out)
	return out
}

func rows(r M) []M {
	var out []M
	for _, x := range r["rows"].([]any) {
		out = append(out, x.(M))
	}
	return out
}

func num(v any) int {
	switch x := v.(type) {
	case string:
		n, _ := strconv.Atoi(x)
		return n
	case float64:
		return int(x)
	}
	return 0
}

func record(r M) M {
	var m M
	_ = json.Unmarshal([]byte(r["content"].(string)), &m)
	return m
}

var codeTasks = []codeTask{
	{name: "sales-totals", prompt: "Total amount_cents per region over every CSV in sales/.",
		native: func(r []M) ([]nextCall, any) {
			if len(r) == 0 {
				return []nextCall{{"fs:list", M{"path": "sales"}}}, nil
			}
			fs := files(r[0], ".csv")
			if n := len(r) - 1; n < len(fs) {
				return each("data:csv-to-json", "sales/", fs[n:]), nil
			}
			tot := map[string]int{}
			for _, x := range r[1:] {
				for _, row := range rows(x) {
					tot[row["region"].(string)] += num(row["amount_cents"])
				}
			}
			return nil, tot
		}},
	{name: "lookup-chain", prompt: "Start at chain/start.json and follow each record's next until it is null: how many records, the sum of their values, the last file's name.",
		native: func(r []M) ([]nextCall, any) {
			names := []string{"start.json"}
			sum := 0
			for _, x := range r {
				rec := record(x)
				sum += num(rec["value"])
				if n, ok := rec["next"].(string); ok {
					names = append(names, n)
				}
			}
			if len(r) < len(names) {
				return []nextCall{{"fs:read", M{"path": "chain/" + names[len(r)]}}}, nil
			}
			return nil, M{"steps": len(r), "sum": sum, "last": names[len(names)-1]}
		}},
	{name: "error-lines", prompt: "Count the ERROR lines per service over the log tree logs/<service>/*.log.",
		native: func(r []M) ([]nextCall, any) {
			if len(r) == 0 {
				return []nextCall{{"fs:list", M{"path": "logs", "recursive": true}}}, nil
			}
			fs := files(r[0], ".log")
			if n := len(r) - 1; n < len(fs) {
				return each("fs:read", "logs/", fs[n:]), nil
			}
			counts := map[string]int{}
			for i, x := range r[1:] {
				svc, _, _ := strings.Cut(fs[i], "/")
				counts[svc] += strings.Count(x["content"].(string), " ERROR ")
			}
			return nil, counts
		}},
	{name: "customer-join", prompt: "Join orders/*.csv to customers.csv: total amount_cents per customer country.",
		native: func(r []M) ([]nextCall, any) {
			switch len(r) {
			case 0:
				return []nextCall{{"data:csv-to-json", M{"path": "customers.csv"}}, {"fs:list", M{"path": "orders"}}}, nil
			case 1:
				return []nextCall{{"fs:list", M{"path": "orders"}}}, nil
			}
			fs := files(r[1], ".csv")
			if n := len(r) - 2; n < len(fs) {
				return each("data:csv-to-json", "orders/", fs[n:]), nil
			}
			country := map[string]string{}
			for _, c := range rows(r[0]) {
				country[c["id"].(string)] = c["country"].(string)
			}
			tot := map[string]int{}
			for _, x := range r[2:] {
				for _, o := range rows(x) {
					tot[country[o["customer_id"].(string)]] += num(o["amount_cents"])
				}
			}
			return nil, tot
		}},
	{name: "notes-deadline", prompt: "Which notes in notes/ mention a deadline? Their titles (sorted) and their word count in all (text:stats).",
		native: func(r []M) ([]nextCall, any) {
			if len(r) == 0 {
				return []nextCall{{"fs:list", M{"path": "notes"}}}, nil
			}
			fs := files(r[0], ".md")
			if n := len(r) - 1; n < len(fs) {
				return each("fs:read", "notes/", fs[n:]), nil
			}
			var hits []string
			for _, x := range r[1 : 1+len(fs)] {
				if c := x["content"].(string); strings.Contains(strings.ToLower(c), "deadline") {
					hits = append(hits, c)
				}
			}
			stats := r[1+len(fs):]
			if len(stats) < len(hits) {
				var calls []nextCall
				for _, h := range hits[len(stats):] {
					calls = append(calls, nextCall{"text:stats", M{"text": h}})
				}
				return calls, nil
			}
			titles := []string{}
			words := 0
			for i, c := range hits {
				first, _, _ := strings.Cut(c, "\n")
				titles = append(titles, strings.TrimPrefix(first, "# "))
				words += num(stats[i]["words"])
			}
			sort.Strings(titles)
			return nil, M{"titles": titles, "words": words}
		}},
	{name: "manifest-verify", prompt: "Check each file listed in release/manifest.json against its SHA-256: which do not match?",
		native: func(r []M) ([]nextCall, any) {
			if len(r) == 0 {
				return []nextCall{{"fs:read", M{"path": "release/manifest.json"}}}, nil
			}
			want := record(r[0])["files"].(M)
			var names []string
			for n := range want {
				names = append(names, n)
			}
			sort.Strings(names)
			if n := len(r) - 1; n < len(names) {
				return each("hash:digest", "release/", names[n:]), nil
			}
			bad := []string{}
			for i, x := range r[1:] {
				if x["digest"] != want[names[i]] {
					bad = append(bad, names[i])
				}
			}
			return nil, M{"mismatched": bad, "checked": len(names)}
		}},
	{name: "stock-reorder", prompt: "Which SKUs in stock/ are below their reorder_at, and what does refilling them to twice reorder_at cost (unit_cents)?",
		native: func(r []M) ([]nextCall, any) {
			if len(r) == 0 {
				return []nextCall{{"fs:list", M{"path": "stock"}}}, nil
			}
			fs := files(r[0], ".json")
			if n := len(r) - 1; n < len(fs) {
				return each("fs:read", "stock/", fs[n:]), nil
			}
			low := []string{}
			cost := 0
			for _, x := range r[1:] {
				p := record(x)
				if q, at := num(p["qty"]), num(p["reorder_at"]); q < at {
					low = append(low, p["sku"].(string))
					cost += (2*at - q) * num(p["unit_cents"])
				}
			}
			sort.Strings(low)
			return nil, M{"reorder": low, "cost_cents": cost}
		}},
	{name: "dependency-closure", prompt: "List every package that pkgs/app.json depends on, directly or transitively (each pkgs/<name>.json has deps).",
		native: func(r []M) ([]nextCall, any) {
			// The same walk as a person would do: a stack of packages to
			// read, each read once.
			seen := map[string]bool{}
			todo := []string{"app"}
			for i := 0; len(todo) > 0; i++ {
				p := todo[len(todo)-1]
				todo = todo[:len(todo)-1]
				if i == len(r) {
					return []nextCall{{"fs:read", M{"path": "pkgs/" + p + ".json"}}}, nil
				}
				for _, d := range record(r[i])["deps"].([]any) {
					if !seen[d.(string)] {
						seen[d.(string)] = true
						todo = append(todo, d.(string))
					}
				}
			}
			deps := []string{}
			for d := range seen {
				deps = append(deps, d)
			}
			sort.Strings(deps)
			return nil, M{"deps": deps, "count": len(deps)}
		}},
	{name: "word-census", prompt: "Count the words of each text in texts/ with text:stats: the total, the longest text and the words per text.",
		native: func(r []M) ([]nextCall, any) {
			if len(r) == 0 {
				return []nextCall{{"fs:list", M{"path": "texts"}}}, nil
			}
			fs := files(r[0], ".txt")
			if n := len(r) - 1; n < len(fs) {
				return each("fs:read", "texts/", fs[n:]), nil
			}
			if n := len(r) - 1 - len(fs); n < len(fs) {
				var calls []nextCall
				for _, x := range r[1+n : 1+len(fs)] {
					calls = append(calls, nextCall{"text:stats", M{"text": x["content"]}})
				}
				return calls, nil
			}
			words := M{}
			total, longest, most := 0, "", -1
			for i, f := range fs {
				w := num(r[1+len(fs)+i]["words"])
				words[f] = w
				total += w
				if w > most {
					longest, most = f, w
				}
			}
			return nil, M{"total": total, "longest": longest, "words": words}
		}},
}

// nativeModel plays a task's native script: each turn is computed from
// the tool results in the conversation. It makes one call per turn, or
// with parallel every call it knows it needs next in one turn.
type nativeModel struct {
	task     codeTask
	parallel bool
	n        int
}

func (m *nativeModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	var r []M
	for _, msg := range req.Messages {
		if msg.Role != llm.RoleTool {
			continue
		}
		var out M
		if err := json.Unmarshal([]byte(msg.Content), &out); err != nil {
			return llm.Response{}, fmt.Errorf("a tool failed: %s", msg.Content)
		}
		r = append(r, out)
	}
	next, answer := m.task.native(r)
	if len(next) == 0 {
		b, _ := json.Marshal(answer)
		return llm.Response{Content: string(b)}, nil
	}
	if !m.parallel {
		next = next[:1]
	}
	var resp llm.Response
	for _, c := range next {
		m.n++
		args, _ := json.Marshal(c.args)
		resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: fmt.Sprintf("n%d", m.n), Name: wire.Name(c.tool), Arguments: string(args)})
	}
	return resp, nil
}

// codeModel sends the task's program, then answers with its result.
type codeModel struct{ code, lang string }

func (m *codeModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role != llm.RoleTool {
		args, _ := json.Marshal(host.RunCodeArgs{Code: m.code, Language: m.lang})
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "p1", Name: host.RunCodeName, Arguments: string(args)}}}, nil
	}
	var out struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(last.Content), &out); err != nil {
		return llm.Response{Content: "the program failed: " + last.Content}, nil
	}
	return llm.Response{Content: string(out.Result)}, nil
}

// metered counts what a provider is sent: the Chat Completions body of
// each request (messages and tool definitions), in bytes and tokens.
// The time it spends counting tokens is kept apart, so that a run's
// wall time is the loop's and the tools' (a real provider encodes the
// body too; it does not run our tokenizer).
type metered struct {
	p             llm.Provider
	enc           *tiktoken.Tiktoken
	mu            sync.Mutex
	turns, tokens int
	bytes         int
	counting      time.Duration
}

func (m *metered) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	body, err := json.Marshal(llm.OpenAIBody(req, false))
	if err != nil {
		return llm.Response{}, err
	}
	start := time.Now()
	n := len(m.enc.Encode(string(body), nil, nil))
	m.mu.Lock()
	m.turns++
	m.bytes += len(body)
	m.tokens += n
	m.counting += time.Since(start)
	m.mu.Unlock()
	return m.p.Complete(ctx, req)
}

var (
	encOnce sync.Once
	enc     *tiktoken.Tiktoken
	encErr  error
)

// tokenizer is o200k_base from the vocabulary embedded in the loader
// module: no network.
func tokenizer(t testing.TB) *tiktoken.Tiktoken {
	t.Helper()
	encOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
		enc, encErr = tiktoken.GetEncoding("o200k_base")
	})
	if encErr != nil {
		t.Fatal(encErr)
	}
	return enc
}

// taskHost is a host whose workspace is the task's folder, read only.
func taskHost(t testing.TB, name string) *host.Host {
	t.Helper()
	ws, err := filepath.Abs(filepath.Join("testdata", "codetasks", name, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	tp := hosttest.Toolpacks(t)
	p := hosttest.Policy(t, "workspace: "+ws+"\nfileAccess: {allowRead: [\"**\"]}\n")
	h := hosttest.NewHost(t, p, filepath.Join(tp, "code"), filepath.Join(tp, "fs"), filepath.Join(tp, "core"), filepath.Join(tp, "data"), filepath.Join(tp, "text"))
	h.Warm(context.Background(), host.WarmOptions{})
	return h
}

// program is a task's program and its language.
func program(t testing.TB, name string) (string, string) {
	t.Helper()
	for _, lang := range []string{"js", "starlark"} {
		ext := map[string]string{"js": ".js", "starlark": ".star"}[lang]
		if b, err := os.ReadFile(filepath.Join("testdata", "codetasks", name, "program"+ext)); err == nil {
			return string(b), lang
		}
	}
	t.Fatalf("task %s has no program", name)
	return "", ""
}

// taskRun is one run of a task in one mode.
type taskRun struct {
	answer        string
	calls         int // tool calls run (in code mode: the program's)
	turns, tokens int
	bytes         int
	wall          time.Duration
}

// modeParallel is native mode with a model that sends every call it
// knows it needs next in one turn.
const modeParallel = "native-parallel"

func runTask(t testing.TB, h *host.Host, task codeTask, mode string) taskRun {
	t.Helper()
	m := &metered{enc: tokenizer(t)}
	switch mode {
	case agent.ModeNative, modeParallel:
		m.p = &nativeModel{task: task, parallel: mode == modeParallel}
		mode = agent.ModeNative
	default:
		code, lang := program(t, task.name)
		m.p = &codeModel{code: code, lang: lang}
	}
	start := time.Now()
	res, err := agent.Run(context.Background(), h, task.prompt, agent.Options{Provider: m, Mode: mode, Tools: taskTools, MaxIterations: 60})
	wall := time.Since(start) - m.counting
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "done" {
		t.Fatalf("%s in %s mode: %s %s", task.name, mode, res.Status, res.Error)
	}
	calls := 0
	for _, s := range res.Steps {
		if s.Status != "success" {
			t.Fatalf("%s in %s mode: step %+v", task.name, mode, s)
		}
		if s.ToolName != host.RunCodeName {
			calls++
		}
	}
	return taskRun{answer: res.Answer, calls: calls, turns: m.turns, tokens: m.tokens, bytes: m.bytes, wall: wall}
}

// canonical is JSON text with sorted keys, or "" when it is not JSON.
func canonical(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// matchesExpected compares an answer with expected.json, where a null
// field is known only from the tools (checked against the other mode).
func matchesExpected(t testing.TB, name, answer string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "codetasks", name, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if json.Unmarshal(b, &want) != nil || json.Unmarshal([]byte(answer), &got) != nil {
		return false
	}
	if want == nil {
		return true
	}
	wm, ok1 := want.(M)
	gm, ok2 := got.(M)
	if !ok1 || !ok2 {
		return false
	}
	for k, w := range wm {
		if w == nil {
			continue
		}
		wb, _ := json.Marshal(w)
		gb, _ := json.Marshal(gm[k])
		if string(wb) != string(gb) {
			return false
		}
	}
	return true
}

// TestCodeTasks runs the task set in native and code mode: the answers
// must agree with each other and with the fixtures, every native run
// takes 10 to 50 tool calls, both languages appear, and code mode sends
// the model at least 80 % fewer tokens than native mode over the set.
// Run with -v for the per-task table.
func TestCodeTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every task in two modes")
	}
	var nat, par, code taskRun
	langs := map[string]bool{}
	var table strings.Builder
	table.WriteString("| task | language | tool calls | native: turns, tokens | native, parallel calls: turns, tokens | code: turns, tokens | tokens saved against native, parallel |\n|---|---|---|---|---|---|---|\n")
	for _, task := range codeTasks {
		h := taskHost(t, task.name)
		n := runTask(t, h, task, agent.ModeNative)
		p := runTask(t, h, task, modeParallel)
		c := runTask(t, h, task, agent.ModeCode)
		_, lang := program(t, task.name)
		langs[lang] = true
		if n.calls < 10 || n.calls > 50 {
			t.Errorf("%s: %d tool calls in native mode, want 10 to 50", task.name, n.calls)
		}
		if c.calls != n.calls {
			t.Errorf("%s: the program made %d calls, native mode %d", task.name, c.calls, n.calls)
		}
		if canonical(n.answer) == "" || canonical(n.answer) != canonical(c.answer) || canonical(p.answer) != canonical(c.answer) || p.calls != n.calls {
			t.Errorf("%s: native answered %s, with parallel calls %s (%d calls), code %s", task.name, n.answer, p.answer, p.calls, c.answer)
		}
		if !matchesExpected(t, task.name, n.answer) || !matchesExpected(t, task.name, c.answer) {
			t.Errorf("%s: an answer differs from expected.json: native %s, code %s", task.name, n.answer, c.answer)
		}
		fmt.Fprintf(&table, "| %s | %s | %d | %d, %d | %d, %d | %d, %d | %.1f %%, %.1f %% |\n", task.name, lang, n.calls,
			n.turns, n.tokens, p.turns, p.tokens, c.turns, c.tokens, 100*(1-float64(c.tokens)/float64(n.tokens)), 100*(1-float64(c.tokens)/float64(p.tokens)))
		for _, x := range []struct{ sum, r *taskRun }{{&nat, &n}, {&par, &p}, {&code, &c}} {
			x.sum.tokens, x.sum.bytes, x.sum.turns, x.sum.calls = x.sum.tokens+x.r.tokens, x.sum.bytes+x.r.bytes, x.sum.turns+x.r.turns, x.sum.calls+x.r.calls
		}
	}
	saved := 1 - float64(code.tokens)/float64(nat.tokens)
	savedPar := 1 - float64(code.tokens)/float64(par.tokens)
	fmt.Fprintf(&table, "| total | | %d | %d, %d | %d, %d | %d, %d | %.1f %%, %.1f %% |\n", nat.calls, nat.turns, nat.tokens, par.turns, par.tokens,
		code.turns, code.tokens, 100*saved, 100*savedPar)
	t.Log("\n" + table.String())
	if !langs["js"] || !langs["starlark"] {
		t.Errorf("the set's programs are in %v; want both js and starlark", langs)
	}
	if saved < 0.80 {
		t.Errorf("code mode sent %d tokens, native %d: %.1f %% fewer, want at least 80 %%", code.tokens, nat.tokens, 100*saved)
	}
}

// BenchmarkCodeTasks runs each task in native and code mode in one run:
// ns/op is a task's wall time with the scripted model (the model's own
// time is not in it), tokens/op and bytes/op what the model is sent.
func BenchmarkCodeTasks(b *testing.B) {
	for _, task := range codeTasks {
		h := taskHost(b, task.name)
		for _, mode := range []string{agent.ModeNative, modeParallel, agent.ModeCode} {
			b.Run(task.name+"/"+mode, func(b *testing.B) {
				var last taskRun
				var wall time.Duration
				for b.Loop() {
					last = runTask(b, h, task, mode)
					wall += last.wall
				}
				// ns/op holds the token counting; wall-ns/op does not.
				b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N), "wall-ns/op")
				b.ReportMetric(float64(last.tokens), "tokens/op")
				b.ReportMetric(float64(last.bytes), "req-bytes/op")
				b.ReportMetric(float64(last.turns), "turns/op")
			})
		}
	}
}
