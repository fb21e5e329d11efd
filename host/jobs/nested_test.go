package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/jobs"
)

// counter is a native tool, app:probe, that counts how many of its calls
// run at once; each lasts a moment, long enough to overlap.
type counter struct{ inFlight, high, calls atomic.Int64 }

func (c *counter) tool() host.Tool {
	type in struct {
		N int `json:"n"`
	}
	return host.Func(host.FuncSpec{ID: "app:probe", Description: "Counts the calls at once."}, func(ctx context.Context, a in) (map[string]int, error) {
		c.calls.Add(1)
		n := c.inFlight.Add(1)
		defer c.inFlight.Add(-1)
		for h := c.high.Load(); n > h && !c.high.CompareAndSwap(h, n); h = c.high.Load() {
		}
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]int{"n": a.N}, nil
	})
}

// fanWorkflow is workflow:fan, six app:probe nodes that may all run at
// once.
func fanWorkflow(t *testing.T) string {
	t.Helper()
	var nodes []string
	for i := range 6 {
		nodes = append(nodes, fmt.Sprintf(`{"id":"p%d","tool":"app:probe","args":{"n":%d}}`, i, i))
	}
	doc := `{"id":"fan","description":"Six probes at once.","version":"1.0.0",
		"interfaceInputs":{},"interfaceOutputs":{"n":{"dataFlowType":"INTEGER"}},
		"outputs":{"n":"${nodes.p5.output.n}"},"nodes":[` + strings.Join(nodes, ",") + `]}`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fan.workflow.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// nestedEngine is an engine whose calls run on a host with code:starlark,
// app:probe and workflow:fan, limited to limit calls at once per tenant.
func nestedEngine(t *testing.T, c *counter, limit int) *jobs.Engine {
	t.Helper()
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{CacheDir: hosttest.CacheDir(t), Tools: []host.Tool{c.tool()},
		Dirs: []string{filepath.Join(hosttest.Toolpacks(t), "code"), fanWorkflow(t)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	// Compiled code: the programs' inner calls on the interpreter could
	// outrun their time limit on a busy machine.
	h.Warm(ctx, host.WarmOptions{})
	e, err := jobs.New(ctx, jobs.Options{Store: openStore(t, filepath.Join(t.TempDir(), "db")), MaxConcurrent: limit, MaxQueued: 256,
		Run: func(ctx context.Context, _, tool string, args json.RawMessage) (abi.Envelope, error) {
			return h.Call(ctx, tool, args), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// program is a code:starlark call whose program runs workflow:fan (six
// probes that may run at once) and then n probes one by one.
func program(n int) json.RawMessage {
	code := fmt.Sprintf("w = tools.workflow.fan()\ns = 0\nfor i in range(%d):\n    s += tools.app.probe(n = i)['n']\nresult = {'sum': s, 'fan': w}", n)
	b, _ := json.Marshal(map[string]any{"code": code})
	return b
}

// TestNestedCallsHoldTheTenantLimit: a tenant limited to 2 calls at once
// runs synchronous calls, jobs, programs whose inner calls fan out
// through a workflow, and such programs as jobs, all at the same time;
// never more than 2 probes run at once (a program or a workflow that
// waits on its inner calls lends them its place rather than counting
// twice), and everything ends with its answer.
func TestNestedCallsHoldTheTenantLimit(t *testing.T) {
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			c := &counter{}
			e := nestedEngine(t, c, limit)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			errs := make(chan string, 64)
			check := func(what string, env abi.Envelope, err error) {
				if err != nil || env.Error != nil {
					errs <- fmt.Sprintf("%s: %v %+v", what, err, env.Error)
				}
			}
			for i := range 4 {
				wg.Add(4)
				go func() {
					defer wg.Done()
					env, err := e.Call(ctx, "acme", "app:probe", json.RawMessage(`{"n":1}`))
					check("a synchronous call", env, err)
				}()
				go func() {
					defer wg.Done()
					env, err := e.Call(ctx, "acme", "code:starlark", program(5))
					check("a synchronous program", env, err)
				}()
				go func() {
					defer wg.Done()
					j, err := e.Start(ctx, "acme", jobs.Request{Tool: "app:probe", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
					if err != nil {
						errs <- err.Error()
						return
					}
					j = wait(t, e, "acme", j.ID)
					check("a job", *j.Result, nil)
				}()
				go func() {
					defer wg.Done()
					j, err := e.Start(ctx, "acme", jobs.Request{Tool: "code:starlark", Args: program(3 + i)})
					if err != nil {
						errs <- err.Error()
						return
					}
					j = wait(t, e, "acme", j.ID)
					check("a program's job", *j.Result, nil)
				}()
			}
			wg.Wait()
			close(errs)
			for msg := range errs {
				t.Error(msg)
			}
			// 4 calls, 4 jobs, 4 programs of 6+5 and 4 of 6+3..6 probes.
			if want := int64(4 + 4 + 4*11 + 4*6 + 3 + 4 + 5 + 6); c.calls.Load() != want {
				t.Errorf("%d probes ran, want %d", c.calls.Load(), want)
			}
			if h := c.high.Load(); h > int64(limit) {
				t.Errorf("%d probes ran at once; the tenant's limit is %d", h, limit)
			}
		})
	}
}

// TestNestedCallsWithoutEngine: a workflow called straight on the host,
// with no engine and so no tenant limit, still runs its nodes at once
// (the budget alone holds them): the limit above is the engine's doing.
func TestNestedCallsWithoutEngine(t *testing.T) {
	c := &counter{}
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{CacheDir: t.TempDir(), Tools: []host.Tool{c.tool()}, Dirs: []string{fanWorkflow(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	for range 100 {
		if env := h.Call(ctx, "workflow:fan", json.RawMessage(`{}`)); env.Error != nil {
			t.Fatal(env.Error)
		}
		if c.high.Load() > 1 {
			return
		}
	}
	t.Errorf("the workflow's nodes never ran at once (%d at most)", c.high.Load())
}
