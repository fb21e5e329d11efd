// Package budget is one root call's allowance: how many calls it may have
// running at once, how many it may make in all, and until when. The
// budget travels in the context, so that everything the root call sets
// off (the nodes of nested workflows, a program's inner calls) draws from
// the one allowance instead of each level bringing its own. A budget may
// also share its tenant's Places, so that those calls count against the
// tenant's limit of calls at once as the root call does.
package budget

import (
	"context"
	"fmt"
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
	// places, when set, are the tenant's: each call of the budget takes
	// one, or borrows the root call's (lent) while it is free.
	places *Places
	lent   chan struct{}
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

// Slot is one call's place among the budget's calls in flight (and
// among its tenant's, with Places).
type Slot struct {
	b    *Budget
	held atomic.Bool
	// place: the slot holds one of the tenant's places; borrowed: it is
	// the root call's, to give back to the budget, not to the tenant.
	place, borrowed bool
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
	s := &Slot{b: b}
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, waitError(ctx, fmt.Sprintf("the budget allows %d calls at once", b.lim.InFlight))
	}
	if b.places != nil {
		// The root call's own place first: it is free while the root
		// only waits on its calls, and taking it never waits on a place
		// that an ancestor holds.
		select {
		case <-b.lent:
			s.place, s.borrowed = true, true
		case b.places.slots <- struct{}{}:
			s.place = true
		case <-ctx.Done():
			<-b.slots
			return nil, waitError(ctx, fmt.Sprintf("the tenant runs %d calls at once", cap(b.places.slots)))
		}
	}
	s.held.Store(true)
	return s, nil
}

// waitError is the error of a wait for a place that ctx ended.
func waitError(ctx context.Context, limit string) *abi.Error {
	if ctx.Err() == context.DeadlineExceeded {
		return abi.Errorf(abi.CodeTimeout, "no place in flight before the deadline (%s)", limit)
	}
	return abi.Errorf(abi.CodeCancelled, "cancelled while waiting for a place in flight")
}

// Release gives the slot back; a second Release does nothing.
func (s *Slot) Release() {
	if s == nil || !s.held.CompareAndSwap(true, false) {
		return
	}
	<-s.b.slots
	switch {
	case s.borrowed:
		s.b.lent <- struct{}{}
	case s.place:
		s.b.places.Release()
	}
}

// Places are a tenant's places for calls running at once, shared by all
// of its root calls and the calls they set off (host/jobs keeps one per
// tenant). It is safe for concurrent use.
type Places struct{ slots chan struct{} }

// NewPlaces returns n places (at least one).
func NewPlaces(n int) *Places { return &Places{slots: make(chan struct{}, max(n, 1))} }

// TryAcquire takes a place if one is free.
func (p *Places) TryAcquire() bool {
	select {
	case p.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// Acquire waits for a place, or for ctx.
func (p *Places) Acquire(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release gives a place back.
func (p *Places) Release() { <-p.slots }

// Cap is the number of places.
func (p *Places) Cap() int { return cap(p.slots) }

// InUse is how many places are taken.
func (p *Places) InUse() int { return len(p.slots) }

// Share makes b's calls take p's places: a root call that holds one of
// p's places lends it to the calls it sets off, so that while it waits
// on them one of them runs in its place instead of waiting for another.
// Without it, a root call holding the tenant's last place would wait
// forever for a place for its own inner call. Call it once, before the
// budget is used.
func (b *Budget) Share(p *Places) {
	b.places, b.lent = p, make(chan struct{}, 1)
	b.lent <- struct{}{}
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
