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
// codes"). ctx is the call's context; runErr what instantiate or _start
// returned. A Go error is returned only when the caller cancelled ctx.
func (p *prepared) result(ctx context.Context, c *call, runErr error) (runner.Result, error) {
	memSize, memReached, memAsked := c.memory.state()
	res := runner.Result{
		Output: c.stdout.Bytes(),
		Usage:  abi.Usage{MemoryBytes: memSize},
	}
	var exit *sys.ExitError
	isExit := errors.As(runErr, &exit)
	failed := runErr != nil && !(isExit && exit.ExitCode() == 0)
	cause := context.Cause(ctx)

	var e *abi.Error
	switch {
	case c.stdout.Exceeded():
		e = errorf(abi.CodeOutputLimit, "output is larger than the %d-byte cap", p.limits.MaxOutputBytes)
	case !failed:
		// Success: exit 0 (or _start returned).
	case errors.Is(cause, errTimeout) || errors.Is(cause, context.DeadlineExceeded):
		e = errorf(abi.CodeTimeout, "the call ran longer than %s", p.limits.Timeout)
	case memReached || errors.Is(cause, errMemoryLimit):
		e = errorf(abi.CodeMemoryLimit, "memory cap of %d bytes reached (the guest asked for %d)", p.limits.MemoryBytes, memAsked)
	case ctx.Err() != nil:
		return runner.Result{}, fmt.Errorf("call cancelled: %w", cause)
	case isExit:
		e = runner.ExitFailure(exit.ExitCode(), res.Output, c.logs.Lines())
	default:
		msg, trace, _ := strings.Cut(runErr.Error(), "\n")
		if trace != "" {
			c.logs.Add("trap: " + runErr.Error())
		}
		e = errorf(abi.CodeToolError, "%s", msg)
	}
	res.Err = runner.Refused(e, c.denials.Lines())
	res.Logs = c.logs.Lines()
	return res, nil
}
