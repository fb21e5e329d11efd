package serve

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Scopes a token may hold.
const (
	ScopeCall     = "call"     // tools, exec, MCP
	ScopeSessions = "sessions" // sessions, agent runs, history
	ScopeAdmin    = "admin"    // the tenant's own metrics
	// ScopeOperator sees /metrics whole: every tenant's series and the
	// process's. Its token needs no tenant.
	ScopeOperator = "operator"
)

// Principal is who a request is: a tenant and what it may do.
type Principal struct {
	Tenant string
	Scopes []string
	// Subject names the holder within the tenant, for the records of
	// what they decided (approvals): a JWT's sub claim, "token:" and the
	// first 12 hex digits of a token's SHA-256 (its auth-file entry, not
	// the secret), or "no-auth".
	Subject string
}

func (p Principal) may(scope string) bool { return slices.Contains(p.Scopes, scope) }

// AuthFile is the --auth file: tokens (by the SHA-256 of the token, never
// the token) and tenants.
type AuthFile struct {
	Tokens  []TokenEntry           `json:"tokens,omitempty"`
	JWT     *JWTConfig             `json:"jwt,omitempty"`
	Tenants map[string]TenantEntry `json:"tenants"`
}

// TokenEntry grants a token's holder a tenant and scopes. An operator
// token (scopes [operator]) has no tenant.
type TokenEntry struct {
	SHA256 string   `json:"sha256"`
	Tenant string   `json:"tenant"`
	Scopes []string `json:"scopes"`
}

// TenantEntry is a tenant's own policy and profile folders (relative to
// the auth file).
type TenantEntry struct {
	Policy   string   `json:"policy,omitempty"`
	Profiles []string `json:"profiles,omitempty"`
}

// LoadAuthFile reads and checks an --auth file (YAML or JSON).
func LoadAuthFile(path string) (*AuthFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth %s: %w", path, err)
	}
	var a AuthFile
	if err := yaml.UnmarshalStrict(b, &a); err != nil {
		return nil, fmt.Errorf("auth %s: %w", path, err)
	}
	if len(a.Tokens) == 0 && a.JWT == nil {
		return nil, fmt.Errorf("auth %s: no tokens and no jwt", path)
	}
	if a.JWT != nil {
		if _, err := newJWTVerifier(*a.JWT); err != nil {
			return nil, fmt.Errorf("auth %s: %w", path, err)
		}
	}
	seen := map[string]bool{}
	for i, t := range a.Tokens {
		if len(t.SHA256) != 64 || strings.ToLower(t.SHA256) != t.SHA256 {
			return nil, fmt.Errorf("auth %s: tokens[%d]: sha256 must be 64 lower-case hex digits (sha256sum of the token)", path, i)
		}
		if _, err := hex.DecodeString(t.SHA256); err != nil {
			return nil, fmt.Errorf("auth %s: tokens[%d]: sha256: %w", path, i, err)
		}
		if t.SHA256 == emptySHA256 {
			return nil, fmt.Errorf("auth %s: tokens[%d]: sha256 is the hash of the empty token (was the variable unset when it was hashed?); hash the real token", path, i)
		}
		if seen[t.SHA256] {
			return nil, fmt.Errorf("auth %s: tokens[%d]: the same token twice", path, i)
		}
		seen[t.SHA256] = true
		if len(t.Scopes) == 0 {
			return nil, fmt.Errorf("auth %s: tokens[%d]: no scopes (call, sessions, admin, operator)", path, i)
		}
		operatorOnly := true
		for _, s := range t.Scopes {
			if s != ScopeCall && s != ScopeSessions && s != ScopeAdmin && s != ScopeOperator {
				return nil, fmt.Errorf("auth %s: tokens[%d]: scope %q: want call, sessions, admin or operator", path, i, s)
			}
			operatorOnly = operatorOnly && s == ScopeOperator
		}
		if t.Tenant == "" && !operatorOnly {
			return nil, fmt.Errorf("auth %s: tokens[%d]: no tenant (only a token with the scope operator alone has none)", path, i)
		}
		if _, ok := a.Tenants[t.Tenant]; !ok && t.Tenant != "" {
			return nil, fmt.Errorf("auth %s: tokens[%d]: tenant %q is not under tenants", path, i, t.Tenant)
		}
	}
	for name := range a.Tenants {
		if !validID(name) {
			return nil, fmt.Errorf("auth %s: tenant %q: want letters, digits, '.', '_' and '-'", path, name)
		}
	}
	return &a, nil
}

