package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/budget"
)

// CallFunc makes one tool call for a node: the host's call pipeline, so
// the node's tool validates its arguments and runs under its own grant.
type CallFunc func(ctx context.Context, tool string, args json.RawMessage) abi.Envelope

// Run runs the workflow on input (the validated arguments, a JSON object):
// nodes in dependency order, independent ones at once (at most
// MaxParallel), then the outputs. A failing node stops the run (nodes in
// flight are cancelled) and its error is the workflow's, with the node's
// code and details {node, tool}. Run gives no deadline of its own: the
// caller's ctx carries the workflow's timeout.
//
// Every node's call draws from the root call's budget (budget.From(ctx);
// a run without one is a root and makes one), so workflows nested in
// workflows share one allowance of calls in flight, calls in all and
// wall time, instead of each level adding MaxParallel of its own. The
// run gives back the place in flight its own call held: it only waits.
func (w *Workflow) Run(ctx context.Context, input []byte, call CallFunc) (json.RawMessage, *abi.Error) {
	budget.Yield(ctx)
	if budget.From(ctx) == nil {
		var cancel context.CancelFunc
		ctx, cancel = budget.With(ctx, budget.New(budget.Limits{}))
		defer cancel()
	}
	s := &scope{w: w, outputs: make([]nodeOutput, len(w.Nodes))}
	if len(bytes.TrimSpace(input)) > 0 {
		if err := decodeNumber(input, &s.inputs); err != nil {
			return nil, abi.Errorf(abi.CodeInvalidArguments, "workflow %s: the input is not a JSON object: %s", w.ID, err.Error())
		}
	}
	if s.inputs == nil {
		s.inputs = map[string]any{}
	}
	for name, p := range w.InterfaceInputs {
		if _, ok := s.inputs[name]; !ok && p.Config != nil && p.Config.Default != nil {
			s.inputs[name] = p.Config.Default
		}
	}
	if err := w.runNodes(ctx, s, call); err != nil {
		return nil, err
	}
	return w.assemble(s)
}

type finished struct {
	node int
	env  abi.Envelope
}

// runNodes schedules the nodes: a node starts once every node it reads
// has finished. Arguments are resolved on this goroutine; only the calls
// run concurrently.
func (w *Workflow) runNodes(ctx context.Context, s *scope, call CallFunc) *abi.Error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := len(w.Nodes)
	waiting := make([]int, n)
	dependents := make([][]int, n)
	var ready []int
	for i, d := range w.deps {
		waiting[i] = len(d)
		for _, j := range d {
			dependents[j] = append(dependents[j], i)
		}
		if len(d) == 0 {
			ready = append(ready, i)
		}
	}
	done := make(chan finished, n)
	b := budget.From(ctx)
	running, finishedCount := 0, 0
	var failure *abi.Error
	for finishedCount < n && failure == nil {
		for len(ready) > 0 && running < MaxParallel {
			i := ready[0]
			ready = ready[1:]
			args, err := w.nodeArgs(s, i)
			if err != nil {
				failure = err
				break
			}
			slot, err := b.Acquire(ctx)
			if err != nil {
				failure = w.nodeError(i, err)
				break
			}
			running++
			go func() {
				env := call(budget.WithSlot(ctx, slot), w.Nodes[i].Tool, args)
				slot.Release()
				done <- finished{i, env}
			}()
		}
		if failure != nil || running == 0 {
			break
		}
		f := <-done
		running--
		finishedCount++
		if f.env.Error != nil || f.env.Status != abi.StatusSuccess {
			failure = w.nodeError(f.node, f.env.Error)
			break
		}
		s.outputs[f.node] = nodeOutput{raw: f.env.Output}
		for _, d := range dependents[f.node] {
			if waiting[d]--; waiting[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	if failure != nil {
		cancel()
		for ; running > 0; running-- {
			<-done
		}
		return failure
	}
	return nil
}

// nodeArgs resolves node i's arguments to JSON.
func (w *Workflow) nodeArgs(s *scope, i int) (json.RawMessage, *abi.Error) {
	v, _, err := w.args[i].eval(s)
	if err != nil {
		return nil, w.nodeError(i, abi.Errorf(abi.CodeToolError, "resolving its arguments: %s", err.Error()))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, w.nodeError(i, abi.Errorf(abi.CodeInternal, "encoding its arguments: %s", err.Error()))
	}
	return b, nil
}

// nodeError is the workflow's error for a failed node: the node's code,
// a message naming the node and tool, and details {node, tool, error}.
func (w *Workflow) nodeError(i int, e *abi.Error) *abi.Error {
	n := w.Nodes[i]
	if e == nil {
		e = abi.Errorf(abi.CodeInternal, "the call failed without an error")
	}
	d := map[string]any{"node": n.ID, "tool": n.Tool}
	if e.Details != nil {
		d["error"] = e.Details
	}
	return abi.Errorf(e.Code, "workflow %s: node %q (%s) failed: %s", w.ID, n.ID, n.Tool, e.Message).WithDetails(d)
}

// assemble builds the workflow's output: the one interface output's
// value, or an object of them all.
func (w *Workflow) assemble(s *scope) (json.RawMessage, *abi.Error) {
	names := sortedKeys(w.InterfaceOutputs)
	vals := make(map[string]any, len(names))
	for _, name := range names {
		v, ok, err := w.outputs[name].eval(s)
		if err != nil {
			return nil, abi.Errorf(abi.CodeToolError, "workflow %s: output %q: %s", w.ID, name, err.Error())
		}
		if !ok {
			v = nil
		}
		vals[name] = v
	}
	var out any = vals
	if len(names) == 1 {
		out = vals[names[0]]
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, abi.Errorf(abi.CodeInternal, "workflow %s: encoding the output: %s", w.ID, err.Error())
	}
	return b, nil
}

func decodeNumber(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}
