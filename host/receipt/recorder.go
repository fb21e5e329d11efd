package receipt

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/ssh"
)

// Sink takes the receipt of each finished call. The host calls Record
// once per call, with the chain fields (Seq, Prev, Hash) unset: the sink
// links the receipt into its tenant's chain.
type Sink interface {
	Record(ctx context.Context, r *Receipt) error
}

// Store keeps chains (host/store implements it).
type Store interface {
	// AppendReceipts links rs into their tenants' chains in the given
	// order, setting Seq, Prev and Hash, and stores them with their
	// payloads, all or none. Several writers of one tenant (servers
	// sharing a database) still make one chain.
	AppendReceipts(ctx context.Context, rs []*Receipt) error
	// AddReceiptSignature stores a signature of a chain head.
	AddReceiptSignature(ctx context.Context, s *Signature) error
}

// RecorderOptions configure a [Recorder]. The zero value means the
// defaults.
type RecorderOptions struct {
	// Signer signs the chain heads; nil leaves the chains unsigned
	// (verify still checks their hashes).
	Signer ssh.Signer
	// SignEvery signs a tenant's head after that many new receipts
	// (DefaultSignEvery when 0).
	SignEvery int
	// SignInterval signs every head with unsigned receipts that often
	// (DefaultSignInterval when 0).
	SignInterval time.Duration
	// Queue caps the receipts waiting to be written (DefaultQueue when
	// 0): past it Record waits (backpressure) up to SendTimeout.
	Queue int
	// Batch caps the receipts written in one transaction (DefaultBatch
	// when 0).
	Batch int
	// Linger is how long the writer lets receipts gather after the first
	// before it writes them (DefaultLinger when 0; negative: no wait).
	// One transaction per batch, not per call, keeps the database's cost
	// per receipt low, and a call's send into the queue then rarely has
	// to wake the writer.
	Linger time.Duration
	// SendTimeout is how long Record waits for room in a full queue
	// before the receipt is counted lost (DefaultSendTimeout when 0).
	SendTimeout time.Duration
	// Logger receives write and signing failures; nil means none.
	Logger hclog.Logger
	// Now is the clock of signatures; nil means time.Now.
	Now func() time.Time
}

// The defaults of RecorderOptions.
const (
	DefaultSignEvery    = 1000
	DefaultSignInterval = time.Minute
	DefaultQueue        = 4096
	DefaultBatch        = 256
	DefaultSendTimeout  = 30 * time.Second
	DefaultLinger       = 5 * time.Millisecond
)

// ErrClosed is a Record after Close.
var ErrClosed = errors.New("receipt: the recorder is closed")

// Recorder is a [Sink] that writes receipts to a [Store] in batches, from
// one goroutine, through a bounded queue, and signs the chain heads every
// SignEvery receipts, every SignInterval and at Close. A call only hashes
// and enqueues: the database write is off its path.
type Recorder struct {
	store Store
	opts  RecorderOptions
	log   hclog.Logger
	queue chan item
	done  chan struct{}

	mu     sync.RWMutex // held for reading by senders; Close takes it to close the queue
	closed bool

	lost    atomic.Uint64
	written atomic.Uint64

	// heads is the writer goroutine's own: each tenant's last written
	// receipt and how many have not been signed yet.
	heads map[string]*head
}

type head struct {
	seq      uint64
	hash     string
	unsigned int
}

// item is a receipt, or a flush (done is closed once everything queued
// before it is written and, with sign set, the heads signed).
type item struct {
	r    *Receipt
	done chan error
	sign bool
}

