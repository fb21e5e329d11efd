package workflow_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/budget"
)

// TestBudgetHoldsAcrossNesting runs a tree of workflows five levels deep,
// three nodes a level (363 calls, 243 of them of a leaf tool that lingers
// so that calls overlap), under one root budget: the leaf calls in
// flight never exceed the budget's, however deep the nesting (each level
// used to bring its own parallel limit), and a budget of fewer calls in
// all stops the tree with the budget's error.
func TestBudgetHoldsAcrossNesting(t *testing.T) {
	var inFlight, high atomic.Int64
	type none struct{}
	leaf := host.Func(host.FuncSpec{ID: "app:leaf", Description: "Lingers a moment."}, func(ctx context.Context, _ none) (map[string]int, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for h := high.Load(); n > h && !high.CompareAndSwap(h, n); h = high.Load() {
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
		}
		return map[string]int{"ok": 1}, nil
	})
	flows := map[string]string{}
	for level := 1; level <= 5; level++ {
		next := fmt.Sprintf("workflow:level%d", level+1)
		if level == 5 {
			next = "app:leaf"
		}
		flows[fmt.Sprintf("level%d.workflow.json", level)] = fmt.Sprintf(`{"id":"level%d","description":"d",
			"interfaceOutputs":{"o":{"dataFlowType":"OBJECT"}},"outputs":{"o":"${nodes.a.output}"},
			"nodes":[{"id":"a","tool":%q},{"id":"b","tool":%q},{"id":"c","tool":%q}]}`, level, next, next, next)
	}
	h := newHost(t, writeFlows(t, flows), leaf)
	for _, c := range []struct {
		name     string
		lim      budget.Limits
		wantCode abi.Code
	}{
		{"in flight", budget.Limits{InFlight: 8}, ""},
		{"calls in all", budget.Limits{InFlight: 8, Calls: 50}, abi.CodeToolError},
	} {
		t.Run(c.name, func(t *testing.T) {
			high.Store(0)
			ctx, cancel := budget.With(context.Background(), budget.New(c.lim))
			defer cancel()
			env := h.Call(ctx, "workflow:level1", nil)
			if c.wantCode == "" {
				if env.Error != nil {
					t.Fatalf("the tree failed: %+v", env.Error)
				}
			} else if env.Error == nil || env.Error.Code != c.wantCode {
				t.Fatalf("want %s, got %+v", c.wantCode, env.Error)
			}
			if got := high.Load(); got > int64(c.lim.InFlight) || got == 0 {
				t.Fatalf("%d leaf calls in flight at once; the budget allows %d", got, c.lim.InFlight)
			}
		})
	}
}
