package wasm

import (
	"context"
	"runtime"
	"time"
)

// Guest code never yields its core: a goroutine running calls back to
// back keeps it for the Go runtime's whole preemption slice (10 ms)
// while other callers wait, so with more callers than cores some calls
// waited many times their length. Calls on pooled instances therefore go
// through a gate as wide as GOMAXPROCS whose waiters are served in
// arrival order: with more callers than cores, they take turns call by
// call. A call waits at most minAdmissionWait for the gate, then runs
// beside it, and a guest that sleeps leaves the gate while it sleeps, so
// a slow tool never holds the others back for long.

// gate admits calls to run guest code, GOMAXPROCS at a time.
type gate chan struct{}

func newGate() gate { return make(gate, runtime.GOMAXPROCS(0)) }

// ticket is one call's place in the gate.
type ticket struct {
	g    gate
	held bool
}

// enter takes a place, waiting in arrival order for at most
// minAdmissionWait (or until ctx is done); the ticket holds no place
// when the wait ran out.
func (g gate) enter(ctx context.Context) *ticket {
	t := &ticket{g: g}
	t.reenter(ctx)
	return t
}

// reenter takes a place again after leave.
func (t *ticket) reenter(ctx context.Context) {
	select {
	case t.g <- struct{}{}:
		t.held = true
		return
	default:
	}
	wait := time.NewTimer(minAdmissionWait)
	defer wait.Stop()
	select {
	case t.g <- struct{}{}:
		t.held = true
	case <-wait.C:
	case <-ctx.Done():
	}
}

// leave gives the place back, if the ticket holds one.
func (t *ticket) leave() {
	if t.held {
		t.held = false
		<-t.g
	}
}
