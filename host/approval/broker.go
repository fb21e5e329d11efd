package approval

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/agenthost/agenthost/abi"
)

// Decision is a person's answer to a pending call.
type Decision string

// The decisions a person may give, and the outcomes a request may end
// with without one.
const (
	// AllowOnce runs this call.
	AllowOnce Decision = "allow-once"
	// Allow runs this call and, for the minutes given, the tenant's
	// later calls of the same tool that match the same conditions.
	Allow Decision = "allow"
	// Deny refuses the call (PERMISSION_DENIED).
	Deny Decision = "deny"
	// Expired: no decision came within the rule's timeout.
	Expired Decision = "expired"
	// Cancelled: the caller gave up (its context ended) first.
	Cancelled Decision = "cancelled"
)

// ParseDecision accepts "allow-once", "allow" and "deny".
func ParseDecision(s string) (Decision, error) {
	switch d := Decision(s); d {
	case AllowOnce, Allow, Deny:
		return d, nil
	}
	return "", fmt.Errorf("decision %q: want %q, %q or %q", s, AllowOnce, Allow, Deny)
}

// Defaults of Options.
const (
	DefaultMaxPending          = 1024
	DefaultMaxPendingPerTenant = 64
	DefaultMaxRemembered       = 4096
	DefaultMaxMinutes          = 24 * 60
	DefaultMinutes             = 15
	DefaultMaxSubscribers      = 256
	// decidedTTL is how long a decided request stays known, so that a
	// second answer meets the first.
	decidedTTL = time.Hour
	// subscriberBuffer is each subscription's channel capacity.
	subscriberBuffer = 64
)

// Errors of the broker, for front-ends to map (HTTP 404, 400).
var (
	// ErrNotFound: no request with that ID for that tenant (another
	// tenant's ID is not found either).
	ErrNotFound = errors.New("approval: no such request")
	// ErrMinutes: "allow" with minutes out of bounds.
	ErrMinutes = errors.New("approval: minutes out of bounds")
	// ErrSubscribers: too many subscriptions.
	ErrSubscribers = errors.New("approval: too many subscribers")
)

