package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
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
	headers := maps.Clone(cfg.Headers)
	if headers == nil {
		headers = map[string]string{}
	}
	for h, name := range cfg.HeadersFromEnv {
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return nil, fmt.Errorf("the header %s comes from the environment variable %s, which is not set", h, name)
		}
		headers[h] = v
	}
	rt := &remoteTransport{origin: o, headers: headers, guard: hops, originGuard: first, base: base}
	if cfg.OAuth != nil {
		secret, ok := os.LookupEnv(cfg.OAuth.ClientSecretEnv)
		if !ok || secret == "" {
			return nil, fmt.Errorf("oauth: the client secret comes from the environment variable %s, which is not set", cfg.OAuth.ClientSecretEnv)
		}
		// The discovery and token requests go through the same guard (no
		// configured header on them: the token endpoint is another
		// origin, and the MCP origin's metadata needs none).
		plain := &http.Client{Transport: &remoteTransport{origin: o, headers: nil, guard: hops, originGuard: first, base: base},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}
		rt.token = &oauthClient{cfg: *cfg.OAuth, secret: secret, resource: cfg.URL, client: plain}
	}
	return &http.Client{
		Transport: rt,
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
	token       *oauthClient // nil without oauth
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
	if t.token == nil {
		return t.base.RoundTrip(req)
	}
	tok, err := t.token.get(req.Context(), false)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || req.GetBody == nil && req.Body != nil {
		return resp, err
	}
	// The token was refused (expired early, revoked): one fresh token,
	// one retry.
	resp.Body.Close()
	if tok, err = t.token.get(req.Context(), true); err != nil {
		return nil, err
	}
	retry := req.Clone(req.Context())
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	retry.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(retry)
}

// oauthClient gets and keeps a remote server's bearer token by the OAuth
// 2.1 client credentials grant: the server's protected resource metadata
// (RFC 9728) names its authorization server, whose metadata (RFC 8414)
// names the token endpoint; the token is asked for this resource (RFC
// 8707) and kept until a minute before it expires.
type oauthClient struct {
	cfg      policy.MCPOAuth
	secret   string
	resource string
	client   *http.Client

	mu      sync.Mutex
	token   string
	expires time.Time
}

// get returns the token, asking for a new one when there is none, it is
// about to expire, or fresh is set.
func (o *oauthClient) get(ctx context.Context, fresh bool) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !fresh && o.token != "" && time.Now().Before(o.expires) {
		return o.token, nil
	}
	endpoint, err := o.tokenEndpoint(ctx)
	if err != nil {
		return "", fmt.Errorf("oauth: %w", err)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {o.resource}}
	if o.cfg.Scope != "" {
		form.Set("scope", o.cfg.Scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("oauth: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(o.cfg.ClientID), url.QueryEscape(o.secret))
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	status, err := o.getJSON(req, &tok)
	switch {
	case err != nil:
		return "", fmt.Errorf("oauth: the token endpoint %s: %w", endpoint, err)
	case status != http.StatusOK || tok.AccessToken == "":
		return "", fmt.Errorf("oauth: the token endpoint %s refused the client credentials of %s: %d %s %s", endpoint, o.cfg.ClientID, status, tok.Error, tok.Description)
	case !strings.EqualFold(tok.TokenType, "bearer"):
		return "", fmt.Errorf("oauth: the token endpoint %s gave a %q token, not a bearer token", endpoint, tok.TokenType)
	}
	life := time.Duration(tok.ExpiresIn) * time.Second
	if life <= 0 {
		life = 5 * time.Minute
	}
	o.token, o.expires = tok.AccessToken, time.Now().Add(life-min(time.Minute, life/2))
	return o.token, nil
}

// tokenEndpoint discovers the authorization server's token endpoint: the
// resource's metadata at the well-known path followed by the resource's
// path, else at the well-known path alone; then the authorization
// server's metadata (OAuth, else OpenID Connect).
func (o *oauthClient) tokenEndpoint(ctx context.Context) (string, error) {
	u, err := url.Parse(o.resource)
	if err != nil {
		return "", err
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	var tried []string
	for _, path := range []string{"/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/"), "/.well-known/oauth-protected-resource"} {
		at := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String()
		status, err := o.getURL(ctx, at, &meta)
		if err == nil && status == http.StatusOK && len(meta.AuthorizationServers) > 0 {
			break
		}
		tried = append(tried, fmt.Sprintf("%s (%s)", at, fetchFailure(status, err)))
	}
	if len(meta.AuthorizationServers) == 0 {
		return "", fmt.Errorf("no protected resource metadata naming an authorization server at %s", strings.Join(tried, " or "))
	}
	if meta.Resource != "" && meta.Resource != o.resource {
		// RFC 9728 section 3.3: metadata for another resource is not this one's.
		return "", fmt.Errorf("the protected resource metadata is for %q, not %q", meta.Resource, o.resource)
	}
	issuer := meta.AuthorizationServers[0]
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" {
		return "", fmt.Errorf("the authorization server %q is not a URL", issuer)
	}
	var as struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	tried = nil
	for _, wk := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		at := (&url.URL{Scheme: iu.Scheme, Host: iu.Host, Path: wk + strings.TrimSuffix(iu.Path, "/")}).String()
		status, err := o.getURL(ctx, at, &as)
		if err == nil && status == http.StatusOK && as.TokenEndpoint != "" {
			if as.Issuer != issuer {
				return "", fmt.Errorf("the authorization server's metadata names the issuer %q, not %q", as.Issuer, issuer)
			}
			return as.TokenEndpoint, nil
		}
		tried = append(tried, fmt.Sprintf("%s (%s)", at, fetchFailure(status, err)))
	}
	return "", fmt.Errorf("no authorization server metadata with a token endpoint for %s: %s", issuer, strings.Join(tried, "; "))
}

// fetchFailure says why a metadata document was not had.
func fetchFailure(status int, err error) string {
	switch {
	case err != nil && status == 0:
		return err.Error()
	case status != http.StatusOK:
		return http.StatusText(status)
	case err != nil:
		return "not JSON: " + err.Error()
	}
	return "incomplete"
}

// getURL GETs a JSON document.
func (o *oauthClient) getURL(ctx context.Context, at string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, at, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	return o.getJSON(req, v)
}

// getJSON sends req and decodes its answer (at most 1 MiB) into v.
func (o *oauthClient) getJSON(req *http.Request, v any) (int, error) {
	resp, err := o.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// CloseIdleConnections implements the optional interface http.Client
// uses, so that stopping a server closes its connections.
func (t *remoteTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }
