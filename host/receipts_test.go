package host_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/internal/cputime"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/receipt"
	"github.com/agenthost/agenthost/host/store"
)

// TestReceipts runs calls through Call, CallArgs and Exec on a host that
// records receipts, and checks each receipt against its call: the tool,
// its module's digest, the grant's, the arguments' and the output's, the
// outcome; then the tenant's chain verifies.
func TestReceipts(t *testing.T) {
	ctx := context.Background()
	mem := receipt.NewMemory(100)
	rec := receipt.NewRecorder(mem, receipt.RecorderOptions{})
	pol, err := policy.Parse([]byte(`{"tools": {"text:stats": {"deny": true}}}`), "policy.json")
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t), Tenant: "acme", Receipts: rec, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	echo, err := h.Tool("core:echo")
	if err != nil {
		t.Fatal(err)
	}
	envs := []abi.Envelope{
		h.Call(ctx, "core:echo", json.RawMessage(`{"b":"two","a":1}`)),
		h.CallArgs(ctx, "core:echo", map[string]any{"a": "x"}),
		h.Call(ctx, "text:stats", json.RawMessage(`{"text":"hi"}`)),
		h.Exec(ctx, `<ACTION><core:echo><a>3</a></core:echo></ACTION>`).Results[0],
		h.Call(ctx, "nope:missing", nil), // no tool: no receipt
	}
	h.Close(ctx)
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var got []*receipt.Receipt
	for r, err := range mem.Receipts("acme") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 4 {
		t.Fatalf("%d receipts for 4 calls of tools", len(got))
	}
	wantArgs := []string{`{"a":1,"b":"two"}`, `{"a":"x"}`, `{"text":"hi"}`, `{"a":"3"}`}
	for i, r := range got {
		env := envs[i]
		if r.Tenant != "acme" || r.Seq != uint64(i+1) || r.Tool != env.ToolID || len(r.CallID) != 16 || r.End < r.Start || r.Start == 0 {
			t.Errorf("receipt %d: %+v", i+1, r)
		}
		if string(r.Args) != wantArgs[i] || r.ArgsDigest != receipt.Digest([]byte(wantArgs[i])) || r.OutputDigest != receipt.Digest(env.Output) {
			t.Errorf("receipt %d digests: args %s", i+1, r.Args)
		}
		code := ""
		if env.Error != nil {
			code = string(env.Error.Code)
		}
		if r.Status != string(env.Status) || r.Code != code || r.Approval != nil {
			t.Errorf("receipt %d outcome: %s %s, the envelope %s %s", i+1, r.Status, r.Code, env.Status, code)
		}
	}
	e := got[0]
	if e.ToolVersion != echo.Version || e.Runner != "wasm:wasi-command" && e.Runner != "wasm:extism" || e.Module == "" || e.Grant == "" || e.Grant != got[1].Grant || e.Grant == got[2].Grant {
		t.Errorf("echo's receipt: %s %s %s %s", e.ToolVersion, e.Runner, e.Module, e.Grant)
	}
	if got[2].Code != string(abi.CodePermissionDenied) {
		t.Errorf("the denied call's receipt: %+v", got[2])
	}
	rep, err := receipt.Verify("acme", mem.Receipts("acme"), mem.Signatures("acme"), nil)
	if err != nil || rep.Break != nil || rep.Receipts != 4 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// TestRecordRemote records the receipt of a call another process ran:
