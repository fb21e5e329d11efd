package netguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/netguard"
	"github.com/agenthost/agenthost/host/policy"
)

// hosts is a test allowlist: "*" allows everything, "*.x" any subdomain
// of x, "host" or "host:port" one destination.
type hosts []string

func (l hosts) AllowsHost(scheme, host string, port int) bool {
	for _, e := range l {
		switch {
		case e == "*":
			return true
		case strings.HasPrefix(e, "*.") && strings.HasSuffix(host, e[1:]):
			return true
		case e == host, e == net.JoinHostPort(host, strconv.Itoa(port)):
			return true
		}
	}
	return false
}

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

// loopbackDial dials loopback addresses and the fake public addresses in
// routes (mapped to a loopback listener); anything else fails, so a test
// can never reach another machine.
func loopbackDial(routes map[string]string) netguard.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := routes[addr]; ok {
			addr = to
		}
		host, _, _ := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("test dialer: refusing non-loopback %s", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

func hostPort(t *testing.T, srv *httptest.Server) (string, string) {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname(), u.Port()
}

func get(ctx context.Context, g *netguard.Guard, raw string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := g.Client().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func TestCheckURL(t *testing.T) {
	g := netguard.New(hosts{"api.example.com", "*.wiki.org", "svc.example.com:8443"}, netguard.Options{})
	tests := []struct {
		url    string
		denied string // substring of the message; "" = allowed
	}{
		{"https://api.example.com/v1", ""},
		{"http://API.Example.COM./v1", ""},
		{"https://en.wiki.org/x", ""},
		{"https://svc.example.com:8443/", ""},
		{"https://svc.example.com/", "svc.example.com denied"},
		{"https://evil.com/", "evil.com denied: https://evil.com:443 is not in the allowlist"},
		{"ftp://api.example.com/", `scheme "ftp" is not allowed`},
		{"file:///etc/passwd", "scheme"},
		{"http:///nohost", "no host"},
		{"https://api.example.com:99999/", "invalid port"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			before := g.Denials()
			err = g.CheckURL(u)
			if tc.denied == "" {
				if err != nil {
					t.Fatalf("CheckURL(%s) = %v, want allowed", tc.url, err)
				}
				return
			}
			if !errors.Is(err, abi.ErrPermissionDenied) || !strings.Contains(err.Error(), tc.denied) {
				t.Fatalf("CheckURL(%s) = %v, want PERMISSION_DENIED containing %q", tc.url, err, tc.denied)
			}
			if g.Denials() != before+1 || g.LastDenial() == nil {
				t.Fatalf("denial not recorded: %d -> %d", before, g.Denials())
			}
		})
	}
}

func TestNetwork_allowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hop" {
			http.Redirect(w, r, "/final", http.StatusFound)
			return
		}
		fmt.Fprint(w, "ok "+r.URL.Path)
	}))
	defer srv.Close()
	host, port := hostPort(t, srv)
	routes := map[string]string{"203.0.113.9:80": net.JoinHostPort(host, port)}
	tests := []struct {
		name string
		g    *netguard.Guard
		url  string
		want string
	}{
		{"loopback when private allowed", netguard.New(hosts{"127.0.0.1"}, netguard.Options{AllowPrivate: true, Dial: loopbackDial(nil)}), srv.URL + "/a", "ok /a"},
		{"redirect within the allowlist", netguard.New(hosts{"127.0.0.1"}, netguard.Options{AllowPrivate: true, Dial: loopbackDial(nil)}), srv.URL + "/hop", "ok /final"},
		{"public name", netguard.New(hosts{"public.test"}, netguard.Options{Resolver: fakeDNS{"public.test": {"203.0.113.9"}}, Dial: loopbackDial(routes)}), "http://public.test/p", "ok /p"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body, err := get(context.Background(), tc.g, tc.url)
			if err != nil || code != 200 || string(body) != tc.want {
				t.Fatalf("get = %d %q %v, want 200 %q", code, body, err, tc.want)
			}
			if tc.g.Denials() != 0 {
				t.Fatalf("denials = %d", tc.g.Denials())
			}
		})
	}
}

