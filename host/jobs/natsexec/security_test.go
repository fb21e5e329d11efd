package natsexec_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenthost/agenthost/host/jobs/natsexec"
	"github.com/agenthost/agenthost/host/jobs/natsexec/queuetest"
)

// These tests attack the queue as someone who can reach the NATS server
// but does not hold the shared key: the intruder, a user allowed
// everything in agenthost's account (a stolen serve or worker credential,
// or one granted too broadly), and the outsider and stranger, who are
// held back by the server's permissions. Each attack worked before calls
// and results were signed: the worker took the tenant from a header, and
// the dispatcher took the first message on a reply subject named by the
// call ID.

// waitFor polls cond for up to 15 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// capture subscribes nc to subject and returns the messages it gets.
func capture(t *testing.T, nc *nats.Conn, subject string) chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, 64)
	if _, err := nc.ChanSubscribe(subject, ch); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

func next(t *testing.T, ch chan *nats.Msg) *nats.Msg {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(15 * time.Second):
		t.Fatal("no message")
		return nil
	}
}

// copyMsg copies a message (headers included) for publishing again.
func copyMsg(m *nats.Msg) *nats.Msg {
	c := &nats.Msg{Subject: m.Subject, Data: append([]byte(nil), m.Data...), Header: nats.Header{}}
	for k, v := range m.Header {
		c.Header[k] = append([]string(nil), v...)
	}
	return c
}

func randomHex() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TestForgedCall publishes calls without the key: as tenant beta with
// only the headers the worker used to read (Agenthost-Tenant), with a
// made-up signature, and a real call for acme, seen as it passed, with
// its tenant header changed to beta. The worker runs none of them, drops
// each (terminated: the queue is empty after) and counts it; the
// signed call for acme ran as acme, once.
func TestForgedCall(t *testing.T) {
	ns := queuetest.Start(t)
	o := natsexec.Options{Key: queuetest.Key(t), Concurrency: 2}
	ctx := context.Background()
	d, err := natsexec.NewDispatcher(ctx, ns.Connect(t, "serve"), o)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tools{release: make(chan struct{}), started: make(chan string, 4)}
	w, _ := startWorker(t, ns, "A", tl, o)
	intruder := ns.User(t, queuetest.Intruder, queuetest.IntruderPassword, nil)
	js, err := jetstream.New(intruder)
	if err != nil {
		t.Fatal(err)
	}
	calls := capture(t, intruder, "agenthost.calls.>")
	env, err := d.Call(ctx, "acme", "app:tenant", json.RawMessage(`{}`))
	if err != nil || env.Error != nil || !strings.Contains(string(env.Output), `"tenant":"acme"`) {
		t.Fatalf("the signed call: %v %+v", err, env)
	}
	real := next(t, calls)

	headerOnly := nats.NewMsg("agenthost.calls.beta")
	id := randomHex()
	headerOnly.Header.Set("Nats-Msg-Id", id)
	headerOnly.Header.Set("Agenthost-Call-Id", id)
	headerOnly.Header.Set("Agenthost-Tenant", "beta")
	headerOnly.Header.Set("Agenthost-Tool", "app:tenant")
	headerOnly.Data = []byte(`{}`)

	madeUp := copyMsg(headerOnly)
	id = randomHex()
	madeUp.Header.Set("Nats-Msg-Id", id)
	madeUp.Header.Set("Agenthost-Call-Id", id)
	madeUp.Header.Set("Agenthost-Issued", real.Header.Get("Agenthost-Issued"))
	madeUp.Header.Set("Agenthost-Deadline", real.Header.Get("Agenthost-Deadline"))
	sig := make([]byte, 32)
	rand.Read(sig)
	madeUp.Header.Set("Agenthost-Signature", base64.RawURLEncoding.EncodeToString(sig))

	retargeted := copyMsg(real)
	retargeted.Subject = "agenthost.calls.beta"
	retargeted.Header.Set("Agenthost-Tenant", "beta")
	retargeted.Header.Set("Nats-Msg-Id", randomHex()) // past the server's duplicate check

	for _, tc := range []struct {
		name   string
		msg    *nats.Msg
		reason string
	}{
		{"a tenant header only", headerOnly, natsexec.ReasonUnsigned},
		{"a made-up signature", madeUp, natsexec.ReasonBadSignature},
		{"a signed call with its tenant header changed", retargeted, natsexec.ReasonBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := w.Rejected(natsexec.MessageCall, tc.reason)
			ack, err := js.PublishMsg(ctx, tc.msg)
			if err != nil || ack.Duplicate {
				t.Fatalf("publish: %v %+v", err, ack)
			}
			waitFor(t, "the drop", func() bool { return w.Rejected(natsexec.MessageCall, tc.reason) == before+1 })
			waitFor(t, "an empty queue", func() bool { n, err := d.Depth(ctx); return err == nil && n == 0 })
			if n := tl.ranAs("beta"); n != 0 {
				t.Fatalf("ran as beta %d times", n)
			}
		})
	}
	if n := tl.ranAs("acme"); n != 1 {
		t.Fatalf("ran as acme %d times", n)
	}
}

