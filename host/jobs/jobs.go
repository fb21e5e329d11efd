// Package jobs is the one home of tool calls that outlive their request:
// asynchronous calls of the HTTP API and MCP tasks are jobs of one
// engine, and synchronous calls pass through the same per-tenant limit.
//
// The engine starts, gets, lists and cancels jobs, streams their
// changes, keeps their results for a TTL and honours idempotency keys (a
// retried start with the same key returns the same job; the same key
// with another call is ErrConflict). A tenant runs at most MaxConcurrent
// calls at once, whatever started them; beyond, a start waits in a
// queue of at most MaxQueued, and beyond that it is refused with a
// *LimitError that says when to retry. Every root call gets one budget
// (host/budget) that the calls it sets off draw from; the budget shares
// the tenant's places, so those calls (a program's inner calls, a
// workflow's nodes) hold the tenant's limit too, the root lending them
// its own place while it waits on them.
//
// Several instances may share one database. Each job records the
// instance that runs it, whose lease the instance renews; at start, and
// at each renewal, an instance ends only the jobs of its own past runs
// and those whose lease has expired, as interrupted: "may have run",
// never "did not run". A job has exactly one final answer: only an
// unfinished job can be finished, so a cancel of a finished job is a
// no-op that returns its final state. An instance that cannot renew its
// leases starts no job (Ready says why) until it can again. Past a
// drain, Interrupt stops what still runs: jobs end interrupted and
// synchronous calls answer MAY_HAVE_RUN, never a CANCELLED that would
// say they did not run.
//
// Calls run in process, or on workers over NATS JetStream: the executor
// of the subpackage natsexec, whose dispatcher is the run function.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/budget"
	"github.com/agenthost/agenthost/host/store"
)

// Defaults of Options.
const (
	DefaultMaxConcurrent = 16
	DefaultMaxQueued     = 64
	DefaultLease         = 30 * time.Second
	DefaultTTL           = 24 * time.Hour
	// PollInterval is how often Events reads a job that another
	// instance runs.
	PollInterval = time.Second
	// MaxListPage bounds one List answer.
	MaxListPage = 100
)

// Errors of the engine. A job ID of another tenant is ErrNotFound, as an
// unknown one is.
var (
	ErrNotFound = store.ErrNotFound
	ErrConflict = store.ErrConflict
	ErrDraining = errors.New("the server is shutting down: it starts no new job")
)

// LimitError is a start refused because the tenant runs its limit of
// calls and its queue is full.
type LimitError struct {
	Tenant          string
	Running, Queued int
	// RetryAfter is when a retry may find room.
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("tenant %s runs %d calls and has %d waiting: its limits; retry after %s", e.Tenant, e.Running, e.Queued, e.RetryAfter)
}

// UnavailableError is a start refused because the instance cannot renew
// its leases (its database is unreachable): a job it started could be
// taken for abandoned by another instance.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string {
	return "the job store cannot be reached, so no job starts: " + e.Err.Error()
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Store keeps jobs; *store.Store implements it.
type Store interface {
	CreateJob(ctx context.Context, tenant string, n store.NewJob) (store.Job, bool, error)
	JobByKey(ctx context.Context, tenant, key string) (store.Job, error)
	StartJob(ctx context.Context, tenant, id string) (bool, error)
	FinishJob(ctx context.Context, tenant, id string, env abi.Envelope) (store.Job, bool, error)
	InterruptJob(ctx context.Context, tenant, id, message string) (store.Job, error)
	Job(ctx context.Context, tenant, id string) (store.Job, error)
	Jobs(ctx context.Context, tenant, origin, after string, limit int) ([]store.Job, error)
	RequestCancel(ctx context.Context, tenant, id string) (store.Job, error)
	CountJobs(ctx context.Context, tenant, origin string, limit int) (int, error)
	RenewLeases(ctx context.Context, instance string, until time.Time) ([]string, error)
	InterruptJobs(ctx context.Context, instance string, now time.Time) (int64, error)
	DeleteJobs(ctx context.Context, before time.Time) (int64, error)
}

