package natsexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/abi"
)

// Dispatcher puts calls on the queue and waits for their results.
type Dispatcher struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	o        Options
	k        *keys
	rejected rejections
}

// NewDispatcher connects a dispatcher (and creates the stream). It
// refuses Options without a key of MinKeyBytes.
func NewDispatcher(ctx context.Context, nc *nats.Conn, o Options) (*Dispatcher, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if _, err := ensure(ctx, js, o); err != nil {
		return nil, err
	}
	d := &Dispatcher{nc: nc, js: js, o: o, k: newKeys(o.Key)}
	d.rejected.log = o.Logger
	return d, nil
}

// Call runs tool for tenant on some worker and returns its envelope. A
// cancelled ctx cancels the call on the worker. ErrSaturated says the
// queue is full; other errors are the queue's, not the tool's.
//
// The call is signed and its arguments encrypted; its deadline is ctx's,
// or MaxDeadline from now. Its result is awaited on a random subject
// named only inside the encrypted body, and only a result signed for
// this call is accepted there: anything else is dropped and counted, and
// the wait goes on.
func (d *Dispatcher) Call(ctx context.Context, tenant, tool string, args json.RawMessage) (abi.Envelope, error) {
	now := time.Now()
	c := &call{id: newToken(), tenant: tenant, tool: tool, issued: now, deadline: now.Add(d.o.MaxDeadline), args: args}
	if dl, ok := ctx.Deadline(); ok {
		c.deadline = dl
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, c.deadline)
		defer cancel()
	}
	token := newToken()
	msg := d.k.sealCall(c, token)
	results := make(chan *nats.Msg, 16)
	sub, err := d.nc.ChanSubscribe(resultSubject+token, results)
	if err != nil {
		return abi.Envelope{}, fmt.Errorf("queue: %w", err)
	}
	defer sub.Unsubscribe()
	ack, err := d.js.PublishMsg(ctx, msg)
	if err != nil {
		if isFull(err) {
			return abi.Envelope{}, ErrSaturated
		}
		return abi.Envelope{}, fmt.Errorf("queue: publish: %w", err)
	}
	if ack.Duplicate {
		return abi.Envelope{}, errors.New("queue: publish: the server took the call for a duplicate")
	}
	// result waits for the call's signed result until done ends.
	result := func(done <-chan struct{}) (abi.Envelope, bool) {
		for {
			select {
			case m := <-results:
				b, reason := d.k.openResult(c, m)
				if reason != "" {
					d.rejected.add(MessageResult, reason, m.Subject)
					continue
				}
				var env abi.Envelope
				if err := json.Unmarshal(b, &env); err != nil {
					d.rejected.add(MessageResult, ReasonMalformed, m.Subject)
					continue
				}
				return env, true
			case <-done:
				return abi.Envelope{}, false
			}
		}
	}
	if env, ok := result(ctx.Done()); ok {
		return env, nil
	}
	_ = d.nc.Publish(cancelSubject+c.id, d.k.cancelSignature(c.id))
	// The worker answers CANCELLED (or TIMEOUT) once the guest has
	// stopped; wait a moment for it, so the caller gets the worker's own
	// result.
	gctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if env, ok := result(gctx.Done()); ok {
		return env, nil
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return abi.Failure(tool, abi.Errorf(abi.CodeTimeout, "no worker answered before the call's deadline")), nil
	}
	return abi.Failure(tool, abi.Errorf(abi.CodeCancelled, "the caller cancelled the call")), nil
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

// Rejected is how many messages of a kind (MessageResult) the dispatcher
// dropped for a reason (ReasonBadSignature, ...).
func (d *Dispatcher) Rejected(message, reason string) uint64 {
	return d.rejected.get(message, reason)
}

// Describe implements prometheus.Collector (agenthost_queue_rejected_total).
func (d *Dispatcher) Describe(ch chan<- *prometheus.Desc) { d.rejected.Describe(ch) }

// Collect implements prometheus.Collector.
func (d *Dispatcher) Collect(ch chan<- prometheus.Metric) { d.rejected.Collect(ch) }

// Interface guards
var _ prometheus.Collector = (*Dispatcher)(nil)
