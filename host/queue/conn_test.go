package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/agenthost/agenthost/host/queue"
	"github.com/agenthost/agenthost/host/queue/queuetest"
)

// startServer runs an embedded nats-server with opts on a loopback port.
func startServer(t *testing.T, opts *server.Options) string {
	t.Helper()
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s.ClientURL()
}

// TestConnect_refused: a server without authorization is refused, with
// or without credentials given, and so is one that maps clients without
// credentials to a user (no_auth_user); plain text beyond loopback is
// refused before dialling; wrong credentials, a TLS server whose
// certificate is not trusted, and two kinds of credentials are errors.
// InsecureTest lets a test server without authorization in.
func TestConnect_refused(t *testing.T) {
	ctx := context.Background()
	open := startServer(t, &server.Options{})
	noAuthUser := startServer(t, &server.Options{Users: []*server.User{{Username: "anyone", Password: "pw"}}, NoAuthUser: "anyone"})
	ns := queuetest.Start(t)
	for _, tc := range []struct {
		name string
		o    queue.ConnOptions
		want error
	}{
		{"an open server", queue.ConnOptions{URL: open}, queue.ErrOpenServer},
		{"an open server, credentials given", queue.ConnOptions{URL: open, User: "serve", Password: "pw"}, queue.ErrOpenServer},
		{"a server with no_auth_user", queue.ConnOptions{URL: noAuthUser, User: "anyone", Password: "pw"}, queue.ErrOpenServer},
		{"nats:// to a name", queue.ConnOptions{URL: "nats://queue.example.com:4222", InsecureTest: false}, queue.ErrPlainRemote},
		{"nats:// to a private address", queue.ConnOptions{URL: "nats://10.0.0.7:4222"}, queue.ErrPlainRemote},
		{"a host without a scheme", queue.ConnOptions{URL: "queue:4222"}, queue.ErrPlainRemote},
		{"ws:// beyond loopback", queue.ConnOptions{URL: "ws://queue:8080"}, queue.ErrPlainRemote},
		{"one remote in a list", queue.ConnOptions{URL: "nats://127.0.0.1:4222,nats://queue:4222"}, queue.ErrPlainRemote},
		{"wrong credentials", queue.ConnOptions{URL: ns.URL, CAFile: ns.CA, User: queuetest.Intruder, Password: "guess"}, queue.ErrRefused},
		{"no credentials", queue.ConnOptions{URL: ns.URL, CAFile: ns.CA}, queue.ErrRefused},
		{"two kinds of credentials", queue.ConnOptions{URL: ns.URL, CAFile: ns.CA, NKeyFile: ns.Serve, Token: "t"}, queue.ErrCredentials},
		{"a user without a password", queue.ConnOptions{URL: ns.URL, CAFile: ns.CA, User: "serve"}, queue.ErrCredentials},
		{"a certificate without its key", queue.ConnOptions{URL: ns.URL, CAFile: ns.CA, NKeyFile: ns.Serve, CertFile: ns.CA}, queue.ErrCredentials},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Timeout = queuetest.DialTimeout
			nc, err := queue.Connect(ctx, tc.o)
			if err == nil {
				nc.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("TLS without the CA", func(t *testing.T) {
		o := ns.Role("serve")
		o.CAFile = ""
		if nc, err := queue.Connect(ctx, o); err == nil || !strings.Contains(err.Error(), "certificate") {
			if nc != nil {
				nc.Close()
			}
			t.Fatalf("connected to a server whose certificate is not trusted: %v", err)
		}
	})
	t.Run("plain text to a TLS server", func(t *testing.T) {
		o := ns.Role("serve")
		o.URL, o.CAFile = strings.Replace(ns.URL, "tls://", "nats://", 1), ""
		if nc, err := queue.Connect(ctx, o); err == nil {
			nc.Close()
			t.Fatal("connected without verifying the server's certificate")
		}
	})
	t.Run("InsecureTest", func(t *testing.T) {
		nc, err := queue.Connect(ctx, queue.ConnOptions{URL: open, InsecureTest: true, Timeout: queuetest.DialTimeout})
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
	})
}

// TestConnect_allowed: the roles of the deploy example connect over TLS
// with their nkeys; a user and password (TLS, then loopback in plain
// text) and a token do too.
func TestConnect_allowed(t *testing.T) {
	ctx := context.Background()
	ns := queuetest.Start(t)
	for _, role := range []string{"serve", "worker"} {
		nc, err := queue.Connect(ctx, ns.Role(role))
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		if !nc.TLSRequired() {
			t.Errorf("%s: not over TLS", role)
		}
		nc.Close()
	}
	nc, err := queue.Connect(ctx, queue.ConnOptions{URL: ns.URL, CAFile: ns.CA, User: queuetest.Intruder, Password: queuetest.IntruderPassword, Timeout: queuetest.DialTimeout})
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	plain := queuetest.StartWith(t, true)
	nc, err = queue.Connect(ctx, queue.ConnOptions{URL: plain.URL, User: queuetest.Intruder, Password: queuetest.IntruderPassword, Timeout: queuetest.DialTimeout})
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	tok := startServer(t, &server.Options{Authorization: "s3cret-token"})
	nc, err = queue.Connect(ctx, queue.ConnOptions{URL: tok, Token: "s3cret-token", Timeout: queuetest.DialTimeout})
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

// TestRedactURL: user information never reaches a message.
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"tls://serve:pw@queue:4222":                  "tls://REDACTED@queue:4222",
		"tls://tok@a:1,tls://b:2":                    "tls://REDACTED@a:1,tls://b:2",
		"nats://127.0.0.1:4222":                      "nats://127.0.0.1:4222",
		"u:p@host:4222":                              "REDACTED@host:4222",
		"tls://us%40er:p%40ss@queue:4222,nats://x:1": "tls://REDACTED@queue:4222,nats://x:1",
	} {
		if got := queue.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