// RunFunc runs one tool call of a tenant (on its host, or on a worker).
// An error is the runner's, not the tool's: the call could not be made.
type RunFunc func(ctx context.Context, tenant, tool string, args json.RawMessage) (abi.Envelope, error)

// Options configure an Engine. Store and Run are required.
type Options struct {
	Store Store
	Run   RunFunc
	// Instance names this server among those sharing the store; a random
	// name when empty. A stable name lets a restarted server end its own
	// past jobs at once instead of when their leases expire.
	Instance string
	// MaxConcurrent caps a tenant's calls running at once: synchronous
	// calls, jobs and MCP tasks alike (DefaultMaxConcurrent when 0).
	MaxConcurrent int
	// MaxQueued caps a tenant's calls waiting for one of those places
	// (DefaultMaxQueued when 0; -1 for none).
	MaxQueued int
	// Budget sizes each root call's budget.
	Budget budget.Limits
	// Lease is how long a job stays this instance's without a renewal
	// (DefaultLease when 0); the engine renews every third of it.
	Lease time.Duration
	// TTL is how long an ended job is kept (DefaultTTL when 0).
	TTL    time.Duration
	Logger hclog.Logger
}

// Request is a job to start.
type Request struct {
	Tool string
	Args json.RawMessage
	// Key is an idempotency key ("" for none): a start with a key the
	// tenant used before returns that job.
	Key string
	// Origin says what starts the job ("http", "mcp:SESSION"); List
	// filters by it.
	Origin string
}

// Engine runs jobs. It is safe for concurrent use.
type Engine struct {
	o        Options
	mu       sync.Mutex
	tenants  map[string]*limiter
	local    map[string]*run    // this instance's unfinished jobs by ID
	calls    map[*call]struct{} // the synchronous calls running
	draining bool
	// interrupted: Interrupt stopped everything; no call starts.
	interrupted bool
	leaseErr    error
	runs        sync.WaitGroup
	stop        chan struct{}
	loop        sync.WaitGroup
	closed      bool
}

// limiter is a tenant's places (one per running call, the calls they set
// off included); waiting counts the calls queued for one.
type limiter struct {
	places  *budget.Places
	waiting int // guarded by Engine.mu
}

// call is a synchronous call running: Close stops it, and its answer is
// then MAY_HAVE_RUN.
type call struct {
	cancel   context.CancelFunc
	stopping bool // guarded by Engine.mu
}

// run is a job this instance runs.
type run struct {
	tenant string
	cancel context.CancelFunc
	done   chan struct{}
	// changed is closed, and replaced, at each change of the job
	// (guarded by Engine.mu).
	changed chan struct{}
	// stopping is set when the engine closes: the call's answer is then
	// unknown (guarded by Engine.mu).
	stopping bool
}

// New builds an engine: it ends the jobs that no live instance runs, then
// renews its leases in the background until Close.
func New(ctx context.Context, o Options) (*Engine, error) {
	if o.Store == nil || o.Run == nil {
		return nil, errors.New("jobs: a store and a run function are required")
	}
	if o.Instance == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.Instance = hex.EncodeToString(b[:])
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.MaxQueued == 0 {
		o.MaxQueued = DefaultMaxQueued
	}
	if o.MaxQueued < 0 {
		o.MaxQueued = 0
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	e := &Engine{o: o, tenants: map[string]*limiter{}, local: map[string]*run{}, calls: map[*call]struct{}{}, stop: make(chan struct{})}
	n, err := o.Store.InterruptJobs(ctx, o.Instance, time.Now())
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	if n > 0 {
		o.Logger.Warn("jobs that no live server runs were ended as interrupted", "jobs", n)
	}
	e.loop.Add(1)
	go e.renewLoop()
	return e, nil
}

// Instance is this engine's name among the instances sharing the store.
func (e *Engine) Instance() string { return e.o.Instance }

// TTL is how long an ended job is kept.
func (e *Engine) TTL() time.Duration { return e.o.TTL }

// Count counts the tenant's kept jobs of origin ("" for all), up to
// limit: enough to hold a caller to a quota of that many.
func (e *Engine) Count(ctx context.Context, tenant, origin string, limit int) (int, error) {
	return e.o.Store.CountJobs(ctx, tenant, origin, limit)
}

// renewLoop renews the leases every third of Lease.
func (e *Engine) renewLoop() {
	defer e.loop.Done()
	t := time.NewTicker(e.o.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), e.o.Lease/3)
			if err := e.Renew(ctx); err != nil {
				e.o.Logger.Error("renewing the jobs' leases", "error", err)
			}
			cancel()
		}
	}
}

