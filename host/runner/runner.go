// Package runner defines the contract between the host and the code that
// executes a tool: a [Runner] prepares (compiles, caches) a tool once under
// its grant, and the resulting [Prepared] runs one call at a time, each in
// fresh state.
//
// Lifecycle and performance rules:
//   - Prepare may be slow (compilation, instrumentation, dependency
//     installation); its result is cached by the host per (tool, grant).
//   - Run must be safe for concurrent use by many goroutines and must give
//     every call fresh guest state: nothing of one call is visible to the
//     next except files under the grant's CacheDir.
//   - Run returns a Go error only when the host is at fault. Every tool
//     failure (trap, non-zero exit, limit, refused access) is a Result with
//     Err set.
package runner

import (
	"context"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/hashicorp/go-hclog"
)

// Runner compiles a tool for its grant.
type Runner interface {
	// Prepare compiles and caches tool under grant. Errors are load
	// errors (code LOAD_ERROR in the chain, or mapped to it).
	Prepare(ctx context.Context, tool *manifest.Tool, grant *policy.Grant) (Prepared, error)
}

// Prepared runs calls of one prepared tool.
type Prepared interface {
	// Run executes one call. ctx carries no deadline of the grant: the
	// runner applies grant.Limits.Timeout itself.
	Run(ctx context.Context, req Request) (Result, error)
}

// Closer is implemented by a Prepared that holds resources beyond its
// compiled module (pools of instances or memories): the host calls Close
// once the tool has left the catalogue and its last call has returned.
type Closer interface {
	Close() error
}

// PoolStats are what a Prepared that keeps ready instances says of its
// pool: calls served by a pooled instance (Hits), calls that had to make
// one (Misses), and instances thrown away instead of reused (Discards).
type PoolStats struct {
	Hits, Misses, Discards uint64
	// Waits counts the calls that found every instance busy and waited
	// for one (admission control); each then counts as a hit, or as a
	// miss when none came back in time.
	Waits uint64 `json:",omitempty"`
	// Ready is how many instances wait for a call now; Instances how
	// many exist (ready, in use or being restored).
	Ready     int
	Instances int `json:",omitempty"`
}

// Statser is implemented by a Prepared with a pool of instances.
type Statser interface {
	PoolStats() PoolStats
}

// Request is one call.
type Request struct {
	// Input is the validated, coerced arguments as compact JSON with
	// sorted object keys.
	Input []byte
	// Logger receives host-side diagnostics about the call; never nil
	// when set by the host (use hclog.NewNullLogger otherwise).
	Logger hclog.Logger
	// Env holds variables for this call only (short-lived credentials),
	// added to the grant's. Runners whose environment is fixed at prepare
	// time do not take tools that need it (the manifest says so at load).
	Env map[string]string
	// Replay, when set, is a call's Result.Recorded to run the call
	// again with: the same random bytes and clock readings, from the
	// same start-up. The runner then uses no pooled instance, and its
	// sleeps return at once (the readings are the recorded ones).
	Replay *Recorded
}

// Result is the outcome of one call.
type Result struct {
	// Output is the raw bytes the guest produced (stdout, or the Extism
	// output), at most Limits.MaxOutputBytes.
	Output []byte
	// Logs are the guest's stderr / log lines and host notes about
	// refused accesses, at most 64 KiB in all, truncated with a marker.
	Logs []string
	// Err is nil on success. A failed call whose run saw a refused access
	// has code PERMISSION_DENIED.
	Err *abi.Error
	// Usage is what the call consumed.
	Usage abi.Usage
	// Recorded is what the guest saw besides its arguments (random
	// bytes, clock readings), for an exact replay; nil from a runner
	// that does not record.
	Recorded *Recorded
}
