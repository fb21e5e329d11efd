package mcp_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/jobs"
	"github.com/agenthost/agenthost/host/mcp"
	"github.com/agenthost/agenthost/host/store"
)

// TestTasksTenants: two tenants' MCP servers on one job engine (as serve
// runs them). A task of one tenant, of either protocol revision, is
// answered to the other exactly as an unknown task is (the same error,
// the ID aside): no existence oracle. Its own tenant sees it, and a
// cancel of it once ended changes nothing.
func TestTasksTenants(t *testing.T) {
	ctx := context.Background()
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t), slowPack(t))
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := jobs.New(ctx, jobs.Options{Store: st, Run: func(ctx context.Context, _, tool string, args json.RawMessage) (abi.Envelope, error) {
		return h.Call(ctx, tool, args), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	servers := map[string]*mcp.Server{}
	for _, tenant := range []string{"a", "b"} {
		servers[tenant] = mcp.New(h, mcp.Options{Jobs: e, Tenant: tenant})
		defer servers[tenant].Close()
	}
	a, b := newRawStdio(t, servers["a"]), newRawStdio(t, servers["b"])

	// The session revision.
	r := decode(t, a.roundTrip(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"core__echo","arguments":{"x":1},"task":{}}}`, false))
	var created struct{ Task taskOf }
	if err := json.Unmarshal(r.Result, &created); err != nil || created.Task.TaskID == "" {
		t.Fatalf("created: %s %+v", r.Result, r.Error)
	}
	id := created.Task.TaskID
	<-servers["a"].TaskDone(id)
	unknown := strings.Repeat("0", len(id))
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		msg := `{"jsonrpc":"2.0","id":3,"method":"` + method + `","params":{"taskId":"%s"}}`
		other := decode(t, b.roundTrip(t, strings.Replace(msg, "%s", id, 1), false))
		none := decode(t, b.roundTrip(t, strings.Replace(msg, "%s", unknown, 1), false))
		if other.Error == nil || none.Error == nil || other.Error.Code != none.Error.Code ||
			strings.Replace(other.Error.Message, id, unknown, 1) != none.Error.Message {
			t.Errorf("%s of another tenant's task: %+v; of an unknown one: %+v", method, other.Error, none.Error)
		}
		if method == "tasks/get" {
			if mine := decode(t, a.roundTrip(t, strings.Replace(msg, "%s", id, 1), false)); mine.Error != nil || !strings.Contains(string(mine.Result), `"completed"`) {
				t.Errorf("the task's own tenant: %+v %s", mine.Error, mine.Result)
			}
		}
	}
	if r := decode(t, b.roundTrip(t, `{"jsonrpc":"2.0","id":4,"method":"tasks/list","params":{}}`, false)); r.Error != nil || string(r.Result) != `{"tasks":[]}` {
		t.Errorf("another tenant's list: %+v %s", r.Error, r.Result)
	}
	// A cancel of the ended task: refused, its final state in the data.
	line := a.roundTrip(t, `{"jsonrpc":"2.0","id":5,"method":"tasks/cancel","params":{"taskId":"`+id+`"}}`, false)
	if !strings.Contains(line, `"code":-32602`) || !strings.Contains(line, `"status":"completed"`) {
		t.Errorf("cancel of an ended task: %s", line)
	}
	if j, err := e.Get(ctx, "a", id); err != nil || j.Result == nil || string(j.Result.Output) != `{"x":1}` {
		t.Errorf("the job after the cancel: %+v %v", j, err)
	}

	// The 2026-07-28 extension.
	const withTasks = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	ma, mb := newRawStdioNoInit(t, servers["a"]), newRawStdioNoInit(t, servers["b"])
	var answer struct{ Result struct{ TaskID string } }
	line = ma.roundTrip(t, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"test__slow","arguments":{"benign":true},`+withTasks+`}}`, false)
	if err := json.Unmarshal([]byte(line), &answer); err != nil || answer.Result.TaskID == "" {
		t.Fatalf("modern create: %s", line)
	}
	id = answer.Result.TaskID
	<-servers["a"].TaskDone(id)
	unknown = strings.Repeat("0", len(id))
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		msg := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{"taskId":"%s",` + withTasks + `}}`
		other := mb.roundTrip(t, strings.Replace(msg, "%s", id, 1), false)
		none := mb.roundTrip(t, strings.Replace(msg, "%s", unknown, 1), false)
		if !strings.Contains(none, `"error"`) || strings.Replace(other, id, unknown, -1) != none {
			t.Errorf("%s of another tenant's task: %s; of an unknown one: %s", method, other, none)
		}
	}
	// Ended: a cancel is acknowledged and the result stays.
	ma.roundTrip(t, `{"jsonrpc":"2.0","id":8,"method":"tasks/cancel","params":{"taskId":"`+id+`",`+withTasks+`}}`, false)
	if line := ma.roundTrip(t, `{"jsonrpc":"2.0","id":9,"method":"tasks/get","params":{"taskId":"`+id+`",`+withTasks+`}}`, false); !strings.Contains(line, `"status":"completed"`) || !strings.Contains(line, `"benign":true`) {
		t.Errorf("modern get after a cancel of the ended task: %s", line)
	}
}

// TestCallsHoldTheTenantLimit: with the engine of serve, a plain
// tools/call takes a place of the tenant's limit like a task does. A
// tenant limited to one call at once, with no queue, whose task holds
// that place, gets its plain calls (stdio, the HTTP fast path, the SDK's
// dispatch) refused as calls that did not run; once the task ends, they
// run.
func TestCallsHoldTheTenantLimit(t *testing.T) {
	ctx := context.Background()
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))
	release := make(chan struct{})
	type none struct{}
	if err := h.Register(host.Func(host.FuncSpec{ID: "app:hold", Description: "Waits to be released."}, func(ctx context.Context, _ none) (none, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return none{}, nil
	})); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := jobs.New(ctx, jobs.Options{Store: st, MaxConcurrent: 1, MaxQueued: -1,
		Run: func(ctx context.Context, _, tool string, args json.RawMessage) (abi.Envelope, error) {
			return h.Call(ctx, tool, args), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	opts := mcp.Options{Jobs: e, Tenant: "a"}
	srv, ts := serveHTTP(t, h, opts)
	_, slow := serveHTTP(t, h, mcp.Options{Jobs: e, Tenant: "a", NoFastPath: true})
	stdio := newRawStdio(t, srv)
	web, sdkWeb := newRawHTTP(t, ts.URL), newRawHTTP(t, slow.URL)
	clients := map[string]session{
		"stdio":    func(t *testing.T, msg string) rpc { return decode(t, stdio.roundTrip(t, msg, false)) },
		"http":     func(t *testing.T, msg string) rpc { _, body := web.post(t, msg, false); return decode(t, body) },
		"http-sdk": func(t *testing.T, msg string) rpc { _, body := sdkWeb.post(t, msg, false); return decode(t, body) },
	}
	const echo = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"core__echo","arguments":{"e":1}}}`
	r := decode(t, stdio.roundTrip(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"app__hold","arguments":{},"task":{}}}`, false))
	if r.Error != nil {
		t.Fatalf("the task: %+v", r.Error)
	}
	for name, send := range clients {
		r := send(t, echo)
		if r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "did not run") ||
			!strings.Contains(string(r.Result), `"limit":"tenant"`) {
			t.Errorf("%s: a call past the limit: %+v %s", name, r.Error, r.Result)
		}
	}
	close(release)
	var created struct{ Task taskOf }
	_ = json.Unmarshal(r.Result, &created)
	<-srv.TaskDone(created.Task.TaskID)
	for name, send := range clients {
		if r := send(t, echo); r.Error != nil || !strings.Contains(string(r.Result), `"structuredContent":{"e":1}`) {
			t.Errorf("%s: a call with room: %+v %s", name, r.Error, r.Result)
		}
	}
}