// Renew renews this instance's leases, stops the local jobs whose cancel
// reached another instance, ends the jobs whose lease expired and
// forgets the ended jobs older than the TTL. The engine calls it every
// third of Lease; until a renewal succeeds after one failed, Start
// refuses jobs and Ready returns the error.
func (e *Engine) Renew(ctx context.Context) error {
	now := time.Now()
	cancels, err := e.o.Store.RenewLeases(ctx, e.o.Instance, now.Add(e.o.Lease))
	if err == nil {
		_, err = e.o.Store.InterruptJobs(ctx, "", now)
	}
	if err == nil {
		_, err = e.o.Store.DeleteJobs(ctx, now.Add(-e.o.TTL))
	}
	e.mu.Lock()
	e.leaseErr = err
	var stop []*run
	for _, id := range cancels {
		if r := e.local[id]; r != nil {
			stop = append(stop, r)
		}
	}
	e.mu.Unlock()
	for _, r := range stop {
		r.cancel()
	}
	return err
}

// Ready is nil while the engine starts jobs: not draining, and its last
// lease renewal succeeded.
func (e *Engine) Ready() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.draining {
		return ErrDraining
	}
	if e.leaseErr != nil {
		return &UnavailableError{e.leaseErr}
	}
	return nil
}

// admit takes a place for one of tenant's calls: a running one (now
// true), or one in the queue; or it returns a *LimitError.
func (e *Engine) admit(tenant string) (now bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.tenants[tenant]
	if l == nil {
		l = &limiter{places: budget.NewPlaces(e.o.MaxConcurrent)}
		e.tenants[tenant] = l
	}
	if l.places.TryAcquire() {
		return true, nil
	}
	if l.waiting >= e.o.MaxQueued {
		return false, &LimitError{Tenant: tenant, Running: l.places.Cap(), Queued: l.waiting, RetryAfter: time.Second}
	}
	l.waiting++
	return false, nil
}

// wait turns a queued place into a running one, or gives it up when ctx
// ends.
func (e *Engine) wait(ctx context.Context, tenant string) error {
	e.mu.Lock()
	l := e.tenants[tenant]
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		l.waiting--
		e.mu.Unlock()
	}()
	return l.places.Acquire(ctx)
}

// release gives back a running place of tenant.
func (e *Engine) release(tenant string) {
	e.mu.Lock()
	l := e.tenants[tenant]
	e.mu.Unlock()
	l.places.Release()
}

// rooted is ctx with a fresh budget for a root call of tenant, which
// holds one of the tenant's places: the calls it sets off (a program's
// inner calls, a workflow's nodes) take places of the tenant too, the
// first by borrowing the root's. A ctx that carries a budget (a call
// made inside another's) keeps it.
func (e *Engine) rooted(ctx context.Context, tenant string) (context.Context, context.CancelFunc) {
	if budget.From(ctx) != nil {
		return context.WithCancel(ctx)
	}
	b := budget.New(e.o.Budget)
	e.mu.Lock()
	b.Share(e.tenants[tenant].places)
	e.mu.Unlock()
	return budget.With(ctx, b)
}