// TestForgedResult answers a running call on its reply subject before the
// worker does: an unsigned envelope, one with a made-up signature, and
// the real signed result of another call. The attacker is even granted
// the reply subject (which only the encrypted call names). The
// dispatcher drops and counts all three and returns the worker's result.
func TestForgedResult(t *testing.T) {
	ns := queuetest.Start(t)
	key := queuetest.Key(t)
	o := natsexec.Options{Key: key, Concurrency: 2}
	ctx := context.Background()
	d, err := natsexec.NewDispatcher(ctx, ns.Connect(t, "serve"), o)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tools{release: make(chan struct{}, 1), started: make(chan string, 4)}
	startWorker(t, ns, "A", tl, o)
	intruder := ns.User(t, queuetest.Intruder, queuetest.IntruderPassword, nil)
	calls := capture(t, intruder, "agenthost.calls.>")
	results := capture(t, intruder, "agenthost.results.*")
	if _, err := d.Call(ctx, "acme", "app:tenant", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	next(t, calls)
	other := next(t, results) // a real signed result, of another call

	res := make(chan string, 1)
	go func() {
		env, err := d.Call(ctx, "acme", "app:once", json.RawMessage(`{}`))
		b, _ := json.Marshal(env)
		if err != nil {
			b = []byte(err.Error())
		}
		res <- string(b)
	}()
	reply := natsexec.ReplySubject(key, next(t, calls))
	if !strings.HasPrefix(reply, "agenthost.results.") {
		t.Fatalf("reply subject %q", reply)
	}
	<-tl.started
	forged := []byte(`{"toolId":"app:once","status":"success","output":{"worker":"forged"}}`)
	unsigned := &nats.Msg{Subject: reply, Data: forged}
	madeUp := &nats.Msg{Subject: reply, Data: forged, Header: nats.Header{}}
	madeUp.Header.Set("Agenthost-Signature", base64.RawURLEncoding.EncodeToString(make([]byte, 32)))
	replayed := copyMsg(other)
	replayed.Subject = reply
	for _, m := range []*nats.Msg{unsigned, madeUp, replayed} {
		if err := intruder.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the drops", func() bool {
		return d.Rejected(natsexec.MessageResult, natsexec.ReasonUnsigned) == 1 && d.Rejected(natsexec.MessageResult, natsexec.ReasonBadSignature) == 2
	})
	select {
	case got := <-res:
		t.Fatalf("the dispatcher returned before the worker answered: %s", got)
	default:
	}
	tl.release <- struct{}{}
	got := <-res
	if !strings.Contains(got, `"worker":"A"`) || strings.Contains(got, "forged") {
		t.Fatalf("result %s", got)
	}
}

