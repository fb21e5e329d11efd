package extism_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner/extism"
)

// fakeDNS resolves only the names it holds; nothing reaches real DNS.
type fakeDNS map[string][]string

func (f fakeDNS) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	ips, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, s := range ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

// loopbackOnly dials loopback addresses only, so no test reaches another
// machine whatever the code under test does.
func loopbackOnly(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("test dialer: refusing non-loopback %s", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// newNetRunner returns a runner with the test resolver and dialer.
func newNetRunner(t *testing.T, opts extism.Options) *extism.Runner {
	t.Helper()
	opts.CacheDir = cacheDir
	r, err := extism.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	t.Cleanup(extism.SetNetwork(r, fakeDNS{"rebind.test": {"127.0.0.1"}, "rebind6.test": {"::1"}}, loopbackOnly))
	return r
}

// fetchGrant returns the probe's fetch export under hosts.
func fetchGrant(t *testing.T, rules []string, private bool) (*policy.Grant, func(*extism.Runner, string) (string, *abi.Error, []string)) {
	t.Helper()
	tool := toolFor(guests["probe"], "fetch")
	g := grantFor(tool)
	for _, s := range rules {
		h, err := policy.ParseHostRule(s)
		if err != nil {
			t.Fatal(err)
		}
		g.Hosts = append(g.Hosts, h)
	}
	g.AllowPrivate = private
	return g, func(r *extism.Runner, u string) (string, *abi.Error, []string) {
		res := run(t, prepare(t, r, tool, g), u)
		return string(res.Output), res.Err, res.Logs
	}
}

func testServer(t *testing.T) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	var self string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, "hello from loopback")
		case "/hop":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/to-forbidden":
			// localhost is the same server but not in the grant.
			http.Redirect(w, r, strings.Replace(self, "127.0.0.1", "localhost", 1)+"/ok", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/huge":
			chunk := make([]byte, 32<<10)
			for sent := 0; sent < 400<<20; sent += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/slow":
			w.WriteHeader(200)
			for i := 0; i < 500; i++ {
				if _, err := w.Write([]byte("x")); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-time.After(20 * time.Millisecond):
				case <-r.Context().Done():
					return
				case <-stop:
					return
				}
			}
		}
	}))
	self = srv.URL
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	return srv
}

func TestNetwork_allowed(t *testing.T) {
	srv := testServer(t)
	r := newNetRunner(t, extism.Options{})
	u, _ := url.Parse(srv.URL)
	tests := []struct {
		name    string
		rules   []string
		private bool
		url     string
	}{
		{"loopback literal", []string{"127.0.0.1"}, true, srv.URL + "/ok"},
		{"loopback with scheme and port", []string{"http://127.0.0.1:" + u.Port()}, true, srv.URL + "/ok"},
		{"redirect inside the grant", []string{"127.0.0.1"}, true, srv.URL + "/hop"},
		{"name resolving to loopback when private is allowed", []string{"rebind.test"}, true, "http://rebind.test:" + u.Port() + "/ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, fetch := fetchGrant(t, tc.rules, tc.private)
			out, err, logs := fetch(r, tc.url)
			if err != nil || out != "hello from loopback" {
				t.Fatalf("got %q, %v (logs %q)", out, err, logs)
			}
		})
	}
}

func TestNetwork_denied(t *testing.T) {
	srv := testServer(t)
	u, _ := url.Parse(srv.URL)
	port := u.Port()
	r := newNetRunner(t, extism.Options{MaxHTTPResponseBytes: 1 << 20, HTTPTimeout: 300 * time.Millisecond})
	tests := []struct {
		name    string
		rules   []string
		private bool
		url     string
		code    abi.Code
		host    string // the host the message names
		reason  string
	}{
		{"host outside the grant", []string{"api.example.com"}, false, "http://example.org/", abi.CodePermissionDenied, "example.org", "not in the allowlist"},
		{"scheme outside the grant", []string{"https://127.0.0.1"}, true, srv.URL + "/ok", abi.CodePermissionDenied, "127.0.0.1", "not in the allowlist"},
		{"127.0.0.1 without private", []string{"127.0.0.1"}, false, srv.URL + "/ok", abi.CodePermissionDenied, "127.0.0.1", "loopback address"},
		{"[::1] without private", []string{"[::1]"}, false, "http://[::1]:" + port + "/ok", abi.CodePermissionDenied, "::1", "loopback address"},
		{"metadata address", []string{"169.254.169.254"}, false, "http://169.254.169.254/latest/meta-data/", abi.CodePermissionDenied, "169.254.169.254", "metadata address"},
		{"allowed host redirects to a forbidden one", []string{"127.0.0.1"}, true, srv.URL + "/to-forbidden", abi.CodePermissionDenied, "localhost", "redirect from 127.0.0.1"},
		{"allowed host redirects to metadata", []string{"127.0.0.1"}, true, srv.URL + "/to-metadata", abi.CodePermissionDenied, "169.254.169.254", "not in the allowlist"},
		{"name resolving to loopback", []string{"rebind.test"}, false, "http://rebind.test:" + port + "/ok", abi.CodePermissionDenied, "rebind.test", "resolves to loopback address 127.0.0.1"},
		{"name resolving to ::1", []string{"rebind6.test"}, false, "http://rebind6.test:" + port + "/ok", abi.CodePermissionDenied, "rebind6.test", "resolves to loopback address ::1"},
		{"400 MB response", []string{"127.0.0.1"}, true, srv.URL + "/huge", abi.CodeOutputLimit, "127.0.0.1", "1048576-byte cap"},
		{"slow loris", []string{"127.0.0.1"}, true, srv.URL + "/slow", abi.CodeTimeout, "127.0.0.1", "time cap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, fetch := fetchGrant(t, tc.rules, tc.private)
			out, err, logs := fetch(r, tc.url)
			if err == nil || err.Code != tc.code || !strings.Contains(err.Message, tc.host) || !strings.Contains(err.Message, tc.reason) {
				t.Fatalf("got %q, %v; want %s naming %q with %q (logs %q)", out, err, tc.code, tc.host, tc.reason, logs)
			}
			if tc.code == abi.CodePermissionDenied && !strings.Contains(strings.Join(logs, "\n"), "agenthost: network access to "+tc.host) {
				t.Errorf("logs %q do not record the refusal", logs)
			}
			// The next call works.
			_, ok := fetchGrant(t, []string{"127.0.0.1"}, true)
			if out, err, logs := ok(r, srv.URL+"/ok"); err != nil || out != "hello from loopback" {
				t.Fatalf("next call: %q %v %q", out, err, logs)
			}
		})
	}
}
