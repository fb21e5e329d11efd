package approval

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/abi"
)

// maxRedeemed bounds the answered states remembered until they expire,
// so that one state answers one call.
const maxRedeemed = 16384

type noWaitKey struct{}
type answerKey struct{}
type notifyKey struct{}

// Deferred receives the request of a call made under NoWait that needs
// an approval.
type Deferred struct {
	mu   sync.Mutex
	need *NeedsApproval
}

func (d *Deferred) set(n NeedsApproval) {
	d.mu.Lock()
	d.need = &n
	d.mu.Unlock()
}

// Needed returns the request of the call made with the Deferred's
// context, when it needed an approval (the call then failed with
// PERMISSION_DENIED without running). With nested calls the last one
// that needed an approval is kept.
func (d *Deferred) Needed() (NeedsApproval, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.need == nil {
		return NeedsApproval{}, false
	}
	return *d.need, true
}

// NeedsApproval is what a stateless front-end sends its client to ask
// for a decision: the request to show, and State, an opaque signed
// string the client hands back with its answer (MCP's requestState,
// AG-UI's interrupt payload). State binds the answer to the tenant, the
// tool and the digest of the arguments, and expires with the request.
type NeedsApproval struct {
	Request Request `json:"request"`
	State   string  `json:"state"`
}

// NoWait returns a context under which a call that needs an approval
// does not wait for one: it fails at once (PERMISSION_DENIED, details
// {"approval": id}) and the Deferred holds its request. The calls of a
// remembered "allow" still run.
func NoWait(ctx context.Context) (context.Context, *Deferred) {
	d := &Deferred{}
	return context.WithValue(ctx, noWaitKey{}, d), d
}

// Answer is a decision a client gave for a NeedsApproval through a
// round trip.
type Answer struct {
	// State is NeedsApproval.State, as the client returned it.
	State string
	// Decision and Minutes as for Broker.Decide.
	Decision Decision
	Minutes  int
	// By names who answered ("<tenant>/<subject>", "mcp:<client>").
	By string
}

// WithAnswer returns a context under which the call re-issued after a
// round trip runs with the client's answer. The broker checks the state's
// signature, that it has not expired nor answered a call already, and
// that it was issued for this tenant, tool and arguments; otherwise the
// call is PERMISSION_DENIED. An answer applies to the calls that need
// an approval: nested calls of another tool still ask their own.
func WithAnswer(ctx context.Context, a Answer) context.Context {
	return context.WithValue(ctx, answerKey{}, &a)
}

// WithNotify returns a context under which a call that waits for a
// decision first calls fn with its request (on the calling goroutine;
// fn must not block), so that a front-end holding the connection (MCP
// elicitation, the terminal) can ask its user and answer with
// Broker.Decide.
func WithNotify(ctx context.Context, fn func(Request)) context.Context {
	return context.WithValue(ctx, notifyKey{}, fn)
}

// state is what a NeedsApproval's State says, signed.
type state struct {
	ID      string   `json:"id"`
	Tenant  string   `json:"tenant"`
	Tool    string   `json:"tool"`
	Digest  string   `json:"digest"`
	Rule    int      `json:"rule"`
	Risks   []string `json:"risks"`
	Expires int64    `json:"exp"`
}

func (b *Broker) sign(s state) string {
	body, _ := json.Marshal(s)
	m := hmac.New(sha256.New, b.key)
	m.Write([]byte("agenthost-approval\x00"))
	m.Write(body)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

var errState = errors.New("not a state this host issued")

// Open checks a State's signature and returns the request it was issued
// for (ID, tenant, tool, digest, rule, risks, expiry), so that a
// front-end can show it again; it does not check expiry or use.
func (b *Broker) Open(st string) (Request, error) {
	s, err := b.open(st)
	if err != nil {
		return Request{}, err
	}
	return Request{ID: s.ID, Tenant: s.Tenant, Tool: s.Tool, ArgumentsDigest: s.Digest, Rule: s.Rule, Risks: s.Risks, Expires: time.Unix(s.Expires, 0)}, nil
}

func (b *Broker) open(st string) (state, error) {
	body64, sig64, ok := strings.Cut(st, ".")
	if !ok || len(st) > 8192 {
		return state{}, errState
	}
	body, err1 := base64.RawURLEncoding.DecodeString(body64)
	sig, err2 := base64.RawURLEncoding.DecodeString(sig64)
	if err1 != nil || err2 != nil {
		return state{}, errState
	}
	m := hmac.New(sha256.New, b.key)
	m.Write([]byte("agenthost-approval\x00"))
	m.Write(body)
	if !hmac.Equal(sig, m.Sum(nil)) {
		return state{}, errState
	}
	var s state
	if json.Unmarshal(body, &s) != nil {
		return state{}, errState
	}
	return s, nil
}

// redeem checks an answer against the call and records it.
func (b *Broker) redeem(req Request, m Match, key string, a Answer, now time.Time) (Record, error) {
	deny := func(format string, args ...any) (Record, error) {
		return Record{Tenant: req.Tenant, Tool: req.Tool}, abi.Errorf(abi.CodePermissionDenied, "the approval presented for the call of %s "+format, append([]any{req.Tool}, args...)...)
	}
	s, err := b.open(a.State)
	switch {
	case err != nil:
		return deny("is %s", err.Error())
	case s.Tenant != req.Tenant || s.Tool != req.Tool || s.Digest != req.ArgumentsDigest:
		return deny("was issued for another call (tenant, tool or arguments differ)")
	case !now.Before(time.Unix(s.Expires, 0)):
		return deny("expired at %s; make the call again for a new one", time.Unix(s.Expires, 0).UTC().Format(time.RFC3339))
	}
	if _, err := ParseDecision(string(a.Decision)); err != nil {
		return deny("holds no decision: %s", err.Error())
	}
	minutes, err := b.minutes(a.Decision, a.Minutes)
	if err != nil {
		return deny("%s", err.Error())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, used := b.redeemed[s.ID]; used {
		// One answer, one call: "allow-once" means once.
		return deny("was used already; make the call again for a new one")
	}
	if len(b.redeemed) >= maxRedeemed {
		for id, exp := range b.redeemed {
			if !now.Before(exp) {
				delete(b.redeemed, id)
			}
		}
		if len(b.redeemed) >= maxRedeemed {
			return deny("cannot be recorded: too many approvals answered in the last hour; try again later")
		}
	}
	b.redeemed[s.ID] = time.Unix(s.Expires, 0)
	rec := Record{ID: s.ID, Tenant: req.Tenant, Tool: req.Tool, Decision: a.Decision, By: a.By, At: now}
	if a.Decision == Allow {
		rec.Until = now.Add(time.Duration(minutes) * time.Minute)
		if s.Rule == m.Rule {
			b.rememberLocked(key, rec)
		}
	}
	b.keepLocked(rec)
	req.ID = s.ID
	b.publish(Event{Kind: EventDecided, Request: req, Record: &rec})
	return rec, outcome(rec, 0, context.Background())
}