// Call runs a synchronous call of tenant under the tenant's limit (it
// may wait in the queue while ctx lasts) and a root budget. The error is
// a *LimitError, ctx's, or the run function's.
func (e *Engine) Call(ctx context.Context, tenant, tool string, args json.RawMessage) (abi.Envelope, error) {
	now, err := e.admit(tenant)
	if err != nil {
		return abi.Envelope{}, err
	}
	if !now {
		if err := e.wait(ctx, tenant); err != nil {
			return abi.Envelope{}, err
		}
	}
	defer e.release(tenant)
	ctx, cancel := e.rooted(ctx, tenant)
	defer cancel()
	c := &call{cancel: cancel}
	e.mu.Lock()
	if e.interrupted {
		e.mu.Unlock()
		return abi.Envelope{}, ErrDraining
	}
	e.calls[c] = struct{}{}
	e.mu.Unlock()
	env, err := e.o.Run(ctx, tenant, tool, args)
	e.mu.Lock()
	delete(e.calls, c)
	stopping := c.stopping
	e.mu.Unlock()
	if stopping && (err != nil || (env.Error != nil && env.Error.Code == abi.CodeCancelled)) {
		// Stopped by the server's shutdown, not by its caller: what the
		// call did before is unknown.
		return abi.Failure(tool, abi.Errorf(abi.CodeMayHaveRun, "the server stopped during the call: the call may have run, in part or whole")), nil
	}
	return env, err
}

