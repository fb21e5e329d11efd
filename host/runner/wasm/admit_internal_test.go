package wasm

import (
	"context"
	"testing"
)

// TestGate: a full gate admits a caller after minAdmissionWait without a
// place (it never blocks for long); a place given back admits the next;
// a done context stops the wait.
func TestGate(t *testing.T) {
	ctx := context.Background()
	g := make(gate, 1)
	first := g.enter(ctx)
	if !first.held {
		t.Fatal("an empty gate did not admit")
	}
	late := g.enter(ctx)
	if late.held {
		t.Fatal("a full gate gave a second place")
	}
	late.leave() // holds none: must not free the first caller's place
	if len(g) != 1 {
		t.Fatalf("gate holds %d places", len(g))
	}
	first.leave()
	next := g.enter(ctx)
	if !next.held {
		t.Fatal("a freed place was not given")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if g.enter(done).held {
		t.Fatal("a done context got a place in a full gate")
	}
	next.leave()
	next.leave() // idempotent
	if len(g) != 0 {
		t.Fatalf("gate holds %d places after every leave", len(g))
	}
}
