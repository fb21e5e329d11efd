// Package queue spreads tool calls over machines: a Dispatcher (in
// `agenthost serve --nats`) puts each call on a NATS JetStream work queue,
// and Workers (`agenthost worker --nats`, any number, anywhere) run them
// with their own hosts and send the results back. Cancellation flows to
// the worker running the call; a call whose worker dies is delivered
// again, and run again only when its tool is idempotent; when the queue
// is full the dispatcher says so at once (back-pressure).
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
)

// Names on the NATS server.
const (
	Stream          = "AGENTHOST_CALLS"
	Consumer        = "agenthost-workers"
	callSubject     = "agenthost.calls."    // + tenant
	resultSubject   = "agenthost.results."  // + call ID
	cancelSubject   = "agenthost.cancel."   // + call ID
	progressSubject = "agenthost.progress." // + call ID
	headerCall      = "Agenthost-Call-Id"
	headerTool      = "Agenthost-Tool"
	headerTenant    = "Agenthost-Tenant"
	headerDeadline  = "Agenthost-Deadline"
)

// Options configure the queue (both sides must agree).
type Options struct {
	// MaxQueued bounds the calls waiting for a worker; beyond it Call
	// returns ErrSaturated (DefaultMaxQueued when 0).
	MaxQueued int64
	// AckWait is how long a call may go without a sign of life from its
	// worker before it is delivered again (DefaultAckWait when 0).
	AckWait time.Duration
	// Concurrency is how many calls a worker runs at once
	// (DefaultConcurrency when 0).
	Concurrency int
	Logger      hclog.Logger
}

// Defaults of Options.
const (
	DefaultMaxQueued   = 10000
	DefaultAckWait     = 30 * time.Second
	DefaultConcurrency = 8
)

// ErrSaturated is a call refused because the queue is full.
var ErrSaturated = errors.New("queue: the workers are saturated; try again later")

func (o *Options) defaults() {
	if o.MaxQueued <= 0 {
		o.MaxQueued = DefaultMaxQueued
	}
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// ensure creates (or updates) the stream and the workers' consumer.
func ensure(ctx context.Context, js jetstream.JetStream, o Options) (jetstream.Consumer, error) {
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: Stream, Subjects: []string{callSubject + ">"},
		Retention: jetstream.WorkQueuePolicy, MaxMsgs: o.MaxQueued, Discard: jetstream.DiscardNew,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: stream: %w", err)
	}
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: Consumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: o.AckWait, MaxDeliver: 5,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: consumer: %w", err)
	}
	return c, nil
}

// Dispatcher puts calls on the queue and waits for their results.
type Dispatcher struct {
	nc *nats.Conn
	js jetstream.JetStream
	o  Options
	n  uint64
	mu sync.Mutex
}

// NewDispatcher connects a dispatcher (and creates the stream).
func NewDispatcher(ctx context.Context, nc *nats.Conn, o Options) (*Dispatcher, error) {
	o.defaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if _, err := ensure(ctx, js, o); err != nil {
		return nil, err
	}
	return &Dispatcher{nc: nc, js: js, o: o}, nil
}

func (d *Dispatcher) newID() string {
	d.mu.Lock()
	d.n++
	n := d.n
	d.mu.Unlock()
	return nats.NewInbox()[len("_INBOX."):] + "-" + strconv.FormatUint(n, 10)
}

// Call runs tool for tenant on some worker and returns its envelope. A
// cancelled ctx cancels the call on the worker. ErrSaturated says the
// queue is full; other errors are the queue's, not the tool's.
func (d *Dispatcher) Call(ctx context.Context, tenant, tool string, args json.RawMessage) (abi.Envelope, error) {
	id := d.newID()
	results := make(chan *nats.Msg, 1)
	sub, err := d.nc.ChanSubscribe(resultSubject+id, results)
	if err != nil {
		return abi.Envelope{}, fmt.Errorf("queue: %w", err)
	}
	defer sub.Unsubscribe()
	msg := nats.NewMsg(callSubject + tenant)
	msg.Header.Set(headerCall, id)
	msg.Header.Set(headerTool, tool)
	msg.Header.Set(headerTenant, tenant)
	if dl, ok := ctx.Deadline(); ok {
		msg.Header.Set(headerDeadline, strconv.FormatInt(dl.UnixMilli(), 10))
	}
	msg.Data = args
	if _, err := d.js.PublishMsg(ctx, msg); err != nil {
		if isFull(err) {
			return abi.Envelope{}, ErrSaturated
		}
		return abi.Envelope{}, fmt.Errorf("queue: publish: %w", err)
	}
	select {
	case m := <-results:
		var env abi.Envelope
		if err := json.Unmarshal(m.Data, &env); err != nil {
			return abi.Envelope{}, fmt.Errorf("queue: a worker's result is not an envelope: %w", err)
		}
		return env, nil
	case <-ctx.Done():
		_ = d.nc.Publish(cancelSubject+id, nil)
		// The worker answers CANCELLED once the guest has stopped; wait a
		// moment for it, so the caller gets the worker's own result.
		select {
		case m := <-results:
			var env abi.Envelope
			if json.Unmarshal(m.Data, &env) == nil {
				return env, nil
			}
		case <-time.After(2 * time.Second):
		}
		return abi.Failure(tool, abi.Errorf(abi.CodeCancelled, "the caller cancelled the call")), nil
	}
}

