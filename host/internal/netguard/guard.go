package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/hashicorp/go-hclog"
)

// Defaults of [Options].
const (
	// DefaultMaxResponseBytes caps one response body.
	DefaultMaxResponseBytes int64 = 16 << 20
	// DefaultTimeout caps one request: connect, redirects and body.
	DefaultTimeout = 30 * time.Second
	// MaxRedirects is the number of redirect hops followed.
	MaxRedirects = 5
)

// HostChecker answers the allowlist question for one destination. The
// effective grant (*policy.Grant) implements it; scheme is "http" or
// "https", host is lower-case without a trailing dot (an IP literal for
// address URLs, without brackets) and port is explicit.
type HostChecker interface {
	AllowsHost(scheme, host string, port int) bool
}

// Resolver looks up the addresses of a host name. *net.Resolver
// implements it; tests pass a fake.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// DialFunc dials an address ("ip:port") the Guard has already checked.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Options configure a [Guard]. The zero value means: private addresses
// refused, the system resolver, DefaultMaxResponseBytes, DefaultTimeout
// and no logging.
type Options struct {
	// AllowPrivate lets loopback, private, link-local and metadata
	// addresses through (the policy's allowPrivateAddresses).
	AllowPrivate bool
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// Dial connects to a checked "ip:port"; nil means a net.Dialer. It is
	// a seam for tests that route a fake public address to a loopback
	// server; it never sees an unchecked address.
	Dial DialFunc
	// MaxResponseBytes caps each response body; 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Timeout caps each request from dial to the last body byte,
	// redirects included; 0 means DefaultTimeout.
	Timeout time.Duration
	// Logger receives one line per refusal; nil means no logging.
	Logger hclog.Logger
}

// Guard applies one grant's network rules. It is safe for concurrent use.
// Create one per call when refusals must be attributed to that call.
type Guard struct {
	hosts HostChecker
	opts  Options
	log   hclog.Logger

	denials atomic.Int64
	mu      sync.Mutex
	last    *abi.Error
}

// New returns a Guard that allows what hosts allows under opts. A nil
// hosts allows no destination.
func New(hosts HostChecker, opts Options) *Guard {
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.Dial == nil {
		d := &net.Dialer{}
		opts.Dial = d.DialContext
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Guard{hosts: hosts, opts: opts, log: log.Named("netguard")}
}

// ForGrant returns a Guard for an effective grant: its host rules and its
// AllowPrivate flag, which overrides opts.AllowPrivate. A grant that is
// denied, or that cannot answer the allowlist question, allows nothing.
func ForGrant(g *policy.Grant, opts Options) *Guard {
	var hosts HostChecker
	if g != nil && !g.Denied {
		if hc, ok := any(g).(HostChecker); ok {
			hosts = hc
		}
		opts.AllowPrivate = g.AllowPrivate
	} else {
		opts.AllowPrivate = false
	}
	return New(hosts, opts)
}

// Denials returns the number of refused accesses so far.
func (g *Guard) Denials() int64 { return g.denials.Load() }

// LastDenial returns the most recent refusal, or nil.
func (g *Guard) LastDenial() *abi.Error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

// MaxResponseBytes returns the effective response body cap.
func (g *Guard) MaxResponseBytes() int64 { return g.opts.MaxResponseBytes }

// Timeout returns the effective per-request time cap.
func (g *Guard) Timeout() time.Duration { return g.opts.Timeout }

// deny records a refusal and returns it as a PERMISSION_DENIED error.
func (g *Guard) deny(host, reason string) *abi.Error {
	e := abi.Errorf(abi.CodePermissionDenied, "network access to %s denied: %s", host, reason).
		WithDetails(map[string]string{"host": host, "reason": reason})
	g.denials.Add(1)
	g.mu.Lock()
	g.last = e
	g.mu.Unlock()
	g.log.Warn("network access denied", "host", host, "reason", reason)
	return e
}

// normalizeHost lower-cases a host name and drops one trailing dot.
func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// defaultPort returns the port a scheme implies.
func defaultPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}

// check returns the display name of u's destination and why the
// allowlist refuses it ("" when allowed). It records nothing.
func (g *Guard) check(u *url.URL) (host, reason string) {
	if u == nil {
		return "(no URL)", "no URL"
	}
	scheme := strings.ToLower(u.Scheme)
	host = normalizeHost(u.Hostname())
	display := host
	if display == "" {
		display = "(no host)"
	}
	if scheme != "http" && scheme != "https" {
		return display, fmt.Sprintf("scheme %q is not allowed (only http and https)", u.Scheme)
	}
	if host == "" {
		return display, "the URL has no host"
	}
	port := defaultPort(scheme)
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return display, fmt.Sprintf("invalid port %q", p)
		}
		port = n
		display = net.JoinHostPort(host, p)
	}
	if g.hosts == nil || !g.hosts.AllowsHost(scheme, host, port) {
		return display, fmt.Sprintf("%s://%s is not in the allowlist", scheme, net.JoinHostPort(host, strconv.Itoa(port)))
	}
	return display, ""
}

