package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/jobs"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/host/store/storetest"
)

// gate is a native tool, app:gate, whose calls run until the gate opens
// or their call is cancelled, counting how many run at once.
type gate struct {
	open           chan struct{}
	inFlight, high atomic.Int64
	started        chan struct{}
}

// zero is the gate's arguments where they do not matter.
var zero = json.RawMessage(`{"n":0}`)

func newGate() *gate { return &gate{open: make(chan struct{}), started: make(chan struct{}, 1024)} }

func (g *gate) tool() host.Tool {
	type in struct {
		N int `json:"n"`
	}
	return host.Func(host.FuncSpec{ID: "app:gate", Description: "Waits for its gate."}, func(ctx context.Context, a in) (map[string]int, error) {
		n := g.inFlight.Add(1)
		defer g.inFlight.Add(-1)
		for h := g.high.Load(); n > h && !g.high.CompareAndSwap(h, n); h = g.high.Load() {
		}
		g.started <- struct{}{}
		select {
		case <-g.open:
			return map[string]int{"n": a.N}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

// newEngine runs an engine over st whose calls run on a host holding
// the gate's tool.
func newEngine(t *testing.T, st jobs.Store, g *gate, o jobs.Options) *jobs.Engine {
	t.Helper()
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{CacheDir: t.TempDir(), Tools: []host.Tool{g.tool()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	o.Store = st
	o.Run = func(ctx context.Context, _, tool string, args json.RawMessage) (abi.Envelope, error) {
		return h.Call(ctx, tool, args), nil
	}
	e, err := jobs.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func openStore(t testing.TB, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// wait reads the job's events to its final answer.
func wait(t *testing.T, e *jobs.Engine, tenant, id string) store.Job {
	t.Helper()
	ev, err := e.Events(context.Background(), tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	var last store.Job
	for j := range ev {
		last = j
	}
	if !last.Ended() {
		t.Fatalf("the events of %s ended with %+v", id, last)
	}
	return last
}

// TestTenantLimitHolds starts 60 jobs of a tool that waits, with a limit
// of 16 calls at once: 16 run, 44 queue, none is refused, and no more
// than 16 ever run at once; synchronous calls count too; past the queue
// a start is refused with a LimitError that says when to retry.
func TestTenantLimitHolds(t *testing.T) {
	g := newGate()
	e := newEngine(t, openStore(t, filepath.Join(t.TempDir(), "db")), g, jobs.Options{MaxConcurrent: 16, MaxQueued: 44})
	ctx := context.Background()
	var ids []string
	queued := 0
	for i := range 60 {
		j, err := e.Start(ctx, "acme", jobs.Request{Tool: "app:gate", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if j.Status == store.JobQueued {
			queued++
		}
		ids = append(ids, j.ID)
	}
	if queued != 44 {
		t.Errorf("%d of 60 jobs queued; want 44 behind the 16 running", queued)
	}
	for range 16 {
		<-g.started
	}
	// The places and the queue are full: a synchronous call is refused
	// as a start is, with when to retry.
	var lim *jobs.LimitError
	if _, err := e.Call(ctx, "acme", "app:gate", json.RawMessage(`{"n":99}`)); !errors.As(err, &lim) {
		t.Fatalf("a synchronous call past the limits: %v", err)
	}
	if _, err := e.Start(ctx, "acme", jobs.Request{Tool: "app:gate", Args: zero}); !errors.As(err, &lim) {
		t.Fatalf("a start past the limits: %v", err)
	}
	if lim.RetryAfter <= 0 || lim.Tenant != "acme" || lim.Queued != 44 {
		t.Errorf("the limit error: %+v", lim)
	}
	// Another tenant has its own places.
	other, err := e.Start(ctx, "beta", jobs.Request{Tool: "app:gate", Args: zero})
	if err != nil || other.Status != store.JobRunning {
		t.Fatalf("another tenant: %+v %v", other, err)
	}
	close(g.open)
	for _, id := range ids {
		if j := wait(t, e, "acme", id); j.Status != store.JobDone || j.Result.Status != abi.StatusSuccess {
			t.Fatalf("job %s: %+v", id, j)
		}
	}
	if h := g.high.Load(); h > 17 {
		t.Fatalf("%d calls ran at once; acme's limit is 16 and beta ran one", h)
	}
}

// TestIdempotencyKeys: a retried start with the same key returns the
// same job (white space aside), the key with other arguments is
// ErrConflict, and a bad key is refused.
func TestIdempotencyKeys(t *testing.T) {
	g := newGate()
	close(g.open)
	e := newEngine(t, openStore(t, filepath.Join(t.TempDir(), "db")), g, jobs.Options{})
	ctx := context.Background()
	first, err := e.Start(ctx, "acme", jobs.Request{Tool: "app:gate", Args: json.RawMessage(`{"n":1}`), Key: "order-7"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, e, "acme", first.ID)
	for _, c := range []struct {
		name string
		req  jobs.Request
		want error
	}{
		{"retry", jobs.Request{Tool: "app:gate", Args: json.RawMessage(` { "n" : 1 } `), Key: "order-7"}, nil},
		{"other arguments", jobs.Request{Tool: "app:gate", Args: json.RawMessage(`{"n":2}`), Key: "order-7"}, jobs.ErrConflict},
		{"other tool", jobs.Request{Tool: "app:other", Args: json.RawMessage(`{"n":1}`), Key: "order-7"}, jobs.ErrConflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, err := e.Start(ctx, "acme", c.req)
			if !errors.Is(err, c.want) {
				t.Fatalf("want %v, got %v", c.want, err)
			}
			if c.want == nil && (j.ID != first.ID || j.Status != store.JobDone) {
				t.Fatalf("a retry got %+v; want the first job, done", j)
			}
		})
	}
	if _, err := e.Start(ctx, "acme", jobs.Request{Tool: "app:gate", Args: zero, Key: "a key\nwith a newline"}); err == nil {
		t.Error("a key with a control character was taken")
	}
	if j, err := e.Start(ctx, "beta", jobs.Request{Tool: "app:gate", Args: json.RawMessage(`{"n":1}`), Key: "order-7"}); err != nil || j.ID == first.ID {
		t.Errorf("another tenant's key: %+v %v", j, err)
	}
}

// TestCancel: a cancel stops the call (CANCELLED); a second cancel of
// the ended job is a no-op returning its one final answer; another
// tenant's job ID is ErrNotFound, as an unknown one is; a queued job
// cancelled never runs.
func TestCancel(t *testing.T) {
	g := newGate()
	e := newEngine(t, openStore(t, filepath.Join(t.TempDir(), "db")), g, jobs.Options{MaxConcurrent: 1})
	ctx := context.Background()
	j, err := e.Start(ctx, "acme", jobs.Request{Tool: "app:gate", Args: zero})
	if err != nil {
		t.Fatal(err)
	}
	<-g.started
	q, err := e.Start(ctx, "acme", jobs.Request{Tool: "app:gate", Args: zero})
	if err != nil || q.Status != store.JobQueued {
		t.Fatalf("the second job: %+v %v", q, err)
	}
	for _, id := range []string{j.ID, "unknown"} {
		if _, err := e.Cancel(ctx, "beta", id); !errors.Is(err, jobs.ErrNotFound) {
			t.Errorf("beta cancels %s: %v", id, err)
		}
		if _, err := e.Get(ctx, "beta", id); !errors.Is(err, jobs.ErrNotFound) {
			t.Errorf("beta reads %s: %v", id, err)
		}
	}
	if got, err := e.Cancel(ctx, "acme", q.ID); err != nil || got.Status != store.JobDone || got.Result.Error.Code != abi.CodeCancelled {
		t.Fatalf("cancel of the queued job: %+v %v", got, err)
	}
	done, err := e.Cancel(ctx, "acme", j.ID)
	if err != nil || done.Status != store.JobDone || done.Result.Error == nil || done.Result.Error.Code != abi.CodeCancelled {
		t.Fatalf("cancel: %+v %v", done, err)
	}
	again, err := e.Cancel(ctx, "acme", j.ID)
	if err != nil || again.Status != done.Status || !again.Updated.Equal(done.Updated) {
		t.Fatalf("a second cancel: %+v %v", again, err)
	}
	if n := g.high.Load(); n != 1 {
		t.Fatalf("%d calls ran; the queued job ran though cancelled", n)
	}
}

// TestLeaseLost: an engine whose store cannot be reached starts no job,
// and Ready says why.
func TestLeaseLost(t *testing.T) {
	g := newGate()
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	e := newEngine(t, st, g, jobs.Options{})
	ctx := context.Background()
	if err := e.Renew(ctx); err != nil || e.Ready() != nil {
		t.Fatalf("renew %v, ready %v", err, e.Ready())
	}
	st.Close()
	if err := e.Renew(ctx); err == nil {
		t.Fatal("a renewal on a closed store succeeded")
	}
	var un *jobs.UnavailableError
	if err := e.Ready(); !errors.As(err, &un) {
		t.Fatalf("ready: %v", err)
	}
	if _, err := e.Start(ctx, "acme", jobs.Request{Tool: "app:gate", Args: zero}); !errors.As(err, &un) {
		t.Fatalf("a start without a lease: %v", err)
	}
}

// TestInstancesShareOnePostgres runs two engines, two instances, on one
// real PostgreSQL. A job runs on A; B's start leaves it running; B's
// cancel reaches A at A's next renewal; a restart of A under its own
// name ends A's unfinished job as interrupted ("may have run"), and A's
// late answer does not replace it: a job has one final answer.
func TestInstancesShareOnePostgres(t *testing.T) {
	url := storetest.Postgres(t)
	ctx := context.Background()
	ga, gb := newGate(), newGate()
	a := newEngine(t, openStore(t, url), ga, jobs.Options{Instance: "a"})
	j, err := a.Start(ctx, "acme", jobs.Request{Tool: "app:gate", Args: zero})
	if err != nil {
		t.Fatal(err)
	}
	<-ga.started
	b := newEngine(t, openStore(t, url), gb, jobs.Options{Instance: "b"})
	if got, err := b.Get(ctx, "acme", j.ID); err != nil || got.Status != store.JobRunning || got.Instance != "a" {
		t.Fatalf("A's job after B started: %+v %v", got, err)
	}
	if got, err := b.Cancel(ctx, "acme", j.ID); err != nil || got.Status != store.JobRunning || !got.CancelRequested {
		t.Fatalf("B cancels A's job: %+v %v", got, err)
	}
	if err := a.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if got := wait(t, b, "acme", j.ID); got.Status != store.JobDone || got.Result.Error == nil || got.Result.Error.Code != abi.CodeCancelled {
		t.Fatalf("A's job after B's cancel: %+v", got)
	}

	// A second job on A; a new run of instance "a" takes A for dead.
	k, err := a.Start(ctx, "acme", jobs.Request{Tool: "app:gate", Args: zero})
	if err != nil {
		t.Fatal(err)
	}
	<-ga.started
	newEngine(t, openStore(t, url), newGate(), jobs.Options{Instance: "a"})
	got, err := b.Get(ctx, "acme", k.ID)
	if err != nil || got.Status != store.JobInterrupted || got.Error == nil || got.Error.Code != store.CodeMayHaveRun || got.Result != nil {
		t.Fatalf("the interrupted job: %+v %v", got, err)
	}
	close(ga.open)
	if d := a.Done("acme", k.ID); d != nil {
		<-d
	}
	if after, _ := b.Get(ctx, "acme", k.ID); after.Status != store.JobInterrupted || after.Result != nil {
		t.Fatalf("A's late answer replaced the first: %+v", after)
	}
}

// TestCloseInterrupts: an engine closed while a call runs records it as
// interrupted, never as a call that did not run.
func TestCloseInterrupts(t *testing.T) {
	g := newGate()
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	e := newEngine(t, st, g, jobs.Options{})
	ctx := context.Background()
	j, err := e.Start(ctx, "acme", jobs.Request{Tool: "app:gate", Args: zero})
	if err != nil {
		t.Fatal(err)
	}
	<-g.started
	e.Close()
	got, err := st.Job(ctx, "acme", j.ID)
	if err != nil || got.Status != store.JobInterrupted || got.Error.Code != store.CodeMayHaveRun {
		t.Fatalf("after close: %+v %v", got, err)
	}
	if _, err := e.Start(ctx, "acme", jobs.Request{Tool: "app:gate", Args: zero}); !errors.Is(err, jobs.ErrDraining) {
		t.Fatalf("a start after close: %v", err)
	}
}

// TestExecutorMayHaveRun: a call answered MAY_HAVE_RUN by its executor
// (a worker whose drain timeout passed during the call) ends its job as
// interrupted, with the executor's words, never as done.
func TestExecutorMayHaveRun(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "jobs.db"))
	const said = "worker w1 stopped and its drain timeout passed during the call: it may have run"
	e, err := jobs.New(context.Background(), jobs.Options{Store: st, Run: func(_ context.Context, _, tool string, _ json.RawMessage) (abi.Envelope, error) {
		return abi.Failure(tool, abi.Errorf(abi.CodeMayHaveRun, "%s", said)), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	j, err := e.Start(context.Background(), "acme", jobs.Request{Tool: "app:gate", Args: zero})
	if err != nil {
		t.Fatal(err)
	}
	got := wait(t, e, "acme", j.ID)
	if got.Status != store.JobInterrupted || got.Error == nil || got.Error.Code != store.CodeMayHaveRun || got.Error.Message != said || got.Result != nil {
		t.Fatalf("job %+v (error %+v), want interrupted with MAY_HAVE_RUN", got, got.Error)
	}
}