// the tool and version, the arguments as this host coerces them, the
// output and outcome, and no module or grant (they were the worker's);
// an unknown tool has none, and a host without receipts records nothing.
func TestRecordRemote(t *testing.T) {
	ctx := context.Background()
	mem := receipt.NewMemory(10)
	rec := receipt.NewRecorder(mem, receipt.RecorderOptions{})
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t), Tenant: "acme", Receipts: rec})
	if err != nil {
		t.Fatal(err)
	}
	env := abi.Envelope{ToolID: "core:echo", Status: abi.StatusSuccess, Output: json.RawMessage(`{"b":"two","a":1}`)}
	start := time.Now()
	h.RecordRemote(ctx, "core:echo", json.RawMessage(`{"b":"two","a":1}`), env, start)
	h.RecordRemote(ctx, "nope:missing", json.RawMessage(`{}`), env, start)
	h.RecordRemote(ctx, "core:echo", json.RawMessage(`not json`), abi.Failure("core:echo", abi.Errorf(abi.CodeInvalidArguments, "bad")), start)
	h.Close(ctx)
	rec.Close(ctx)
	var got []*receipt.Receipt
	for r := range mem.Receipts("acme") {
		got = append(got, r)
	}
	if len(got) != 2 {
		t.Fatalf("%d receipts", len(got))
	}
	r := got[0]
	if r.Runner != host.RunnerRemote || r.Module != "" || r.Grant != "" || r.Tool != "core:echo" || r.ToolVersion == "" ||
		string(r.Args) != `{"a":1,"b":"two"}` || r.OutputDigest != receipt.Digest(env.Output) || r.Start != start.UTC().UnixNano() || r.Status != "success" {
		t.Fatalf("remote receipt: %+v", r)
	}
	if got[1].Code != string(abi.CodeInvalidArguments) || string(got[1].Args) != `"not json"` {
		t.Fatalf("remote failure: %+v", got[1])
	}
	// Without receipts: nothing, and no panic.
	plain := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	plain.RecordRemote(ctx, "core:echo", json.RawMessage(`{}`), env, start)
}

// linkOnly is a receipt store that links receipts and keeps only each
// chain's head: the host's and the recorder's share of a receipt without
// a database's.
type linkOnly struct{ heads map[string]*receipt.Receipt }

func (l *linkOnly) AppendReceipts(_ context.Context, rs []*receipt.Receipt) error {
	for _, r := range rs {
		var seq uint64
		prev := ""
		if h := l.heads[r.Tenant]; h != nil {
			seq, prev = h.Seq, h.Hash
		}
		r.Link(seq+1, prev)
		l.heads[r.Tenant] = r
	}
	return nil
}

func (l *linkOnly) AddReceiptSignature(context.Context, *receipt.Signature) error { return nil }

// BenchmarkReceipts is a core:echo call without receipts ("off"), with
// them linked in memory ("linked") and written to a SQLite history store
// ("sqlite"), in the same run; the same on a Go tool that does nothing
// (go-*) shows the receipt's own cost, which the WebAssembly call's noise
// would hide.
func BenchmarkReceipts(b *testing.B) {
	ctx := context.Background()
	argsOf := map[string]json.RawMessage{"core:echo": json.RawMessage(`{"a":1}`), "bench:noop": json.RawMessage(`{}`)}
	type none struct{}
	noop := host.Func(host.FuncSpec{ID: "bench:noop", Description: "Does nothing."}, func(context.Context, none) (none, error) { return none{}, nil })
	// CPU time is measured per call, so nothing may run beside the calls:
	// no background compile (the module compiles at the first call) and
	// no trimming of the cache folder.
	b.Setenv("AGENTHOST_WASM_TIERING", "off")
	for _, mode := range []string{"off", "linked", "sqlite"} {
		opts := host.Options{Dirs: []string{hosttest.Toolpacks(b)}, CacheDir: hosttest.CacheDir(b), Tools: []host.Tool{noop}, Tenant: "acme", CacheMaxBytes: -1}
		var rec *receipt.Recorder
		switch mode {
		case "linked":
			rec = receipt.NewRecorder(&linkOnly{heads: map[string]*receipt.Receipt{}}, receipt.RecorderOptions{})
			opts.Receipts = rec
		case "sqlite":
			st, err := store.Open(ctx, filepath.Join(b.TempDir(), "agenthost.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			rec = receipt.NewRecorder(st, receipt.RecorderOptions{})
			opts.Receipts = rec
		}
		h, err := host.New(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		h.Call(ctx, "core:echo", argsOf["core:echo"])
		for _, tool := range []string{"core:echo", "bench:noop"} {
			name := mode
			if tool == "bench:noop" {
				name = "go-" + mode
			}
			b.Run(name, func(b *testing.B) {
				cpu0 := cputime.Process()
				for b.Loop() {
					if env := h.Call(ctx, tool, argsOf[tool]); env.Error != nil {
						b.Fatal(env.Error)
					}
				}
				// The process's CPU per call, the writer's included: a
				// busy shared machine inflates the wall time, not this.
				b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
		h.Close(ctx)
		if rec != nil {
			if err := rec.Close(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}