// Authenticator maps bearer tokens to principals: static tokens by their
// SHA-256, and JWTs when configured.
type Authenticator struct {
	byHash map[string]Principal
	jwt    *jwtVerifier
	open   *Principal // NoAuth: everyone is this principal
}

// NewAuthenticatorFile builds the Authenticator of an auth file.
func NewAuthenticatorFile(a *AuthFile) (*Authenticator, error) {
	auth := NewAuthenticator(a.Tokens)
	if a.JWT != nil {
		v, err := newJWTVerifier(*a.JWT)
		if err != nil {
			return nil, err
		}
		auth.jwt = v
	}
	return auth, nil
}

// NewAuthenticator builds an Authenticator from the tokens of an auth
// file.
func NewAuthenticator(tokens []TokenEntry) *Authenticator {
	a := &Authenticator{byHash: map[string]Principal{}}
	for _, t := range tokens {
		a.byHash[t.SHA256] = Principal{Tenant: t.Tenant, Scopes: t.Scopes, Subject: "token:" + t.SHA256[:min(12, len(t.SHA256))]}
	}
	return a
}

// SingleToken makes a random token for one tenant with every scope,
// operator included (the loopback mode without --auth, where the holder
// is the operator); it returns the token to print once.
func SingleToken(tenant string) (*Authenticator, string) {
	b := make([]byte, 24)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(tok))
	return NewAuthenticator([]TokenEntry{{SHA256: hex.EncodeToString(sum[:]), Tenant: tenant, Scopes: []string{ScopeCall, ScopeSessions, ScopeAdmin, ScopeOperator}}}), tok
}

// NoAuth admits every request as the tenant with every scope, operator
// included, whatever its Authorization header holds (serve --no-auth, for
// tools that cannot send a token, such as the MCP conformance suite). It
// is for a loopback listener only: the caller checks the address.
func NoAuth(tenant string) *Authenticator {
	return &Authenticator{byHash: map[string]Principal{}, open: &Principal{Tenant: tenant, Scopes: []string{ScopeCall, ScopeSessions, ScopeAdmin, ScopeOperator}, Subject: "no-auth"}}
}

var errNoToken = errors.New("no bearer token")

// emptySHA256 is the SHA-256 of the empty string: what the hashing recipe
// gives for an unset variable. No token has it.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// principal returns the request's principal.
func (a *Authenticator) principal(r *http.Request) (Principal, error) {
	if a.open != nil {
		// Without tokens, a web page is the danger: one whose name was
		// rebound to 127.0.0.1 (its Host is its own name), or one that
		// posts across origins (its Origin is its own).
		if !loopbackHost(r.Host) {
			return Principal{}, fmt.Errorf("--no-auth: the Host %q is not a loopback name (a rebound DNS name?)", r.Host)
		}
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || !loopbackHost(u.Host) {
				return Principal{}, fmt.Errorf("--no-auth: the Origin %q is not on loopback", o)
			}
		}
		return *a.open, nil
	}
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	// Only ASCII space and tab are white space here (RFC 9110); a
	// Unicode space is part of the token, so a header of spaces is never
	// the empty token.
	tok = strings.Trim(tok, " \t")
	if !ok || tok == "" {
		return Principal{}, errNoToken
	}
	sum := sha256.Sum256([]byte(tok))
	if p, ok := a.byHash[hex.EncodeToString(sum[:])]; ok {
		return p, nil
	}
	if a.jwt != nil && strings.Count(tok, ".") == 2 {
		return a.jwt.verify(r.Context(), tok)
	}
	return Principal{}, errors.New("unknown token")
}

