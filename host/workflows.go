package host

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/registry"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/workflow"
)

// Defaults of a workflow tool's grant when the policy sets none.
const (
	defaultWorkflowTimeout   = 60 * time.Second
	defaultWorkflowMaxOutput = 1 << 20
)

// workflowRunner runs workflow tools: each node through the host's own
// call pipeline, so every node runs under its own tool's grant and the
// workflow gains no capability.
type workflowRunner struct{ h *Host }

// Prepare parses the workflow and prepares its nodes' tools, so that
// compiling them is not charged to the first call's timeout. A node tool
// that fails to prepare is left for its call to report.
func (r workflowRunner) Prepare(ctx context.Context, t *manifest.Tool, g *policy.Grant) (runner.Prepared, error) {
	w, err := workflow.Load(t.WorkflowFile())
	if err != nil {
		return nil, err
	}
	for _, id := range w.Tools() {
		if nt, err := r.h.reg.Lookup(id); err == nil {
			_, _ = r.h.prepare(ctx, nt)
		}
	}
	return &workflowCall{h: r.h, w: w, grant: g}, nil
}

type workflowCall struct {
	h     *Host
	w     *workflow.Workflow
	grant *policy.Grant
}

type depthKey struct{}

// Run runs the workflow under its grant's timeout (over all nodes) and
// output cap; workflows calling workflows nest at most workflow.MaxDepth
// deep.
func (c *workflowCall) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	depth, _ := ctx.Value(depthKey{}).(int)
	if depth >= workflow.MaxDepth {
		return runner.Result{Err: abi.Errorf(abi.CodeToolError, "workflow %s: workflows call workflows more than %d deep", c.w.ID, workflow.MaxDepth)}, nil
	}
	timeout := c.grant.Limits.Timeout
	if timeout <= 0 {
		timeout = defaultWorkflowTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, depthKey{}, depth+1), timeout)
	defer cancel()
	out, aerr := c.w.Run(ctx, req.Input, c.h.Call)
	if aerr != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && context.Cause(ctx) == context.DeadlineExceeded {
			aerr = abi.Errorf(abi.CodeTimeout, "workflow %s: %s", c.w.ID, aerr.Message).WithDetails(aerr.Details)
		}
		return runner.Result{Err: aerr}, nil
	}
	max := c.grant.Limits.MaxOutputBytes
	if max <= 0 {
		max = defaultWorkflowMaxOutput
	}
	if int64(len(out)) > int64(max) {
		return runner.Result{Err: abi.Errorf(abi.CodeOutputLimit, "workflow %s: the output is %d bytes; the limit is %d", c.w.ID, len(out), max)}, nil
	}
	return runner.Result{Output: out}, nil
}

// checkWorkflows checks every workflow tool in reg against reg (its
// tools are loaded, types agree, no workflow reaches itself) and rejects
// those that fail, as LOAD_ERRORs. It runs once the whole catalogue is
// known; the caller holds h.cat.mu.
func (h *Host) checkWorkflows(reg *registry.Registry) []registry.Failure {
	var flows []*manifest.Tool
	parsed := map[string]*workflow.Workflow{}
	var failures []registry.Failure
	for _, t := range reg.All() {
		if t.Handler.Type != manifest.HandlerWorkflow {
			continue
		}
		w, err := workflow.Load(t.WorkflowFile())
		if err != nil {
			failures = append(failures, reg.Reject(t, err))
			continue
		}
		flows = append(flows, t)
		parsed[t.ToolID] = w
	}
	lookup := func(id string) (*manifest.Tool, bool) {
		t, err := reg.Lookup(id)
		return t, err == nil
	}
	calls := func(id string) []string {
		if w := parsed[id]; w != nil {
			return w.Tools()
		}
		return nil
	}
	// Workflows calling each other in a cycle are rejected first, each
	// with the cycle it is part of.
	kept := flows[:0]
	for _, t := range flows {
		if cyc := workflow.CallCycle(t.ToolID, calls); cyc != nil {
			err := &manifest.Error{Path: t.WorkflowFile(), Pointer: "/nodes", Reason: "workflows call each other in a cycle: " + strings.Join(cyc, " → ")}
			failures = append(failures, reg.Reject(t, err))
			continue
		}
		kept = append(kept, t)
	}
	flows = kept
	// A workflow rejected here may be a node of another: check again
	// until nothing more is rejected.
	for changed := true; changed; {
		changed = false
		kept := flows[:0]
		for _, t := range flows {
			w := parsed[t.ToolID]
			err := w.Check(lookup)
			if err == nil {
				kept = append(kept, t)
				continue
			}
			var me *manifest.Error
			if errors.As(err, &me) {
				me.Path = t.WorkflowFile()
			}
			failures = append(failures, reg.Reject(t, err))
			changed = true
		}
		flows = kept
	}
	return failures
}

// hasWorkflows reports whether a workflow tool is loaded or failed to
// load (then a change of the Go tools may change what loads).
func (h *Host) hasWorkflows() bool {
	for _, t := range h.reg.All() {
		if t.Handler.Type == manifest.HandlerWorkflow {
			return true
		}
	}
	for _, f := range h.reg.Failures() {
		if strings.HasPrefix(f.ToolID, manifest.NamespaceWorkflow+":") {
			return true
		}
	}
	return false
}