func TestNetwork_denied(t *testing.T) {
	var target string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-forbidden":
			http.Redirect(w, r, "http://forbidden.test/x", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-loopback":
			http.Redirect(w, r, target, http.StatusFound)
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	defer srv.Close()
	host, port := hostPort(t, srv)
	target = "http://" + net.JoinHostPort(host, port) + "/"
	routes := map[string]string{"203.0.113.9:80": net.JoinHostPort(host, port)}
	dns := fakeDNS{
		"public.test":  {"203.0.113.9"},
		"rebind.test":  {"127.0.0.1"},
		"mixed.test":   {"203.0.113.9", "10.0.0.7"},
		"mapped.test":  {"::ffff:169.254.169.254"},
		"ula.test":     {"fd12::1"},
		"cgnat.test":   {"100.64.0.1"},
		"v6loop.test":  {"::1"},
		"metadat.test": {"169.254.169.254"},
	}
	private := netguard.Options{Resolver: dns, Dial: loopbackDial(routes)}
	allowLoop := netguard.Options{Resolver: dns, Dial: loopbackDial(routes), AllowPrivate: true}
	tests := []struct {
		name  string
		allow hosts
		opts  netguard.Options
		url   string
		host  string // the host the message must name
		want  string // substring of the reason
	}{
		{"host outside the grant", hosts{"api.example.com"}, private, "http://example.org/", "example.org", "not in the allowlist"},
		{"127.0.0.1 literal", hosts{"*"}, private, "http://127.0.0.1:" + port + "/", "127.0.0.1", "loopback address"},
		{"[::1] literal", hosts{"*"}, private, "http://[::1]:" + port + "/", "::1", "loopback address"},
		{"metadata literal", hosts{"*"}, private, "http://169.254.169.254/latest/meta-data/", "169.254.169.254", "metadata address"},
		{"name resolving to loopback", hosts{"rebind.test"}, private, "http://rebind.test/", "rebind.test", "resolves to loopback address 127.0.0.1"},
		{"one of several answers private", hosts{"mixed.test"}, private, "http://mixed.test/", "mixed.test", "private address 10.0.0.7"},
		{"IPv4-mapped metadata", hosts{"mapped.test"}, private, "http://mapped.test/", "mapped.test", "metadata address"},
		{"unique local v6", hosts{"ula.test"}, private, "http://ula.test/", "ula.test", "private address"},
		{"CGNAT", hosts{"cgnat.test"}, private, "http://cgnat.test/", "cgnat.test", "CGNAT"},
		{"name resolving to ::1", hosts{"v6loop.test"}, private, "http://v6loop.test/", "v6loop.test", "loopback"},
		{"allowed host redirects to a forbidden one", hosts{"127.0.0.1"}, allowLoop, srv.URL + "/to-forbidden", "forbidden.test", "redirect from"},
		{"public host redirects to metadata", hosts{"*"}, private, "http://public.test/to-metadata", "169.254.169.254", "metadata address"},
		{"public host redirects to loopback", hosts{"*"}, private, "http://public.test/to-loopback", "127.0.0.1", "loopback address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := netguard.New(tc.allow, tc.opts)
			_, _, err := get(context.Background(), g, tc.url)
			ae := g.Error(err, nil)
			if ae == nil || ae.Code != abi.CodePermissionDenied {
				t.Fatalf("err = %v, want PERMISSION_DENIED", err)
			}
			if !strings.Contains(ae.Message, tc.host+" denied") || !strings.Contains(ae.Message, tc.want) {
				t.Fatalf("message %q does not name %q with %q", ae.Message, tc.host, tc.want)
			}
			if g.Denials() != 1 {
				t.Fatalf("denials = %d, want 1", g.Denials())
			}
		})
	}
	t.Run("the next call works", func(t *testing.T) {
		g := netguard.New(hosts{"127.0.0.1"}, allowLoop)
		if _, _, err := get(context.Background(), g, srv.URL+"/to-forbidden"); err == nil {
			t.Fatal("redirect to forbidden host succeeded")
		}
		if code, body, err := get(context.Background(), g, srv.URL+"/"); err != nil || code != 200 || string(body) != "ok" {
			t.Fatalf("next call = %d %q %v", code, body, err)
		}
	})
}