// CheckURL checks u's scheme, host and port against the allowlist. A
// refusal is recorded and returned as a PERMISSION_DENIED *abi.Error
// naming the host. It does not resolve the host: the address rules are
// applied when dialing.
func (g *Guard) CheckURL(u *url.URL) error {
	host, reason := g.check(u)
	if reason != "" {
		return g.deny(host, reason)
	}
	return nil
}

// DialContext resolves addr's host once, checks every address it
// resolves to against the address rules (unless AllowPrivate), and dials
// the checked addresses in order until one answers. It never resolves
// again, so DNS rebinding cannot swap in another address. Only the "tcp",
// "tcp4" and "tcp6" networks are supported. DialContext does not consult
// the allowlist: use CheckURL, Client or ServeProxy for that.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("netguard dial %s: network %q is not supported", addr, network)
	}
	hostPart, portPart, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("netguard dial %s: %w", addr, err)
	}
	port, err := strconv.ParseUint(portPart, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("netguard dial %s: invalid port %q", addr, portPart)
	}
	host := normalizeHost(hostPart)
	var ips []netip.Addr
	literal := false
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
		literal = true
	} else {
		addrs, err := g.opts.Resolver.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("netguard resolve %s: %w", host, err)
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok {
				ips = append(ips, ip.Unmap().WithZone(a.Zone))
			}
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("netguard resolve %s: no addresses", host)
		}
	}
	if !g.opts.AllowPrivate {
		for _, ip := range ips {
			if class := addressClass(ip); class != "" {
				if literal {
					return nil, g.deny(host, class)
				}
				return nil, g.deny(host, fmt.Sprintf("resolves to %s %s", class, ip))
			}
		}
	}
	var lastErr error
	for _, ip := range ips {
		ip = ip.Unmap()
		if (network == "tcp4" && !ip.Is4()) || (network == "tcp6" && !ip.Is6()) {
			continue
		}
		conn, err := g.opts.Dial(ctx, network, netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("no %s address", network)
	}
	return nil, fmt.Errorf("netguard dial %s: %w", host, lastErr)
}

// Client returns an HTTP client that checks every request and redirect
// hop against the allowlist, dials through DialContext, follows at most
// MaxRedirects redirects, uses no proxy from the environment, and caps
// each response body (OUTPUT_LIMIT) and each request's total time. Map
// its errors with [Guard.Error].
func (g *Guard) Client() *http.Client {
	return &http.Client{
		Transport:     g.transport(),
		CheckRedirect: g.checkRedirect,
		Timeout:       g.opts.Timeout,
	}
}

// transport returns the guarded round tripper (no redirect handling).
func (g *Guard) transport() *guardTransport {
	return &guardTransport{g: g, base: &http.Transport{
		Proxy:                  nil,
		DialContext:            g.DialContext,
		DisableKeepAlives:      true,
		TLSHandshakeTimeout:    g.opts.Timeout,
		ResponseHeaderTimeout:  g.opts.Timeout,
		MaxResponseHeaderBytes: 1 << 20,
	}}
}

// checkRedirect re-checks each hop against the allowlist.
func (g *Guard) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	host, reason := g.check(req.URL)
	if reason != "" {
		from := via[len(via)-1].URL
		return g.deny(host, fmt.Sprintf("redirect from %s to %s: %s", from.Host, req.URL.Redacted(), reason))
	}
	return nil
}

// Error maps an error of a request made with Client (or the body read
// after it) to the *abi.Error to report: the refusal or cap it carries,
// TIMEOUT naming u's host for a timeout, or nil for other failures
// (connection refused, bad TLS, ...), which are the tool's problem.
func (g *Guard) Error(err error, u *url.URL) *abi.Error {
	if err == nil {
		return nil
	}
	var ae *abi.Error
	if errors.As(err, &ae) {
		return ae
	}
	if isTimeout(err) {
		host := "(no host)"
		if u != nil {
			host = u.Host
		}
		return abi.Errorf(abi.CodeTimeout, "request to %s exceeded the %s time cap", host, g.opts.Timeout).
			WithDetails(map[string]string{"host": host})
	}
	return nil
}

// isTimeout reports whether err is a deadline of some kind.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// guardTransport checks each request before it is sent and caps the body.
type guardTransport struct {
	g    *Guard
	base *http.Transport
}

// RoundTrip implements http.RoundTripper.
func (t *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.g.CheckURL(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	max := t.g.opts.MaxResponseBytes
	if resp.ContentLength > max {
		resp.Body.Close()
		return nil, tooLarge(req.URL.Host, max)
	}
	resp.Body = &cappedBody{rc: resp.Body, left: max, host: req.URL.Host, max: max}
	return resp, nil
}

// tooLarge is the OUTPUT_LIMIT error of a response over the cap.
func tooLarge(host string, max int64) *abi.Error {
	return abi.Errorf(abi.CodeOutputLimit, "response from %s exceeds the %d-byte cap", host, max).
		WithDetails(map[string]string{"host": host})
}

// cappedBody fails once more than max bytes have been read.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	max  int64
	host string
}

// Read implements io.Reader.
func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, tooLarge(b.host, b.max)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		b.rc.Close()
		return n + int(b.left), tooLarge(b.host, b.max)
	}
	return n, err
}

// Close implements io.Closer.
func (b *cappedBody) Close() error { return b.rc.Close() }