// isFull reports a publish refused because the stream is at MaxMsgs.
func isFull(err error) bool {
	// The server answers "maximum messages exceeded" (error 10077), for
	// which the client library has no constant.
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == 10077 {
		return true
	}
	return strings.Contains(err.Error(), "maximum messages exceeded")
}

// Worker runs calls from the queue with its hosts (one per tenant).
type Worker struct {
	nc     *nats.Conn
	cons   jetstream.Consumer
	hosts  map[string]*host.Host
	o      Options
	name   string
	mu     sync.Mutex
	active map[string]context.CancelFunc
}

// NewWorker connects a worker.
func NewWorker(ctx context.Context, nc *nats.Conn, name string, hosts map[string]*host.Host, o Options) (*Worker, error) {
	o.defaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	c, err := ensure(ctx, js, o)
	if err != nil {
		return nil, err
	}
	return &Worker{nc: nc, cons: c, hosts: hosts, o: o, name: name, active: map[string]context.CancelFunc{}}, nil
}

// Run takes calls until ctx ends; calls in flight when it ends are
// cancelled and not acknowledged (another worker gets them).
func (w *Worker) Run(ctx context.Context) error {
	cancels, err := w.nc.Subscribe(cancelSubject+"*", func(m *nats.Msg) {
		id := m.Subject[len(cancelSubject):]
		w.mu.Lock()
		if c := w.active[id]; c != nil {
			c()
		}
		w.mu.Unlock()
	})
	if err != nil {
		return err
	}
	defer cancels.Unsubscribe()
	sem := make(chan struct{}, w.o.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		batch, err := w.cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			<-sem
			if ctx.Err() != nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		got := false
		for m := range batch.Messages() {
			got = true
			if ctx.Err() != nil {
				// Stopping: hand the call back at once for another worker.
				_ = m.Nak()
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				w.handle(ctx, m)
			}()
		}
		if !got {
			<-sem
		}
	}
}

// handle runs one call: again only if its tool is idempotent when a
// worker already had it; a sign of life every AckWait/3 while it runs.
func (w *Worker) handle(ctx context.Context, m jetstream.Msg) {
	h := m.Headers()
	id, tool, tenant := h.Get(headerCall), h.Get(headerTool), h.Get(headerTenant)
	reply := func(env abi.Envelope) {
		b, _ := json.Marshal(env)
		_ = w.nc.Publish(resultSubject+id, b)
		_ = m.Ack()
	}
	hst := w.hosts[tenant]
	if hst == nil {
		reply(abi.Failure(tool, abi.Errorf(abi.CodeLoadError, "worker %s does not serve the tenant %q", w.name, tenant)))
		return
	}
	if meta, err := m.Metadata(); err == nil && meta.NumDelivered > 1 {
		t, err := hst.Tool(tool)
		if err != nil || !t.Idempotent {
			reply(abi.Failure(tool, abi.Errorf(abi.CodeCancelled, "the worker running this call stopped before it finished; %s is not marked idempotent, so it was not run again", tool)))
			return
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	if ms, err := strconv.ParseInt(h.Get(headerDeadline), 10, 64); err == nil {
		var c2 context.CancelFunc
		cctx, c2 = context.WithDeadline(cctx, time.UnixMilli(ms))
		defer c2()
	}
	w.mu.Lock()
	w.active[id] = cancel
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.active, id)
		w.mu.Unlock()
		cancel()
	}()
	_ = w.nc.Publish(progressSubject+id, []byte(`{"worker":"`+w.name+`","state":"started"}`))
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(w.o.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	}()
	env := hst.Call(host.WithCallID(cctx, id), tool, m.Data())
	close(done)
	if ctx.Err() != nil {
		// The worker is stopping: leave the call to another worker.
		return
	}
	reply(env)
}

// Depth is how many calls wait in the queue for a worker.
func (d *Dispatcher) Depth(ctx context.Context) (int64, error) {
	s, err := d.js.Stream(ctx, Stream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return int64(info.State.Msgs), nil
}