// Start records a job of tenant and runs it in the background: at once
// when the tenant has a free place (the job is running), else once one
// frees (queued). A start with an idempotency key the tenant used before
// returns that job as it is now, or ErrConflict for another call.
func (e *Engine) Start(ctx context.Context, tenant string, req Request) (store.Job, error) {
	if req.Key != "" {
		if !store.ValidKey(req.Key) {
			return store.Job{}, fmt.Errorf("jobs: the idempotency key must be printable ASCII of at most %d bytes", store.MaxKey)
		}
		if j, err := e.o.Store.JobByKey(ctx, tenant, req.Key); err == nil {
			return e.same(j, req)
		} else if !errors.Is(err, store.ErrNotFound) {
			return store.Job{}, err
		}
	}
	if err := e.Ready(); err != nil {
		return store.Job{}, err
	}
	now, err := e.admit(tenant)
	if err != nil {
		return store.Job{}, err
	}
	status := store.JobQueued
	if now {
		status = store.JobRunning
	}
	giveBack := func() {
		if now {
			e.release(tenant)
			return
		}
		e.mu.Lock()
		e.tenants[tenant].waiting--
		e.mu.Unlock()
	}
	j, created, err := e.o.Store.CreateJob(ctx, tenant, store.NewJob{Tool: req.Tool, Input: req.Args, Key: req.Key, Origin: req.Origin,
		Instance: e.o.Instance, Lease: time.Now().Add(e.o.Lease), Status: status})
	if err != nil || !created {
		giveBack()
		return j, err
	}
	jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &run{tenant: tenant, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
	e.mu.Lock()
	if e.closed || e.interrupted {
		e.mu.Unlock()
		cancel()
		giveBack()
		_, _, _ = e.o.Store.FinishJob(context.WithoutCancel(ctx), tenant, j.ID,
			abi.Failure(req.Tool, abi.Errorf(abi.CodeCancelled, "the server stopped as the job was started; it did not run")))
		return store.Job{}, ErrDraining
	}
	e.local[j.ID] = r
	e.runs.Add(1)
	e.mu.Unlock()
	go e.execute(jctx, j, r, now)
	return j, nil
}

// same returns the job found by req's key, or ErrConflict when it was
// started for another call.
func (e *Engine) same(j store.Job, req Request) (store.Job, error) {
	if j.Tool != req.Tool || string(j.Input) != string(store.CompactJSON(req.Args)) {
		return j, ErrConflict
	}
	return j, nil
}

// execute runs job j: it waits for a place if it has none, runs the call
// and records its one final answer.
func (e *Engine) execute(ctx context.Context, j store.Job, r *run, placed bool) {
	defer e.runs.Done()
	defer r.cancel()
	bg := context.WithoutCancel(ctx)
	finish := func(env abi.Envelope, ran bool) {
		e.mu.Lock()
		stopping := r.stopping && ran
		e.mu.Unlock()
		var err error
		switch {
		case stopping && env.Error != nil && env.Error.Code == abi.CodeCancelled:
			// Stopped by the server's own shutdown, not by a client: what
			// the call did before is unknown.
			_, err = e.o.Store.InterruptJob(bg, r.tenant, j.ID, "the server stopped during the call: the call may have run, in part or whole")
		case env.Error != nil && env.Error.Code == abi.CodeMayHaveRun:
			// A worker stopped during the call says so: the job is
			// interrupted, not done.
			_, err = e.o.Store.InterruptJob(bg, r.tenant, j.ID, env.Error.Message)
		default:
			_, _, err = e.o.Store.FinishJob(bg, r.tenant, j.ID, env)
		}
		if err != nil {
			e.o.Logger.Error("recording a job's answer", "job", j.ID, "error", err)
		}
		e.mu.Lock()
		delete(e.local, j.ID)
		close(r.changed)
		e.mu.Unlock()
		close(r.done)
	}
	if !placed {
		if err := e.wait(ctx, r.tenant); err != nil {
			finish(abi.Failure(j.Tool, abi.Errorf(abi.CodeCancelled, "the job was cancelled while it waited for a place; it did not run")), false)
			return
		}
		defer e.release(r.tenant)
		if ok, err := e.o.Store.StartJob(bg, r.tenant, j.ID); err != nil || !ok {
			finish(abi.Failure(j.Tool, abi.Errorf(abi.CodeCancelled, "the job ended before it could start; it did not run")), false)
			return
		}
		e.changed(r)
	} else {
		defer e.release(r.tenant)
	}
	ctx, cancel := e.rooted(ctx, r.tenant)
	defer cancel()
	env, err := e.o.Run(ctx, r.tenant, j.Tool, j.Input)
	if err != nil {
		env = abi.Failure(j.Tool, abi.Errorf(abi.CodeToolError, "the call could not be run: %s", err.Error()))
	}
	finish(env, true)
}

// changed wakes the watchers of r.
func (e *Engine) changed(r *run) {
	e.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	e.mu.Unlock()
}

// Get returns the tenant's job id.
func (e *Engine) Get(ctx context.Context, tenant, id string) (store.Job, error) {
	return e.o.Store.Job(ctx, tenant, id)
}

// ListOptions select a page of jobs.
type ListOptions struct {
	// Origin keeps the jobs started by one origin ("" for all).
	Origin string
	// After is the ID of the last job of the page before ("" for the
	// first page).
	After string
	// Limit caps the page (MaxListPage when 0 or more).
	Limit int
}

// List returns a page of the tenant's jobs, oldest first.
func (e *Engine) List(ctx context.Context, tenant string, o ListOptions) ([]store.Job, error) {
	if o.Limit <= 0 || o.Limit > MaxListPage {
		o.Limit = MaxListPage
	}
	return e.o.Store.Jobs(ctx, tenant, o.Origin, o.After, o.Limit)
}

// Cancel stops the tenant's job id and returns it. A job this instance
// runs is stopped (the guest sees the cancel) and returned once it has
// its answer (ctx bounds the wait); one that another instance runs is
// marked, and stopped by that instance at its next renewal; an ended job
// is returned as it is: its answer does not change.
func (e *Engine) Cancel(ctx context.Context, tenant, id string) (store.Job, error) {
	j, err := e.o.Store.Job(ctx, tenant, id)
	if err != nil || j.Ended() {
		return j, err
	}
	e.mu.Lock()
	r := e.local[id]
	e.mu.Unlock()
	if r == nil || r.tenant != tenant {
		return e.o.Store.RequestCancel(ctx, tenant, id)
	}
	r.cancel()
	select {
	case <-r.done:
	case <-ctx.Done():
		return store.Job{}, ctx.Err()
	}
	return e.o.Store.Job(ctx, tenant, id)
}

// Done returns a channel closed when the tenant's job id, run by this
// instance, has its answer; nil when this instance runs no such job.
func (e *Engine) Done(tenant, id string) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.local[id]; r != nil && r.tenant == tenant {
		return r.done
	}
	return nil
}

