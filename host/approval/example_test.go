package approval_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/policy"
)

// A call blocks in Ask until a front-end that watches the pending
// requests answers it.
func ExampleBroker_Ask() {
	b, _ := approval.NewBroker(approval.Options{})
	rules := approval.NewRules([]policy.ApproveRule{{Tools: []string{"fs:*"}, When: &policy.ApproveWhen{Args: map[string]string{"path": "secrets/**"}}}})
	call := approval.Call{Tenant: "acme", Tool: "fs:write", Args: []byte(`{"path":"secrets/key","text":"x"}`)}
	m, _ := rules.Match(call)
	fmt.Println("risks:", m.Risks)

	events, stop, _ := b.Subscribe("acme")
	defer stop()
	go func() {
		ev := <-events // the console, the HTTP API, the terminal ...
		_, _, _ = b.Decide("acme", ev.Request.ID, approval.AllowOnce, 0, "acme/alice")
	}()
	req := approval.Request{Tenant: "acme", Tool: "fs:write", Arguments: call.Args, ArgumentsDigest: approval.Digest(call.Args)}
	rec, err := b.Ask(context.Background(), req, m)
	fmt.Println(rec.Decision, rec.By, err)
	// Output:
	// risks: [args:path]
	// allow-once acme/alice <nil>
}

// A stateless front-end does not wait: it gets the request and a signed
// state, asks its client, and makes the call again with the answer.
func ExampleNoWait() {
	b, _ := approval.NewBroker(approval.Options{})
	m := approval.Match{Rule: 0, Risks: []string{}, Timeout: 2 * time.Minute}
	args := []byte(`{"path":"notes.txt"}`)
	req := approval.Request{Tenant: "acme", Tool: "fs:write", Arguments: args, ArgumentsDigest: approval.Digest(args)}

	ctx, deferred := approval.NoWait(context.Background())
	_, err := b.Ask(ctx, req, m)
	need, _ := deferred.Needed()
	fmt.Println(err != nil, need.Request.Tool)

	// ... the client answers "allow-once", handing back need.State ...
	ctx = approval.WithAnswer(context.Background(), approval.Answer{State: need.State, Decision: approval.AllowOnce, By: "mcp:acme/alice"})
	rec, err := b.Ask(ctx, req, m)
	fmt.Println(rec.Decision, err)
	_, err = b.Ask(ctx, req, m) // the same answer again
	fmt.Println(err != nil)
	// Output:
	// true fs:write
	// allow-once <nil>
	// true
}
