// Package natsexec is the job engine's NATS JetStream executor: it
// spreads tool calls over machines. A Dispatcher (in
// `agenthost serve --nats`) puts each call on a NATS JetStream work queue,
// and Workers (`agenthost worker --nats`, any number, anywhere) run them
// with their own hosts and send the results back. Cancellation flows to
// the worker running the call; a call whose worker dies is delivered
// again, and run again only when its tool is idempotent; when the queue
// is full the dispatcher says so at once (back-pressure).
//
// Nothing on the NATS server is trusted beyond what the shared key
// proves. [Connect] refuses a server that lets clients in without
// credentials and a plain-text connection beyond loopback. Every call is
// signed (HMAC-SHA256 over its ID, tenant, tool, issue time, deadline and
// the digest of its sealed body) and its arguments are encrypted
// (AES-256-GCM under a key of the call's own); a worker takes the tenant
// from the verified call only, and refuses expired calls and copies of a
// call it has seen. Each call names a random reply subject inside its
// sealed body, and the dispatcher accepts on it only a result signed for
// that call. A message that fails a check is dropped and counted
// (agenthost_queue_rejected_total; Dispatcher and Worker are Prometheus
// collectors).
package natsexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go/jetstream"
)

// Names on the NATS server.
const (
	Stream          = "AGENTHOST_CALLS"
	Consumer        = "agenthost-workers"
	callSubject     = "agenthost.calls."    // + tenant
	resultSubject   = "agenthost.results."  // + the call's random reply token
	cancelSubject   = "agenthost.cancel."   // + call ID
	progressSubject = "agenthost.progress." // + call ID
)

// Inbox prefixes: the dispatcher's and the workers' request replies
// (publish acknowledgements, fetched calls) come on subjects of their
// own, so the server's permissions can keep each role out of the
// other's (docs/OPERATIONS.md).
const (
	DispatcherInbox = "_AGENTHOST_SERVE_INBOX"
	WorkerInbox     = "_AGENTHOST_WORKER_INBOX"
)

// Options configure the queue (both sides must agree).
type Options struct {
	// Key is the shared secret of serve and its workers, at least
	// MinKeyBytes random bytes: it signs calls and results and encrypts
	// their bodies. Required.
	Key []byte
	// MaxQueued bounds the calls waiting for a worker; beyond it Call
	// returns ErrSaturated (DefaultMaxQueued when 0).
	MaxQueued int64
	// AckWait is how long a call may go without a sign of life from its
	// worker before it is delivered again (DefaultAckWait when 0).
	AckWait time.Duration
	// Concurrency is how many calls a worker runs at once
	// (DefaultConcurrency when 0).
	Concurrency int
	// MaxDeadline is the deadline given to a call whose context has none
	// (DefaultMaxDeadline when 0); a worker refuses a call past its
	// deadline.
	MaxDeadline time.Duration
	// DuplicateWindow is how long the server remembers call IDs to drop a
	// copy of a call published again (DefaultDuplicateWindow when 0).
	DuplicateWindow time.Duration
	// ReplayMemory is how many call IDs a worker remembers to refuse a
	// copy of a call it has taken (DefaultReplayMemory when 0).
	ReplayMemory int
	// DrainTimeout is how long a worker told to stop goes on running the
	// calls it has, taking no new one (DefaultDrainTimeout when 0); past
	// it they are cancelled and answer MAY_HAVE_RUN.
	DrainTimeout time.Duration
	Logger       hclog.Logger
}

// Defaults of Options.
const (
	DefaultMaxQueued       = 10000
	DefaultAckWait         = 30 * time.Second
	DefaultConcurrency     = 8
	DefaultMaxDeadline     = 10 * time.Minute
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultReplayMemory    = 1 << 18
	DefaultDrainTimeout    = 30 * time.Second
)

// Errors of the queue.
var (
	// ErrSaturated is a call refused because the queue is full.
	ErrSaturated = errors.New("queue: the workers are saturated; try again later")
	// ErrNoKey is a dispatcher or worker made without Options.Key.
	ErrNoKey = errors.New("queue: no shared key: serve and its workers need the same secret key to sign and encrypt calls")
	// ErrShortKey is a key shorter than MinKeyBytes.
	ErrShortKey = fmt.Errorf("queue: the shared key must be at least %d random bytes", MinKeyBytes)
)

func (o *Options) defaults() error {
	if len(o.Key) == 0 {
		return ErrNoKey
	}
	if len(o.Key) < MinKeyBytes {
		return fmt.Errorf("%w (it has %d)", ErrShortKey, len(o.Key))
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = DefaultMaxQueued
	}
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.MaxDeadline <= 0 {
		o.MaxDeadline = DefaultMaxDeadline
	}
	if o.DuplicateWindow <= 0 {
		o.DuplicateWindow = DefaultDuplicateWindow
	}
	if o.ReplayMemory <= 0 {
		o.ReplayMemory = DefaultReplayMemory
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return nil
}

// ensure creates (or updates) the stream and the workers' consumer. The
// stream drops a message whose Nats-Msg-Id (the call ID) it has seen
// within DuplicateWindow: a copy of a call published again never reaches
// a worker.
func ensure(ctx context.Context, js jetstream.JetStream, o Options) (jetstream.Consumer, error) {
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: Stream, Subjects: []string{callSubject + ">"},
		Retention: jetstream.WorkQueuePolicy, MaxMsgs: o.MaxQueued, Discard: jetstream.DiscardNew,
		Duplicates: o.DuplicateWindow,
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