// NewRecorder starts a recorder writing to store.
func NewRecorder(store Store, opts RecorderOptions) *Recorder {
	if opts.SignEvery <= 0 {
		opts.SignEvery = DefaultSignEvery
	}
	if opts.SignInterval <= 0 {
		opts.SignInterval = DefaultSignInterval
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = DefaultSendTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Linger == 0 {
		opts.Linger = DefaultLinger
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	rec := &Recorder{store: store, opts: opts, log: log, queue: make(chan item, opts.Queue), done: make(chan struct{}), heads: map[string]*head{}}
	go rec.loop()
	return rec
}

// Record queues r for writing. It waits while the queue is full, up to
// SendTimeout (the receipt is then lost, counted and logged); it does not
// give up when ctx is cancelled, since a cancelled call needs its receipt
// too.
func (rec *Recorder) Record(_ context.Context, r *Receipt) error {
	rec.mu.RLock()
	defer rec.mu.RUnlock()
	if rec.closed {
		rec.lost.Add(1)
		return ErrClosed
	}
	select {
	case rec.queue <- item{r: r}:
		return nil
	default:
	}
	t := time.NewTimer(rec.opts.SendTimeout)
	defer t.Stop()
	select {
	case rec.queue <- item{r: r}:
		return nil
	case <-t.C:
		rec.lost.Add(1)
		rec.log.Error("receipt lost: the receipt queue stayed full", "tenant", r.Tenant, "tool", r.Tool, "call_id", r.CallID)
		return errors.New("receipt: the queue stayed full; the receipt is lost")
	}
}

// Flush waits until every receipt queued before it is written.
func (rec *Recorder) Flush(ctx context.Context) error { return rec.flush(ctx, false) }

// Sign writes every receipt queued before it and signs each head with
// unsigned receipts (nothing to sign without a Signer).
func (rec *Recorder) Sign(ctx context.Context) error { return rec.flush(ctx, true) }

func (rec *Recorder) flush(ctx context.Context, sign bool) error {
	rec.mu.RLock()
	if rec.closed {
		rec.mu.RUnlock()
		return ErrClosed
	}
	done := make(chan error, 1)
	select {
	case rec.queue <- item{done: done, sign: sign}:
	case <-ctx.Done():
		rec.mu.RUnlock()
		return ctx.Err()
	}
	rec.mu.RUnlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued, signs the heads and stops. Records after
// Close fail with ErrClosed.
func (rec *Recorder) Close(ctx context.Context) error {
	rec.mu.Lock()
	if rec.closed {
		rec.mu.Unlock()
		return nil
	}
	rec.closed = true
	close(rec.queue)
	rec.mu.Unlock()
	select {
	case <-rec.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if n := rec.lost.Load(); n > 0 {
		return errors.New("receipt: " + itoa(n) + " receipts were lost (see the log)")
	}
	return nil
}

// Written counts the receipts stored; Lost those that were not.
func (rec *Recorder) Written() uint64 { return rec.written.Load() }

// Lost counts the receipts that could not be queued or written.
func (rec *Recorder) Lost() uint64 { return rec.lost.Load() }

func (rec *Recorder) loop() {
	defer close(rec.done)
	tick := time.NewTicker(rec.opts.SignInterval)
	defer tick.Stop()
	batch := make([]*Receipt, 0, rec.opts.Batch)
	// take handles one item; it reports false once the queue is closed.
	take := func(it item, ok bool) bool {
		if !ok {
			rec.write(batch)
			batch = batch[:0]
			rec.signAll()
			return false
		}
		if it.r != nil {
			if batch = append(batch, it.r); len(batch) == rec.opts.Batch {
				rec.write(batch)
				batch = batch[:0]
			}
			return true
		}
		// A flush: what came before it is written (and signed) first.
		err := rec.write(batch)
		batch = batch[:0]
		if it.sign {
			if serr := rec.signAll(); err == nil {
				err = serr
			}
		}
		it.done <- err
		return true
	}
	for {
		// Block for the first receipt (or the signing tick).
		select {
		case it, ok := <-rec.queue:
			if !take(it, ok) {
				return
			}
		case <-tick.C:
			rec.signAll()
			continue
		}
		// Then let more arrive without a wake-up per call: a send into
		// the buffered queue does not wake the writer while it sleeps.
		if rec.opts.Linger > 0 {
			time.Sleep(rec.opts.Linger)
		}
	drain:
		for {
			select {
			case it, ok := <-rec.queue:
				if !take(it, ok) {
					return
				}
			default:
				break drain
			}
		}
		rec.write(batch)
		batch = batch[:0]
	}
}

// write stores a batch, retrying a failed write a few times.
func (rec *Recorder) write(batch []*Receipt) error {
	if len(batch) == 0 {
		return nil
	}
	var err error
	for attempt := range 4 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt*attempt) * 100 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = rec.store.AppendReceipts(ctx, batch)
		cancel()
		if err == nil {
			break
		}
	}
	if err != nil {
		rec.lost.Add(uint64(len(batch)))
		rec.log.Error("receipts lost: the store refused them", "receipts", len(batch), "error", err)
		return err
	}
	rec.written.Add(uint64(len(batch)))
	for _, r := range batch {
		h := rec.heads[r.Tenant]
		if h == nil {
			h = &head{}
			rec.heads[r.Tenant] = h
		}
		h.seq, h.hash = r.Seq, r.Hash
		h.unsigned++
		if h.unsigned >= rec.opts.SignEvery {
			rec.sign(r.Tenant, h)
		}
	}
	return nil
}

// signAll signs every head with unsigned receipts.
func (rec *Recorder) signAll() error {
	var errs []error
	for tenant, h := range rec.heads {
		if h.unsigned > 0 {
			errs = append(errs, rec.sign(tenant, h))
		}
	}
	return errors.Join(errs...)
}

func (rec *Recorder) sign(tenant string, h *head) error {
	if rec.opts.Signer == nil {
		h.unsigned = 0
		return nil
	}
	s, err := Sign(rec.opts.Signer, tenant, h.seq, h.hash, rec.opts.Now().UTC().UnixNano())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = rec.store.AddReceiptSignature(ctx, s)
		cancel()
	}
	if err != nil {
		rec.log.Error("signing a receipt chain head failed", "tenant", tenant, "seq", h.seq, "error", err)
		return err
	}
	h.unsigned = 0
	return nil
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}
