package mcpclient

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/internal/netguard"
	"github.com/agenthost/agenthost/host/policy"
)

// remoteClient returns the HTTP client of a remote server. Every request,
// redirect hops included, goes through the network guard: the policy's
// network ceiling (allowHosts) and its address rules, checked on the
// addresses actually dialled. Redirects are followed only to allowed
// destinations, at most netguard.MaxRedirects of them, and the configured
// headers (secrets, often) are sent to the configured origin only. The
// one exemption from the address rules is the configured origin when the
// operator wrote a loopback or private address itself (an IP literal or
// localhost): every other name must resolve to public addresses unless
// the policy sets networkAccess.allowPrivateAddresses.
func (r *Runner) remoteClient(cfg policy.MCPServer) (*http.Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q is not an http(s) URL", cfg.URL)
	}
	ceiling := &policy.Grant{}
	for _, h := range r.o.Policy.NetworkAccess.AllowHosts {
		if rule, err := policy.ParseHostRule(h); err == nil {
			ceiling.Hosts = append(ceiling.Hosts, rule)
		}
	}
	private := r.o.Policy.NetworkAccess.AllowPrivateAddresses
	opts := netguard.Options{AllowPrivate: private, Logger: r.o.Logger}
	hops := netguard.New(ceiling, opts)
	opts.AllowPrivate = private || namedLocal(u.Hostname())
	first := netguard.New(ceiling, opts)
	o := originOf(u)
	base := &http.Transport{
		Proxy: nil, // never the environment's proxy: the guard dials
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == o.addr {
				return first.DialContext(ctx, network, addr)
			}
			return hops.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    30 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		IdleConnTimeout:        time.Minute,
	}
	return &http.Client{
		Transport: &remoteTransport{origin: o, headers: cfg.Headers, guard: hops, originGuard: first, base: base},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > netguard.MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", netguard.MaxRedirects)
			}
			if originOf(req.URL) == o {
				return nil
			}
			return hops.CheckURL(req.URL)
		},
	}, nil
}

// namedLocal reports whether host is a loopback or private address
// written out (an IP literal) or localhost.
func namedLocal(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && (ip.IsLoopback() || ip.IsPrivate())
}

// origin is a URL's scheme, host and port (the port made explicit), and
// the host:port the transport dials for it.
type origin struct {
	scheme, addr string
}

func originOf(u *url.URL) origin {
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return origin{scheme: strings.ToLower(u.Scheme), addr: net.JoinHostPort(strings.ToLower(u.Hostname()), port)}
}

// remoteTransport checks each request against the allowlist before it is
// sent and adds the configured headers to requests for the configured
// origin only.
type remoteTransport struct {
	origin      origin
	headers     map[string]string
	guard       *netguard.Guard // other hops
	originGuard *netguard.Guard
	base        *http.Transport
}

// RoundTrip implements http.RoundTripper.
func (t *remoteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if originOf(req.URL) != t.origin {
		if err := t.guard.CheckURL(req.URL); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		return t.base.RoundTrip(req)
	}
	// The origin passed the ceiling at load; checked again all the same,
	// as every hop is.
	if err := t.originGuard.CheckURL(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections implements the optional interface http.Client
// uses, so that stopping a server closes its connections.
func (t *remoteTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }
