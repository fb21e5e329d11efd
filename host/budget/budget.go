// Package budget is one root call's allowance: how many calls it may have
// running at once, how many it may make in all, and until when. The
// budget travels in the context, so that everything the root call sets
// off (the nodes of nested workflows, a program's inner calls) draws from
// the one allowance instead of each level bringing its own.
package budget

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/abi"
)

// Defaults of Limits.
const (
	DefaultInFlight = 16
	DefaultCalls    = 1024
	DefaultWall     = 10 * time.Minute
)

// Limits size a budget. A zero field takes its default.
type Limits struct {
	// InFlight caps the calls that run a tool at once.
	InFlight int
	// Calls caps the calls made in all.
	Calls int
	// Wall caps the time from the root call's start.
	Wall time.Duration
}

// Budget is the allowance of one root call. It is safe for concurrent
// use.
type Budget struct {
	lim      Limits
	slots    chan struct{}
	calls    atomic.Int64
	deadline time.Time
}

// New returns a fresh budget whose wall time starts now.
func New(l Limits) *Budget {
	if l.InFlight <= 0 {
		l.InFlight = DefaultInFlight
	}
	if l.Calls <= 0 {
		l.Calls = DefaultCalls
	}
	if l.Wall <= 0 {
		l.Wall = DefaultWall
	}
	return &Budget{lim: l, slots: make(chan struct{}, l.InFlight), deadline: time.Now().Add(l.Wall)}
}

// Limits returns the budget's limits, defaults filled in.
func (b *Budget) Limits() Limits { return b.lim }

// Deadline is the end of the budget's wall time.
func (b *Budget) Deadline() time.Time { return b.deadline }

// Calls is how many calls the budget has allowed so far.
func (b *Budget) Calls() int64 { return b.calls.Load() }

type budgetKey struct{}
type slotKey struct{}

// With returns ctx carrying b, with b's deadline.
func With(ctx context.Context, b *Budget) (context.Context, context.CancelFunc) {
	return context.WithDeadline(context.WithValue(ctx, budgetKey{}, b), b.deadline)
}

// From returns the budget ctx carries, or nil.
func From(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}

// Slot is one call's place among the budget's calls in flight.
type Slot struct {
	b    *Budget
	held atomic.Bool
}

// Acquire counts one more call and waits for a place in flight (or ctx).
// The error is TIMEOUT past the wall time, TOOL_ERROR with details
// {"budget": "calls"} past the call count, CANCELLED when ctx ends.
func (b *Budget) Acquire(ctx context.Context) (*Slot, *abi.Error) {
	if n := b.calls.Add(1); n > int64(b.lim.Calls) {
		return nil, abi.Errorf(abi.CodeToolError, "the call's budget of %d calls in all is spent", b.lim.Calls).WithDetails(map[string]any{"budget": "calls"})
	}
	if !time.Now().Before(b.deadline) {
		return nil, abi.Errorf(abi.CodeTimeout, "the call's budget of %s is spent", b.lim.Wall)
	}
	select {
	case b.slots <- struct{}{}:
		s := &Slot{b: b}
		s.held.Store(true)
		return s, nil
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			return nil, abi.Errorf(abi.CodeTimeout, "no place in flight before the deadline (the budget allows %d calls at once)", b.lim.InFlight)
		}
		return nil, abi.Errorf(abi.CodeCancelled, "cancelled while waiting for a place in flight")
	}
}

// Release gives the slot back; a second Release does nothing.
func (s *Slot) Release() {
	if s != nil && s.held.CompareAndSwap(true, false) {
		<-s.b.slots
	}
}

// WithSlot returns ctx carrying the slot of the call it is for, so that
// Yield can find it.
func WithSlot(ctx context.Context, s *Slot) context.Context {
	return context.WithValue(ctx, slotKey{}, s)
}

// Yield gives back the slot of the call ctx is for, if it holds one: a
// call that only waits on calls of its own (a workflow) does not count in
// flight, so that only calls running a tool do, and a nested run never
// waits for a place its own caller holds.
func Yield(ctx context.Context) {
	if s, _ := ctx.Value(slotKey{}).(*Slot); s != nil {
		s.Release()
	}
}