// Options configure a Broker. The zero value means the defaults.
type Options struct {
	// MaxPending bounds the requests waiting at once, all tenants
	// together (DefaultMaxPending when 0); MaxPendingPerTenant bounds
	// one tenant's (DefaultMaxPendingPerTenant when 0). A call past
	// either is refused at once (PERMISSION_DENIED saying so).
	MaxPending, MaxPendingPerTenant int
	// MaxRemembered bounds the remembered "allow" decisions, all
	// tenants together (DefaultMaxRemembered when 0); one tenant may
	// hold at most a quarter of them. Past the bound the decision that
	// expires first is forgotten.
	MaxRemembered int
	// MaxMinutes is the longest "allow" (DefaultMaxMinutes when 0).
	MaxMinutes int
	// Key signs the states of the non-blocking path (see NeedsApproval);
	// at least 32 bytes, or nil for a random key (states then do not
	// survive the process).
	Key []byte
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Request is a call waiting for a decision, as front-ends show it.
type Request struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Tool   string `json:"tool"`
	// Arguments are the call's arguments with secrets redacted.
	Arguments json.RawMessage `json:"arguments"`
	// ArgumentsDigest is "sha256:<hex>" of the call's canonical
	// arguments (before redaction): what a decision is bound to.
	ArgumentsDigest string `json:"argumentsDigest"`
	// Grant summarises what the call may do.
	Grant Summary `json:"grant"`
	// Risks are the rule's conditions that held (Match.Risks).
	Risks []string `json:"risks"`
	// Rule is the index of the matching rule in the policy.
	Rule    int       `json:"rule"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// Record is a decision as recorded: for the call's receipt, the log, and
// a second answer.
type Record struct {
	// ID is the request's ID (for a reused "allow", the ID of the
	// request that was allowed).
	ID       string   `json:"id"`
	Tenant   string   `json:"tenant"`
	Tool     string   `json:"tool"`
	Decision Decision `json:"decision"`
	// By is who decided: "<tenant>/<subject>" of an HTTP token,
	// "terminal:<user>", a front-end's name; "" for expired and
	// cancelled.
	By string    `json:"by"`
	At time.Time `json:"at"`
	// Until is when an "allow" stops applying.
	Until time.Time `json:"until,omitzero"`
	// Reused is set on a call that ran under an earlier "allow".
	Reused bool `json:"reused,omitempty"`
	// Note is why a front-end decided without asking (no terminal to
	// ask on); a denial's message carries it.
	Note string `json:"note,omitempty"`
}

// Digest is the digest a decision is bound to: "sha256:<hex>" of the
// canonical arguments.
func Digest(canonicalArgs []byte) string {
	s := sha256.Sum256(canonicalArgs)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Broker holds the calls waiting for a decision, the decisions given,
// and the remembered "allow" decisions. One Broker may serve many hosts
// (tenants); it is safe for concurrent use.
type Broker struct {
	o   Options
	key []byte

	mu         sync.Mutex
	pending    map[string]*entry // by ID
	perTenant  map[string]int
	decided    map[string]Record // by ID, for second answers
	order      []decidedAt       // decided IDs, oldest first
	remembered map[string]Record // by tenant|tool|match key
	redeemed   map[string]time.Time
	subs       map[*sub]struct{}
}

type entry struct {
	req  Request
	done chan struct{}
	rec  Record
	key  string // remember key
}

type decidedAt struct {
	id string
	at time.Time
}

type sub struct {
	tenant string
	ch     chan Event
}

// NewBroker returns a broker; an error only for a Key shorter than 32
// bytes.
func NewBroker(o Options) (*Broker, error) {
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.MaxPendingPerTenant <= 0 {
		o.MaxPendingPerTenant = DefaultMaxPendingPerTenant
	}
	if o.MaxRemembered <= 0 {
		o.MaxRemembered = DefaultMaxRemembered
	}
	if o.MaxMinutes <= 0 {
		o.MaxMinutes = DefaultMaxMinutes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	key := o.Key
	if key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("approval: key: %w", err)
		}
	} else if len(key) < 32 {
		return nil, errors.New("approval: the key must have at least 32 bytes")
	}
	return &Broker{o: o, key: key, pending: map[string]*entry{}, perTenant: map[string]int{},
		decided: map[string]Record{}, remembered: map[string]Record{}, redeemed: map[string]time.Time{}, subs: map[*sub]struct{}{}}, nil
}

// Ask decides a call that matched rule m: with a remembered "allow", an
// answer carried by ctx (WithAnswer), a NeedsApproval when ctx says not
// to wait (NoWait), or else by waiting for Decide until m.Timeout or the
// end of ctx. req needs Tenant, Tool, Arguments (redacted),
// ArgumentsDigest and Grant; Ask fills ID, Risks, Rule, Created and
// Expires.
//
// The error is nil when the call may run; otherwise an *abi.Error:
// PERMISSION_DENIED (denied, no decision in time, too many pending, an
// answer that does not fit the call) or the caller's CANCELLED /
// TIMEOUT. The Record says what was decided, by whom and when, also
// for a denial.
func (b *Broker) Ask(ctx context.Context, req Request, m Match) (Record, error) {
	if req.Tenant == "" {
		req.Tenant = "default"
	}
	now := b.o.Now()
	req.Risks, req.Rule = m.Risks, m.Rule
	if req.Risks == nil {
		req.Risks = []string{}
	}
	key := req.Tenant + "|" + req.Tool + "|" + m.Key()
	b.mu.Lock()
	if r, ok := b.remembered[key]; ok {
		if now.Before(r.Until) {
			b.mu.Unlock()
			r.Reused = true
			return r, nil
		}
		delete(b.remembered, key)
	}
	b.mu.Unlock()
	if a, ok := ctx.Value(answerKey{}).(*Answer); ok && a != nil {
		return b.redeem(req, m, key, *a, now)
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = 120 * time.Second
	}
	req.ID = newID()
	req.Created, req.Expires = now, now.Add(timeout)
	if d, ok := ctx.Value(noWaitKey{}).(*Deferred); ok && d != nil {
		st := b.sign(state{ID: req.ID, Tenant: req.Tenant, Tool: req.Tool, Digest: req.ArgumentsDigest, Rule: req.Rule, Risks: req.Risks, Expires: req.Expires.Unix()})
		d.set(NeedsApproval{Request: req, State: st})
		return Record{ID: req.ID, Tenant: req.Tenant, Tool: req.Tool}, abi.Errorf(abi.CodePermissionDenied,
			"the call of %s needs a person's approval (request %s)", req.Tool, req.ID).WithDetails(map[string]any{"approval": req.ID})
	}
	e := &entry{req: req, done: make(chan struct{}), key: key}
	b.mu.Lock()
	switch {
	case b.perTenant[req.Tenant] >= b.o.MaxPendingPerTenant:
		b.mu.Unlock()
		return Record{Tenant: req.Tenant, Tool: req.Tool}, abi.Errorf(abi.CodePermissionDenied,
			"the call of %s needs a person's approval and tenant %s already has %d calls waiting for one, its limit; answer those first", req.Tool, req.Tenant, b.o.MaxPendingPerTenant)
	case len(b.pending) >= b.o.MaxPending:
		b.mu.Unlock()
		return Record{Tenant: req.Tenant, Tool: req.Tool}, abi.Errorf(abi.CodePermissionDenied,
			"the call of %s needs a person's approval and %d calls already wait for one, the host's limit; answer those first", req.Tool, b.o.MaxPending)
	}
	b.pending[req.ID] = e
	b.perTenant[req.Tenant]++
	b.publish(Event{Kind: EventPending, Request: req})
	b.mu.Unlock()
	if n, ok := ctx.Value(notifyKey{}).(func(Request)); ok && n != nil {
		n(req)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-e.done:
	case <-t.C:
		b.close(e, Expired, "")
	case <-ctx.Done():
		b.close(e, Cancelled, "")
	}
	// e.rec is final once done is closed, whoever closed it.
	<-e.done
	return e.rec, outcome(e.rec, timeout, ctx)
}

// Remembered returns the remembered "allow" that covers a call of tool
// by tenant matching m (Record.Reused set), so that a caller can skip
// describing the request; Ask checks the same first.
func (b *Broker) Remembered(tenant, tool string, m Match) (Record, bool) {
	if tenant == "" {
		tenant = "default"
	}
	key := tenant + "|" + tool + "|" + m.Key()
	now := b.o.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.remembered[key]
	if !ok || !now.Before(r.Until) {
		return Record{}, false
	}
	r.Reused = true
	return r, true
}

// outcome is the error of a recorded decision: nil to run.
func outcome(r Record, timeout time.Duration, ctx context.Context) error {
	switch r.Decision {
	case AllowOnce, Allow:
		return nil
	case Deny:
		note := ""
		if r.Note != "" {
			note = ": " + r.Note
		}
		return abi.Errorf(abi.CodePermissionDenied, "the call of %s was denied by %s (approval %s)%s", r.Tool, r.By, r.ID, note).WithDetails(map[string]any{"approval": r.ID})
	case Expired:
		return abi.Errorf(abi.CodePermissionDenied, "the call of %s needs a person's approval and no decision came within %d s (approval %s)", r.Tool, int(timeout.Seconds()), r.ID).WithDetails(map[string]any{"approval": r.ID})
	}
	if ctx.Err() == context.DeadlineExceeded {
		return abi.Errorf(abi.CodeTimeout, "the caller's deadline passed while the call of %s waited for approval %s", r.Tool, r.ID)
	}
	return abi.Errorf(abi.CodeCancelled, "the caller gave up while the call of %s waited for approval %s", r.Tool, r.ID)
}

// close ends a pending entry with a decision, unless it has one; it
// reports whether this was the first.
func (b *Broker) close(e *entry, d Decision, by string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closeLocked(e, d, by, 0, "")
}

func (b *Broker) closeLocked(e *entry, d Decision, by string, minutes int, note string) bool {
	if _, ok := b.pending[e.req.ID]; !ok {
		return false
	}
	now := b.o.Now()
	delete(b.pending, e.req.ID)
	if b.perTenant[e.req.Tenant]--; b.perTenant[e.req.Tenant] <= 0 {
		delete(b.perTenant, e.req.Tenant)
	}
	e.rec = Record{ID: e.req.ID, Tenant: e.req.Tenant, Tool: e.req.Tool, Decision: d, By: by, At: now, Note: note}
	if d == Allow {
		e.rec.Until = now.Add(time.Duration(minutes) * time.Minute)
		b.rememberLocked(e.key, e.rec)
	}
	b.keepLocked(e.rec)
	close(e.done)
	b.publish(Event{Kind: EventDecided, Request: e.req, Record: &e.rec})
	return true
}

// Decide answers request id of tenant. The first answer wins: a later
// one returns the first Record with first == false. minutes applies to
// Allow (0: DefaultMinutes; at most Options.MaxMinutes) and must be 0
// otherwise. by names who decided. ErrNotFound for an ID that is
// unknown, forgotten, or another tenant's.
func (b *Broker) Decide(tenant, id string, d Decision, minutes int, by string) (rec Record, first bool, err error) {
	return b.DecideNote(tenant, id, d, minutes, by, "")
}

// DecideNote is Decide with a note on why (Record.Note), for a
// front-end that decides without asking a person.
func (b *Broker) DecideNote(tenant, id string, d Decision, minutes int, by, note string) (rec Record, first bool, err error) {
	if tenant == "" {
		tenant = "default"
	}
	if _, err := ParseDecision(string(d)); err != nil {
		return Record{}, false, err
	}
	minutes, err = b.minutes(d, minutes)
	if err != nil {
		return Record{}, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.pending[id]; ok && e.req.Tenant == tenant {
		b.closeLocked(e, d, by, minutes, note)
		return e.rec, true, nil
	}
	if r, ok := b.decided[id]; ok && r.Tenant == tenant {
		return r, false, nil
	}
	return Record{}, false, ErrNotFound
}

func (b *Broker) minutes(d Decision, m int) (int, error) {
	if d != Allow {
		if m != 0 {
			return 0, fmt.Errorf("%w: minutes go with %q only", ErrMinutes, Allow)
		}
		return 0, nil
	}
	if m == 0 {
		m = DefaultMinutes
	}
	if m < 1 || m > b.o.MaxMinutes {
		return 0, fmt.Errorf("%w: %d minutes: between 1 and %d", ErrMinutes, m, b.o.MaxMinutes)
	}
	return m, nil
}

// rememberLocked keeps an "allow" within the bounds: a tenant holds at
// most a quarter of MaxRemembered (at least one), all at most
// MaxRemembered; past them the entry that expires first goes.
func (b *Broker) rememberLocked(key string, r Record) {
	now := b.o.Now()
	perTenant, total := 0, 0
	for k, v := range b.remembered {
		if !now.Before(v.Until) {
			delete(b.remembered, k)
			continue
		}
		total++
		if v.Tenant == r.Tenant {
			perTenant++
		}
	}
	limit := max(1, b.o.MaxRemembered/4)
	for (perTenant >= limit || total >= b.o.MaxRemembered) && total > 0 {
		victim := ""
		for k, v := range b.remembered {
			if perTenant >= limit && v.Tenant != r.Tenant {
				continue
			}
			if victim == "" || v.Until.Before(b.remembered[victim].Until) {
				victim = k
			}
		}
		if victim == "" {
			break
		}
		if b.remembered[victim].Tenant == r.Tenant {
			perTenant--
		}
		delete(b.remembered, victim)
		total--
	}
	b.remembered[key] = r
}

// keepLocked remembers a decided request for second answers, for
// decidedTTL and at most 4·MaxPending of them.
func (b *Broker) keepLocked(r Record) {
	now := b.o.Now()
	for len(b.order) > 0 && (now.Sub(b.order[0].at) > decidedTTL || len(b.order) >= 4*b.o.MaxPending) {
		delete(b.decided, b.order[0].id)
		b.order = b.order[1:]
	}
	b.decided[r.ID] = r
	b.order = append(b.order, decidedAt{r.ID, now})
}

// Pending returns the tenant's waiting requests, oldest first; tenant ""
// returns every tenant's (for the operator).
func (b *Broker) Pending(tenant string) []Request {
	b.mu.Lock()
	out := make([]Request, 0, len(b.pending))
	for _, e := range b.pending {
		if tenant == "" || e.req.Tenant == tenant {
			out = append(out, e.req)
		}
	}
	b.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Get returns one request of the tenant, pending or decided (with its
// Record); ErrNotFound otherwise.
func (b *Broker) Get(tenant, id string) (Request, *Record, error) {
	if tenant == "" {
		tenant = "default"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.pending[id]; ok && e.req.Tenant == tenant {
		return e.req, nil, nil
	}
	if r, ok := b.decided[id]; ok && r.Tenant == tenant {
		return Request{ID: r.ID, Tenant: r.Tenant, Tool: r.Tool}, &r, nil
	}
	return Request{}, nil, ErrNotFound
}

// The kinds of Event.
const (
	EventPending = "pending"
	EventDecided = "decided"
)

// Event tells a subscriber that a request is pending or was decided.
type Event struct {
	Kind    string  `json:"kind"`
	Request Request `json:"request"`
	// Record is set for EventDecided.
	Record *Record `json:"record,omitempty"`
}

// Subscribe returns the events of tenant's requests ("" for every
// tenant) from now on, and a function that ends the subscription. A
// subscriber that falls behind (its buffer of 64 events full) is
// dropped: its channel closes, and it should subscribe again and
// re-read Pending. At most DefaultMaxSubscribers at once
// (ErrSubscribers).
func (b *Broker) Subscribe(tenant string) (<-chan Event, func(), error) {
	s := &sub{tenant: tenant, ch: make(chan Event, subscriberBuffer)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.subs) >= DefaultMaxSubscribers {
		return nil, nil, ErrSubscribers
	}
	b.subs[s] = struct{}{}
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			if _, ok := b.subs[s]; ok {
				delete(b.subs, s)
				close(s.ch)
			}
			b.mu.Unlock()
		})
	}, nil
}

// publish sends ev to the subscribers of its tenant without blocking.
func (b *Broker) publish(ev Event) {
	for s := range b.subs {
		if s.tenant != "" && s.tenant != ev.Request.Tenant {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			delete(b.subs, s)
			close(s.ch)
		}
	}
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "apr_" + hex.EncodeToString(b[:])
}