// TestReplayedCall publishes a signed call again after it ran: at once
// (the server drops it: its message ID is the call ID), with another
// message ID (the worker drops it: the ID is signed), after the server's
// duplicate window (the worker remembers the call), and after the call's
// deadline (expired). It ran once.
func TestReplayedCall(t *testing.T) {
	ns := queuetest.Start(t)
	const window = time.Second
	o := natsexec.Options{Key: queuetest.Key(t), Concurrency: 2, DuplicateWindow: window}
	ctx := context.Background()
	d, err := natsexec.NewDispatcher(ctx, ns.Connect(t, "serve"), o)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tools{release: make(chan struct{}), started: make(chan string, 4)}
	w, _ := startWorker(t, ns, "A", tl, o)
	intruder := ns.User(t, queuetest.Intruder, queuetest.IntruderPassword, nil)
	js, err := jetstream.New(intruder)
	if err != nil {
		t.Fatal(err)
	}
	calls := capture(t, intruder, "agenthost.calls.>")
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	if env, err := d.Call(cctx, "acme", "app:tenant", json.RawMessage(`{}`)); err != nil || env.Error != nil {
		t.Fatalf("the signed call: %v %+v", err, env)
	}
	published := time.Now() // the call was published before
	deadline, _ := cctx.Deadline()
	real := next(t, calls)
	publish := func(m *nats.Msg) *jetstream.PubAck {
		t.Helper()
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	// taken publishes m until the server takes it (its duplicate window,
	// purged by a timer, has passed).
	taken := func(m *nats.Msg) {
		t.Helper()
		for start := time.Now(); publish(copyMsg(m)).Duplicate; time.Sleep(50 * time.Millisecond) {
			if time.Since(start) > 15*time.Second {
				t.Fatal("the server's duplicate window did not pass")
			}
		}
	}
	replays := uint64(0)
	dropped := func(what string) {
		t.Helper()
		replays++
		waitFor(t, what, func() bool { return w.Rejected(natsexec.MessageCall, natsexec.ReasonReplayed) == replays })
	}

	if ack := publish(copyMsg(real)); !ack.Duplicate {
		// A slow machine: the window had passed; the worker drops it.
		if time.Since(start) < window {
			t.Fatal("the server took a copy within its duplicate window")
		}
		dropped("the copy dropped by the worker")
	}
	renamed := copyMsg(real)
	renamed.Header.Set("Nats-Msg-Id", randomHex())
	publish(renamed)
	waitFor(t, "the renamed copy dropped", func() bool { return w.Rejected(natsexec.MessageCall, natsexec.ReasonBadSignature) == 1 })

	time.Sleep(time.Until(published.Add(window)))
	taken(real)
	dropped("the copy dropped by the worker")

	time.Sleep(time.Until(deadline) + 100*time.Millisecond)
	taken(real)
	waitFor(t, "the expired copy dropped", func() bool { return w.Rejected(natsexec.MessageCall, natsexec.ReasonExpired) == 1 })
	if n := tl.ranAs("acme"); n != 1 {
		t.Fatalf("ran %d times", n)
	}
}

// TestForgedCancel cancels a running call without the key: the call goes
// on, and the drop is counted; the dispatcher's own cancellation stops
// it.
func TestForgedCancel(t *testing.T) {
	ns := queuetest.Start(t)
	o := natsexec.Options{Key: queuetest.Key(t), Concurrency: 2}
	ctx := context.Background()
	d, err := natsexec.NewDispatcher(ctx, ns.Connect(t, "serve"), o)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tools{release: make(chan struct{}), started: make(chan string, 4)}
	w, _ := startWorker(t, ns, "A", tl, o)
	intruder := ns.User(t, queuetest.Intruder, queuetest.IntruderPassword, nil)
	calls := capture(t, intruder, "agenthost.calls.>")
	cctx, cancel := context.WithCancel(ctx)
	res := make(chan string, 1)
	go func() {
		env, _ := d.Call(cctx, "acme", "app:once", json.RawMessage(`{}`))
		code := ""
		if env.Error != nil {
			code = string(env.Error.Code)
		}
		res <- code
	}()
	id := next(t, calls).Header.Get("Nats-Msg-Id")
	<-tl.started
	intruder.Publish("agenthost.cancel."+id, nil)
	intruder.Publish("agenthost.cancel."+id, make([]byte, 32))
	waitFor(t, "the drops", func() bool {
		return w.Rejected(natsexec.MessageCancel, natsexec.ReasonUnsigned) == 1 && w.Rejected(natsexec.MessageCancel, natsexec.ReasonBadSignature) == 1
	})
	select {
	case code := <-res:
		t.Fatalf("a forged cancellation ended the call: %q", code)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	if code := <-res; code != "CANCELLED" {
		t.Fatalf("after the dispatcher's cancellation: %q", code)
	}
}

// TestPermissions runs the deploy example's permissions: a user of the
// account without the queue's permissions (outsider) gets a permission
// error and no message on agenthost.calls.> or agenthost.results.*, and
// cannot reach the stream through the JetStream API; a user of another
// account (stranger) sees nothing of the account; serve's credential
// cannot read calls, a worker's cannot publish them. A user with every
// permission (intruder) sees the calls and results pass, but neither the
// arguments nor the output: they are encrypted.
func TestPermissions(t *testing.T) {
	ns := queuetest.Start(t)
	o := natsexec.Options{Key: queuetest.Key(t), Concurrency: 2}
	ctx := context.Background()
	d, err := natsexec.NewDispatcher(ctx, ns.Connect(t, "serve"), o)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tools{release: make(chan struct{}), started: make(chan string, 4)}
	startWorker(t, ns, "A", tl, o)

	outsiderErrs := make(chan error, 16)
	outsider := ns.User(t, queuetest.Outsider, queuetest.OutsiderPassword, outsiderErrs)
	outsiderSaw := make(chan *nats.Msg, 16)
	for _, subj := range []string{"agenthost.calls.>", "agenthost.results.*"} {
		if _, err := outsider.ChanSubscribe(subj, outsiderSaw); err != nil {
			t.Fatal(err)
		}
	}
	outsider.Flush()
	stranger := ns.User(t, queuetest.Stranger, queuetest.StrangerPassword, nil)
	strangerSaw := capture(t, stranger, ">")
	intruder := ns.User(t, queuetest.Intruder, queuetest.IntruderPassword, nil)
	intruderSaw := capture(t, intruder, "agenthost.>")

	secret := "s3cret-" + randomHex()
	env, err := d.Call(ctx, "acme", "app:tenant", json.RawMessage(`{"secret":"`+secret+`"}`))
	if err != nil || env.Error != nil || !strings.Contains(string(env.Output), secret) {
		t.Fatalf("the call: %v %+v", err, env)
	}

	for range 2 {
		select {
		case err := <-outsiderErrs:
			if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
				t.Fatalf("outsider: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("outsider: no permission error for its subscriptions")
		}
	}
	ojs, _ := jetstream.New(outsider)
	jctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := ojs.Stream(jctx, natsexec.Stream); err == nil {
		t.Fatal("outsider reached the stream")
	}

	serveErrs, workerErrs := make(chan error, 4), make(chan error, 4)
	snc, err := natsexec.Connect(ctx, ns.Role("serve"))
	if err != nil {
		t.Fatal(err)
	}
	defer snc.Close()
	snc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { serveErrs <- err })
	wnc, err := natsexec.Connect(ctx, ns.Role("worker"))
	if err != nil {
		t.Fatal(err)
	}
	defer wnc.Close()
	wnc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { workerErrs <- err })
	snc.Subscribe("agenthost.calls.>", func(*nats.Msg) {})
	wnc.Publish("agenthost.calls.acme", []byte(`{}`))
	for who, ch := range map[string]chan error{"serve subscribing to calls": serveErrs, "a worker publishing a call": workerErrs} {
		select {
		case err := <-ch:
			if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
				t.Fatalf("%s: %v", who, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: allowed", who)
		}
	}

	time.Sleep(300 * time.Millisecond)
	select {
	case m := <-outsiderSaw:
		t.Fatalf("outsider saw %s", m.Subject)
	default:
	}
	for len(strangerSaw) > 0 {
		if m := <-strangerSaw; strings.HasPrefix(m.Subject, "agenthost.") {
			t.Fatalf("stranger saw %s", m.Subject)
		}
	}
	saw := 0
	for len(intruderSaw) > 0 {
		m := <-intruderSaw
		saw++
		all := append([]byte(nil), m.Data...)
		for _, v := range m.Header {
			all = append(all, strings.Join(v, " ")...)
		}
		if bytes.Contains(all, []byte(secret)) || bytes.Contains(all, []byte("s3cret")) {
			t.Fatalf("intruder read the secret on %s", m.Subject)
		}
	}
	if saw < 2 {
		t.Fatalf("intruder saw %d messages, want the call and its result at least", saw)
	}
}
