package natsexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/agenthost/agenthost/host/jobs/natsexec"
	"github.com/agenthost/agenthost/host/jobs/natsexec/queuetest"
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
		o    natsexec.ConnOptions
		want error
	}{
		{"an open server", natsexec.ConnOptions{URL: open}, natsexec.ErrOpenServer},
		{"an open server, credentials given", natsexec.ConnOptions{URL: open, User: "serve", Password: "pw"}, natsexec.ErrOpenServer},
		{"a server with no_auth_user", natsexec.ConnOptions{URL: noAuthUser, User: "anyone", Password: "pw"}, natsexec.ErrOpenServer},
		{"nats:// to a name", natsexec.ConnOptions{URL: "nats://queue.example.com:4222", InsecureTest: false}, natsexec.ErrPlainRemote},
		{"nats:// to a private address", natsexec.ConnOptions{URL: "nats://10.0.0.7:4222"}, natsexec.ErrPlainRemote},
		{"a host without a scheme", natsexec.ConnOptions{URL: "queue:4222"}, natsexec.ErrPlainRemote},
		{"ws:// beyond loopback", natsexec.ConnOptions{URL: "ws://queue:8080"}, natsexec.ErrPlainRemote},
		{"one remote in a list", natsexec.ConnOptions{URL: "nats://127.0.0.1:4222,nats://queue:4222"}, natsexec.ErrPlainRemote},
		{"wrong credentials", natsexec.ConnOptions{URL: ns.URL, CAFile: ns.CA, User: queuetest.Intruder, Password: "guess"}, natsexec.ErrRefused},
		{"no credentials", natsexec.ConnOptions{URL: ns.URL, CAFile: ns.CA}, natsexec.ErrRefused},
		{"two kinds of credentials", natsexec.ConnOptions{URL: ns.URL, CAFile: ns.CA, NKeyFile: ns.Serve, Token: "t"}, natsexec.ErrCredentials},
		{"a user without a password", natsexec.ConnOptions{URL: ns.URL, CAFile: ns.CA, User: "serve"}, natsexec.ErrCredentials},
		{"a certificate without its key", natsexec.ConnOptions{URL: ns.URL, CAFile: ns.CA, NKeyFile: ns.Serve, CertFile: ns.CA}, natsexec.ErrCredentials},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Timeout = queuetest.DialTimeout
			nc, err := natsexec.Connect(ctx, tc.o)
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
		if nc, err := natsexec.Connect(ctx, o); err == nil || !strings.Contains(err.Error(), "certificate") {
			if nc != nil {
				nc.Close()
			}
			t.Fatalf("connected to a server whose certificate is not trusted: %v", err)
		}
	})
	t.Run("plain text to a TLS server", func(t *testing.T) {
		o := ns.Role("serve")
		o.URL, o.CAFile = strings.Replace(ns.URL, "tls://", "nats://", 1), ""
		if nc, err := natsexec.Connect(ctx, o); err == nil {
			nc.Close()
			t.Fatal("connected without verifying the server's certificate")
		}
	})
	t.Run("InsecureTest", func(t *testing.T) {
		nc, err := natsexec.Connect(ctx, natsexec.ConnOptions{URL: open, InsecureTest: true, Timeout: queuetest.DialTimeout})
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
		nc, err := natsexec.Connect(ctx, ns.Role(role))
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		if !nc.TLSRequired() {
			t.Errorf("%s: not over TLS", role)
		}
		nc.Close()
	}
	nc, err := natsexec.Connect(ctx, natsexec.ConnOptions{URL: ns.URL, CAFile: ns.CA, User: queuetest.Intruder, Password: queuetest.IntruderPassword, Timeout: queuetest.DialTimeout})
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	plain := queuetest.StartWith(t, true)
	nc, err = natsexec.Connect(ctx, natsexec.ConnOptions{URL: plain.URL, User: queuetest.Intruder, Password: queuetest.IntruderPassword, Timeout: queuetest.DialTimeout})
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	tok := startServer(t, &server.Options{Authorization: "s3cret-token"})
	nc, err = natsexec.Connect(ctx, natsexec.ConnOptions{URL: tok, Token: "s3cret-token", Timeout: queuetest.DialTimeout})
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
		if got := natsexec.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