// Events streams the tenant's job id: the job now, then at each change
// of status, the last with its final answer; the channel is closed after
// it, or when ctx ends. A job that another instance runs is read every
// PollInterval.
func (e *Engine) Events(ctx context.Context, tenant, id string) (<-chan store.Job, error) {
	j, err := e.o.Store.Job(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Job, 1)
	go func() {
		defer close(out)
		last := ""
		for {
			if j.Status != last {
				select {
				case out <- j:
				case <-ctx.Done():
					return
				}
				last = j.Status
			}
			if j.Ended() {
				return
			}
			e.mu.Lock()
			var wake <-chan struct{}
			if r := e.local[id]; r != nil && r.tenant == tenant {
				wake = r.changed
			}
			e.mu.Unlock()
			var tick <-chan time.Time
			var t *time.Timer
			if wake == nil {
				t = time.NewTimer(PollInterval)
				tick = t.C
			}
			select {
			case <-wake:
			case <-tick:
			case <-ctx.Done():
			}
			if t != nil {
				t.Stop()
			}
			if ctx.Err() != nil {
				return
			}
			if j, err = e.o.Store.Job(ctx, tenant, id); err != nil {
				return
			}
		}
	}()
	return out, nil
}

// WaitJob waits for the tenant's job id to have its final answer (or for
// ctx) and returns it.
func (e *Engine) WaitJob(ctx context.Context, tenant, id string) (store.Job, error) {
	ev, err := e.Events(ctx, tenant, id)
	if err != nil {
		return store.Job{}, err
	}
	var last store.Job
	for last = range ev {
	}
	if last.Ended() {
		return last, nil
	}
	if err := ctx.Err(); err != nil {
		return last, err
	}
	return last, errors.New("jobs: the job's events ended before its answer: the store did not answer")
}

// Drain makes the engine refuse new jobs while those running go on; Wait
// then waits for them.
func (e *Engine) Drain() {
	e.mu.Lock()
	e.draining = true
	e.mu.Unlock()
}

// Wait waits for the jobs this instance runs to have their answers, or
// for ctx. Call Drain first, so that no job starts meanwhile.
func (e *Engine) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { e.runs.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the engine: no job starts, the running jobs and
// synchronous calls are stopped (a job's answer is then "interrupted", a
// call's MAY_HAVE_RUN: they may have run), and the lease renewal ends
// once the jobs have their answers. Drain and Wait first to let them
// finish.
func (e *Engine) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	e.mu.Unlock()
	e.Interrupt()
	e.runs.Wait()
	close(e.stop)
	e.loop.Wait()
}

// Interrupt stops what the engine runs without waiting: the jobs end
// interrupted and the synchronous calls answer MAY_HAVE_RUN (the drain
// timeout has passed: they may have run, in part or whole). From then
// on it starts no job and no call.
func (e *Engine) Interrupt() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.draining, e.interrupted = true, true
	for _, r := range e.local {
		r.stopping = true
		r.cancel()
	}
	for c := range e.calls {
		c.stopping = true
		c.cancel()
	}
}
