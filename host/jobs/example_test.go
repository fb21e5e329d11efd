package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/jobs"
	"github.com/agenthost/agenthost/host/store"
)

// An engine over a SQLite store runs a tenant's call as a job; a retry
// with the same idempotency key gets the same job, and a cancel of the
// ended job answers it as it ended.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "jobs-example-")
	defer os.RemoveAll(dir)
	st, err := store.Open(ctx, filepath.Join(dir, "agenthost.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	e, err := jobs.New(ctx, jobs.Options{Store: st, MaxConcurrent: 4,
		Run: func(_ context.Context, tenant, tool string, args json.RawMessage) (abi.Envelope, error) {
			return abi.Envelope{ToolID: tool, Status: abi.StatusSuccess, Output: args}, nil
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	req := jobs.Request{Tool: "core:echo", Args: json.RawMessage(`{"a":1}`), Key: "order-7"}
	j, _ := e.Start(ctx, "acme", req)
	done, _ := e.WaitJob(ctx, "acme", j.ID)
	fmt.Println(done.Status, string(done.Result.Output))
	again, _ := e.Start(ctx, "acme", req)
	fmt.Println(again.ID == j.ID)
	cancelled, _ := e.Cancel(ctx, "acme", j.ID)
	fmt.Println(cancelled.Status)
	_, err = e.Get(ctx, "beta", j.ID)
	fmt.Println(err)
	// Output:
	// done {"a":1}
	// true
	// done
	// not found
}

// A synchronous call still running when the server gives up draining is
// stopped by Interrupt and answered MAY_HAVE_RUN: it may have run.
func ExampleEngine_Interrupt() {
	ctx := context.Background()
	st, err := store.Open(ctx, ":memory:")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	started := make(chan struct{})
	e, err := jobs.New(ctx, jobs.Options{Store: st,
		Run: func(ctx context.Context, tenant, tool string, args json.RawMessage) (abi.Envelope, error) {
			close(started)
			<-ctx.Done() // a call that runs until it is stopped
			return abi.Failure(tool, abi.Errorf(abi.CodeCancelled, "stopped")), nil
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	go func() { <-started; e.Interrupt() }()
	env, err := e.Call(ctx, "acme", "app:slow", json.RawMessage(`{}`))
	fmt.Println(env.Error.Code, err)
	_, err = e.Call(ctx, "acme", "app:slow", json.RawMessage(`{}`))
	fmt.Println(err)
	// Output:
	// MAY_HAVE_RUN <nil>
	// the server is shutting down: it starts no new job
}