func TestNetwork_redirectLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		if n > 0 {
			http.Redirect(w, r, "/"+strconv.Itoa(n-1), http.StatusFound)
			return
		}
		fmt.Fprint(w, "done")
	}))
	defer srv.Close()
	tests := []struct {
		hops int
		ok   bool
	}{{5, true}, {6, false}}
	for _, tc := range tests {
		t.Run(strconv.Itoa(tc.hops), func(t *testing.T) {
			g := netguard.New(hosts{"127.0.0.1"}, netguard.Options{AllowPrivate: true, Dial: loopbackDial(nil)})
			_, body, err := get(context.Background(), g, srv.URL+"/"+strconv.Itoa(tc.hops))
			if tc.ok && (err != nil || string(body) != "done") {
				t.Fatalf("%d hops: %q %v", tc.hops, body, err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "stopped after 5 redirects")) {
				t.Fatalf("%d hops: err = %v", tc.hops, err)
			}
		})
	}
}

// bigServer streams total bytes without holding them in memory, stopping
// when the client goes away.
func bigServer(total int64, declare bool) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if declare {
			w.Header().Set("Content-Length", strconv.FormatInt(total, 10))
		}
		chunk := make([]byte, 32<<10)
		for sent := int64(0); sent < total; sent += int64(len(chunk)) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
}

func TestNetwork_caps(t *testing.T) {
	big := bigServer(400<<20, false)
	defer big.Close()
	declared := bigServer(400<<20, true)
	defer declared.Close()
	stop := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for i := 0; i < 500; i++ { // at most 10 s, then give up
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
	}))
	defer slow.Close()
	defer close(stop)
	tests := []struct {
		name string
		url  string
		code abi.Code
	}{
		{"several hundred MB streamed", big.URL, abi.CodeOutputLimit},
		{"several hundred MB declared", declared.URL, abi.CodeOutputLimit},
		{"slow loris", slow.URL, abi.CodeTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := netguard.New(hosts{"127.0.0.1"}, netguard.Options{
				AllowPrivate: true, Dial: loopbackDial(nil), MaxResponseBytes: 1 << 20, Timeout: 300 * time.Millisecond,
			})
			u, _ := url.Parse(tc.url)
			_, body, err := get(context.Background(), g, tc.url)
			ae := g.Error(err, u)
			if ae == nil || ae.Code != tc.code || !strings.Contains(ae.Message, u.Host) {
				t.Fatalf("err = %v (%v), want %s naming %s", err, ae, tc.code, u.Host)
			}
			if int64(len(body)) > g.MaxResponseBytes() {
				t.Fatalf("read %d bytes past the cap", len(body))
			}
		})
	}
}

func TestForGrant(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	rule, err := policy.ParseHostRule("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	opts := netguard.Options{Dial: loopbackDial(nil), AllowPrivate: true}
	tests := []struct {
		name   string
		grant  *policy.Grant
		reason string // "" = allowed
	}{
		{"granted with private addresses", &policy.Grant{Hosts: []policy.HostRule{rule}, AllowPrivate: true}, ""},
		{"AllowPrivate comes from the grant, not the options", &policy.Grant{Hosts: []policy.HostRule{rule}}, "loopback address"},
		{"no host rules", &policy.Grant{AllowPrivate: true}, "not in the allowlist"},
		{"denied tool", &policy.Grant{Hosts: []policy.HostRule{rule}, AllowPrivate: true, Denied: true}, "not in the allowlist"},
		{"nil grant", nil, "not in the allowlist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := netguard.ForGrant(tc.grant, opts)
			_, body, err := get(context.Background(), g, srv.URL)
			if tc.reason == "" {
				if err != nil || string(body) != "ok" {
					t.Fatalf("got %q, %v", body, err)
				}
				return
			}
			if ae := g.Error(err, nil); ae == nil || ae.Code != abi.CodePermissionDenied || !strings.Contains(ae.Message, tc.reason) {
				t.Fatalf("err = %v, want PERMISSION_DENIED with %q", err, tc.reason)
			}
		})
	}
}
