package natsexec

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
)

// Worker runs calls from the queue with its hosts (one per tenant).
type Worker struct {
	nc       *nats.Conn
	cons     jetstream.Consumer
	hosts    map[string]*host.Host
	o        Options
	k        *keys
	name     string
	seen     *replayMemory
	rejected rejections
	mu       sync.Mutex
	active   map[string]context.CancelFunc
}

// NewWorker connects a worker. It refuses Options without a key of
// MinKeyBytes.
func NewWorker(ctx context.Context, nc *nats.Conn, name string, hosts map[string]*host.Host, o Options) (*Worker, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	c, err := ensure(ctx, js, o)
	if err != nil {
		return nil, err
	}
	w := &Worker{nc: nc, cons: c, hosts: hosts, o: o, k: newKeys(o.Key), name: name, seen: newReplayMemory(o.ReplayMemory), active: map[string]context.CancelFunc{}}
	w.rejected.log = o.Logger
	return w, nil
}

// Run takes calls until ctx ends, then drains: it takes no new call and
// waits for those it runs to answer, up to DrainTimeout. Past it, they
// are cancelled and answer MAY_HAVE_RUN (acknowledged: a call has one
// answer, and one that may have run is not run again elsewhere).
func (w *Worker) Run(ctx context.Context) error {
	cancels, err := w.nc.Subscribe(cancelSubject+"*", w.cancel)
	if err != nil {
		return err
	}
	defer cancels.Unsubscribe()
	// The calls outlive ctx by the drain timeout at most.
	calls, cut := context.WithCancel(context.WithoutCancel(ctx))
	defer cut()
	sem := make(chan struct{}, w.o.Concurrency)
	var wg sync.WaitGroup
	defer func() {
		drained := make(chan struct{})
		go func() { wg.Wait(); close(drained) }()
		t := time.NewTimer(w.o.DrainTimeout)
		defer t.Stop()
		select {
		case <-drained:
		case <-t.C:
			w.o.Logger.Warn("the drain timeout passed: the calls still running are cancelled (they may have run)", "timeout", w.o.DrainTimeout)
			cut()
			<-drained
		}
	}()
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
				w.handle(calls, m)
			}()
		}
		if !got {
			<-sem
		}
	}
}

// cancel stops a call this worker runs, when the cancellation is signed
// for it.
func (w *Worker) cancel(m *nats.Msg) {
	id := m.Subject[len(cancelSubject):]
	if r := verifyRaw(m.Data, w.k.cancelSignature(id)); r != "" {
		w.rejected.add(MessageCancel, r, m.Subject)
		return
	}
	w.mu.Lock()
	if c := w.active[id]; c != nil {
		c()
	}
	w.mu.Unlock()
}

// accept verifies a call message: the call, or nil when it was dropped
// (counted, and terminated so that it is not delivered again).
func (w *Worker) accept(m jetstream.Msg) (*call, uint64) {
	c, reason := w.k.openCall(m.Headers(), m.Data(), time.Now())
	var delivered uint64
	if reason == "" {
		meta, err := m.Metadata()
		switch {
		case err != nil:
			reason = ReasonMalformed
		case !w.seen.admit(c.id, meta.Sequence.Stream, c.issued.UnixMilli(), time.Now().UnixMilli()):
			reason = ReasonReplayed
		default:
			delivered = meta.NumDelivered
		}
	}
	if reason != "" {
		w.rejected.add(MessageCall, reason, m.Subject())
		_ = m.Term()
		return nil, 0
	}
	return c, delivered
}

// handle runs one call (ctx ends when a stopping worker's drain timeout
// passes): again only if its tool is idempotent when a
// worker already had it; a sign of life every AckWait/3 while it runs.
// The tenant, tool and deadline are the verified call's.
func (w *Worker) handle(ctx context.Context, m jetstream.Msg) {
	c, delivered := w.accept(m)
	if c == nil {
		return
	}
	reply := func(env abi.Envelope) {
		b, _ := json.Marshal(env)
		_ = w.nc.PublishMsg(w.k.sealResult(c, b))
		_ = m.Ack()
	}
	hst := w.hosts[c.tenant]
	if hst == nil {
		reply(abi.Failure(c.tool, abi.Errorf(abi.CodeLoadError, "worker %s does not serve the tenant %q", w.name, c.tenant)))
		return
	}
	if delivered > 1 {
		t, err := hst.Tool(c.tool)
		if err != nil || !t.Idempotent {
			// The worker that had it may have run it, in part or whole:
			// not CANCELLED, which would say it did not run.
			reply(abi.Failure(c.tool, abi.Errorf(abi.CodeMayHaveRun, "the worker running this call stopped before it answered, so the call may have run; %s is not marked idempotent, so it was not run again", c.tool)))
			return
		}
	}
	cctx, cancel := context.WithDeadline(ctx, c.deadline)
	w.mu.Lock()
	w.active[c.id] = cancel
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.active, c.id)
		w.mu.Unlock()
		cancel()
	}()
	_ = w.nc.Publish(progressSubject+c.id, []byte(`{"worker":"`+w.name+`","state":"started"}`))
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
	env := hst.Call(host.WithCallID(cctx, c.id), c.tool, c.args)
	close(done)
	if ctx.Err() != nil && env.Error != nil && (env.Error.Code == abi.CodeCancelled || env.Error.Code == abi.CodeTimeout) {
		// Cut by the worker's drain timeout, not by its caller: what the
		// call did before is not known.
		env = abi.Failure(c.tool, abi.Errorf(abi.CodeMayHaveRun, "worker %s stopped and its drain timeout passed during the call: it was cancelled, but it may have run, in part or whole", w.name))
	}
	reply(env)
}

// Rejected is how many messages of a kind (MessageCall, MessageCancel)
// the worker dropped for a reason (ReasonBadSignature, ...).
func (w *Worker) Rejected(message, reason string) uint64 {
	return w.rejected.get(message, reason)
}

// Describe implements prometheus.Collector (agenthost_queue_rejected_total).
func (w *Worker) Describe(ch chan<- *prometheus.Desc) { w.rejected.Describe(ch) }

// Collect implements prometheus.Collector.
func (w *Worker) Collect(ch chan<- prometheus.Metric) { w.rejected.Collect(ch) }

// Interface guards
var _ prometheus.Collector = (*Worker)(nil)