// loopbackHost reports whether a Host (with or without a port) is
// localhost or a loopback IP.
func loopbackHost(hostport string) bool {
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	return strings.EqualFold(h, "localhost") || isLoopbackIP(h)
}

// resourceMetadataPath is RFC 9728's well-known path of a protected
// resource's metadata.
const resourceMetadataPath = "/.well-known/oauth-protected-resource"

// ProtectedResource is the OAuth 2.0 protected resource metadata (RFC
// 9728) of a server that takes JWTs: what an MCP client reads to find
// the authorization server that issues its tokens.
type ProtectedResource struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// resource returns the protected resource metadata, and the URL it is
// served at for the resource (RFC 9728 section 3.1: the well-known path, then
// the resource's path); false when the server takes no JWTs or its
// audience is not a URL.
func (a *Authenticator) resource() (ProtectedResource, string, bool) {
	if a.jwt == nil {
		return ProtectedResource{}, "", false
	}
	u, err := url.Parse(a.jwt.cfg.Audience)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ProtectedResource{}, "", false
	}
	servers := a.jwt.cfg.AuthorizationServers
	if len(servers) == 0 {
		servers = []string{a.jwt.cfg.Issuer}
	}
	meta := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: resourceMetadataPath + strings.TrimSuffix(u.Path, "/")}).String()
	return ProtectedResource{Resource: a.jwt.cfg.Audience, AuthorizationServers: servers,
		ScopesSupported: []string{ScopeCall, ScopeSessions, ScopeAdmin}, BearerMethodsSupported: []string{"header"}, ResourceName: "agenthost"}, meta, true
}

// challenge is the WWW-Authenticate of a 401 for err (RFC 6750 section 3, the
// MCP authorization spec): the resource metadata's URL when the server
// takes JWTs, and the reason a token was refused (none when none was
// sent).
func (a *Authenticator) challenge(err error) string {
	return a.bearer(func(add func(k, v string)) {
		if !errors.Is(err, errNoToken) {
			add("error", "invalid_token")
			add("error_description", err.Error())
		}
	})
}

// scopeChallenge is the WWW-Authenticate of a 403 for a token without
// scope (RFC 6750 section 3.1, insufficient_scope).
func (a *Authenticator) scopeChallenge(scope string) string {
	return a.bearer(func(add func(k, v string)) {
		add("error", "insufficient_scope")
		add("scope", scope)
		add("error_description", "the token lacks the scope "+scope)
	})
}

// bearer builds a Bearer challenge: realm, resource_metadata when there
// is one, and the parameters params adds.
func (a *Authenticator) bearer(params func(add func(k, v string))) string {
	var b strings.Builder
	b.WriteString(`Bearer realm="agenthost"`)
	add := func(k, v string) {
		// A quoted-string holds no quote or backslash unescaped, and a
		// header no control character.
		v = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return ' '
			}
			return r
		}, v)
		v = strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v)
		fmt.Fprintf(&b, `, %s="%s"`, k, v)
	}
	if _, meta, ok := a.resource(); ok {
		add("resource_metadata", meta)
	}
	params(add)
	return b.String()
}

// wellKnown serves the protected resource metadata (RFC 9728) at the
// well-known path, alone or followed by the resource's path.
func (s *Server) wellKnown(w http.ResponseWriter, r *http.Request, _ *call) {
	meta, at, ok := s.o.Auth.resource()
	if !ok {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "this server takes no OAuth tokens (no jwt with a URL audience in its auth file)")
		return
	}
	u, _ := url.Parse(at)
	if r.URL.Path != resourceMetadataPath && r.URL.Path != u.Path {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "the protected resource's metadata is at "+at)
		return
	}
	writeJSON(w, http.StatusOK, meta)
}

func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return s != "." && s != ".."
}
