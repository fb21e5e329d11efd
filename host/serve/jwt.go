package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// JWTConfig accepts JSON Web Tokens signed by keys of a JWKS (an identity
// provider's), alongside or instead of static tokens.
type JWTConfig struct {
	// JWKS is the URL of the key set (https, or http on loopback).
	JWKS string `json:"jwks"`
	// Issuer and Audience must match the token's iss and aud. As an
	// OAuth 2.1 protected resource (the MCP authorization spec), the
	// audience is this server's URL as clients reach its MCP endpoint
	// (https://host/mcp): /.well-known/oauth-protected-resource then
	// names it, with the issuer as its authorization server.
	Issuer   string `json:"issuer"`
	Audience string `json:"audience"`
	// AuthorizationServers are the issuers the protected-resource
	// metadata names (default: the issuer).
	AuthorizationServers []string `json:"authorizationServers,omitempty"`
	// TenantClaim names the claim holding the tenant (default "tenant");
	// scopes come from "scope" (space-separated) or "scopes" (an array).
	TenantClaim string `json:"tenantClaim,omitempty"`
}

// jwtAlgorithms are the signature algorithms accepted (no "none", no
// HMAC: a JWKS publishes public keys).
var jwtAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.ES256, jose.ES384, jose.EdDSA}

// jwtVerifier checks JWTs against a JWKS fetched on first use and again
// when a token names a key it does not know (at most every 30 s).
type jwtVerifier struct {
	cfg     JWTConfig
	client  *http.Client
	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time
	now     func() time.Time
}

func newJWTVerifier(cfg JWTConfig) (*jwtVerifier, error) {
	if cfg.JWKS == "" || cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("jwt: jwks, issuer and audience are required")
	}
	if err := checkJWKS(cfg.JWKS); err != nil {
		return nil, err
	}
	if cfg.TenantClaim == "" {
		cfg.TenantClaim = "tenant"
	}
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("jwt: too many redirects")
		}
		return checkJWKS(req.URL.String())
	}}
	return &jwtVerifier{cfg: cfg, client: client, now: time.Now}, nil
}

// checkJWKS accepts a key set address that is https, or http to a
// loopback host, without user info. It judges the parsed URL: a prefix
// check would take http://127.0.0.1.evil.example or
// http://localhost@evil.example for loopback.
func checkJWKS(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("jwt: jwks %q: %w", raw, err)
	}
	host := u.Hostname()
	switch {
	case u.User != nil:
		return fmt.Errorf("jwt: jwks %q: no user info in the address", raw)
	case host == "":
		return fmt.Errorf("jwt: jwks %q: want an absolute https URL (or http on loopback)", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && (host == "localhost" || isLoopbackIP(host)):
		return nil
	}
	return fmt.Errorf("jwt: jwks %q must be https (or http on loopback: 127.0.0.0/8, [::1], localhost)", raw)
}

func isLoopbackIP(host string) bool {
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}

func (v *jwtVerifier) fetch(ctx context.Context, force bool) (jose.JSONWebKeySet, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.keys.Keys) > 0 && (!force || v.now().Sub(v.fetched) < 30*time.Second) {
		return v.keys, nil
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKS, nil)
	resp, err := v.client.Do(req)
	if err != nil {
		return v.keys, fmt.Errorf("jwt: fetch the key set: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v.keys, fmt.Errorf("jwt: fetch the key set: %s", resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return v.keys, fmt.Errorf("jwt: the key set is not JSON: %w", err)
	}
	v.keys, v.fetched = set, v.now()
	return set, nil
}

// verify checks a token's signature, issuer, audience and validity times
// (one minute of leeway), and returns its tenant and scopes.
func (v *jwtVerifier) verify(ctx context.Context, raw string) (Principal, error) {
	tok, err := jwt.ParseSigned(raw, jwtAlgorithms)
	if err != nil || len(tok.Headers) != 1 {
		return Principal{}, errors.New("jwt: malformed")
	}
	kid := tok.Headers[0].KeyID
	set, err := v.fetch(ctx, false)
	if err != nil {
		return Principal{}, err
	}
	keys := set.Key(kid)
	if len(keys) == 0 {
		if set, err = v.fetch(ctx, true); err != nil {
			return Principal{}, err
		}
		if keys = set.Key(kid); len(keys) == 0 {
			return Principal{}, errors.New("jwt: unknown key")
		}
	}
	var std jwt.Claims
	var extra map[string]any
	if err := tok.Claims(keys[0].Key, &std, &extra); err != nil {
		return Principal{}, errors.New("jwt: bad signature")
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{v.cfg.Audience}, Time: v.now()}, time.Minute); err != nil {
		// The reason goes back to the client (WWW-Authenticate): said
		// plainly, with what was expected.
		switch {
		case errors.Is(err, jwt.ErrInvalidAudience):
			return Principal{}, fmt.Errorf("jwt: the token is for the audience %q, not this server (%q)", strings.Join(std.Audience, " "), v.cfg.Audience)
		case errors.Is(err, jwt.ErrInvalidIssuer):
			return Principal{}, fmt.Errorf("jwt: the token's issuer %q is not %q", std.Issuer, v.cfg.Issuer)
		case errors.Is(err, jwt.ErrExpired):
			return Principal{}, errors.New("jwt: the token has expired")
		case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
			return Principal{}, errors.New("jwt: the token is not valid yet")
		}
		return Principal{}, fmt.Errorf("jwt: %w", err)
	}
	if std.Expiry == nil {
		return Principal{}, errors.New("jwt: no expiry")
	}
	tenant, _ := extra[v.cfg.TenantClaim].(string)
	if tenant == "" {
		return Principal{}, fmt.Errorf("jwt: no %s claim", v.cfg.TenantClaim)
	}
	var scopes []string
	if s, ok := extra["scope"].(string); ok {
		scopes = strings.Fields(s)
	}
	if l, ok := extra["scopes"].([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				scopes = append(scopes, s)
			}
		}
	}
	return Principal{Tenant: tenant, Scopes: scopes, Subject: std.Subject}, nil
}
