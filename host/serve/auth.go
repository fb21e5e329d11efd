package serve

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
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
		a.byHash[t.SHA256] = Principal{Tenant: t.Tenant, Scopes: t.Scopes}
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

var errNoToken = errors.New("no bearer token")

// emptySHA256 is the SHA-256 of the empty string: what the hashing recipe
// gives for an unset variable. No token has it.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// principal returns the request's principal.
func (a *Authenticator) principal(r *http.Request) (Principal, error) {
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
