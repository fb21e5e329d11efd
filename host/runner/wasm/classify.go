package wasm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/sys"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/runner"
)

// result maps how a call ended to a Result (docs/RUNNER.md, "Error
// codes"). runErr is what instantiate or _start returned, stopped the
// cause of the call's context if it was done when the guest returned. A
// limit that stopped the guest wins over how the guest ended: a guest
// whose sleep was cut short by the deadline may still exit 0. A Go error
// is returned only when the caller cancelled.
func (p *prepared) result(c *call, runErr, stopped error) (runner.Result, error) {
	memSize, memReached, memAsked := c.memory.state()
	res := runner.Result{
		Output: c.stdout.Bytes(),
		Usage:  abi.Usage{MemoryBytes: memSize},
	}
	var budgetErr *abi.Error
	if c.budget != nil {
		budgetErr = c.budget.Err()
		if p.limits.Fuel > 0 {
			used := c.budget.Used()
			res.Usage.Fuel = &used
		}
	}
	var exit *sys.ExitError
	isExit := errors.As(runErr, &exit)
	failed := runErr != nil && !(isExit && exit.ExitCode() == 0)

	var e *abi.Error
	switch {
	case c.stdout.Exceeded():
		e = abi.Errorf(abi.CodeOutputLimit, "output is larger than the %d-byte cap", p.limits.MaxOutputBytes)
	case errors.Is(stopped, errTimeout) || errors.Is(stopped, context.DeadlineExceeded):
		e = abi.Errorf(abi.CodeTimeout, "the call ran longer than %s", p.limits.Timeout)
	case errors.Is(stopped, errMemoryLimit) || failed && memReached:
		e = abi.Errorf(abi.CodeMemoryLimit, "memory cap of %d bytes reached (the guest asked for %d)", p.limits.MemoryBytes, memAsked)
	case stopped != nil:
		return runner.Result{}, fmt.Errorf("call cancelled: %w", stopped)
	case toolStopOf(runErr) != nil:
		e = toolStopOf(runErr) // a program budget (toolcall.go)
	case budgetErr != nil:
		e = budgetErr
	case !failed:
		// Success: exit 0 (or _start returned).
	case isExit:
		e = runner.ExitFailure(exit.ExitCode(), res.Output, c.logs.Lines())
	default:
		msg, trace, _ := strings.Cut(runErr.Error(), "\n")
		if trace != "" {
			c.logs.Add("trap: " + runErr.Error())
		}
		e = abi.Errorf(abi.CodeToolError, "%s", msg)
	}
	res.Err = runner.Refused(e, c.mounts.denials.Lines(), c.mounts.denials.Count())
	res.Logs = c.logs.Lines()
	return res, nil
}
