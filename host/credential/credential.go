// Package credential mints the short-lived credentials a host hands a
// tool for one call (a manifest's securityContext.credentials): a token
// scoped to one tenant, one tool and one credential name, valid for a
// few minutes, given to the call in an environment variable only.
//
// The HMAC issuer signs its claims with a key only the host holds; any
// other Issuer can be plugged in (a cloud provider's token service, a
// vault). Tokens start with "ahc1." so that the host can find them in
// text to redact them and refuse them in arguments.
package credential

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// TTL bounds.
const (
	MinTTL     = 5 * time.Minute
	MaxTTL     = 10 * time.Minute
	DefaultTTL = 5 * time.Minute
	// Prefix starts every token of the HMAC issuer.
	Prefix = "ahc1."
)

// Request asks for one credential.
type Request struct {
	Tenant string
	Tool   string
	Name   string
	TTL    time.Duration
}

// Credential is a minted token and when it expires.
type Credential struct {
	Token   string
	Expires time.Time
}

// Issuer mints credentials.
type Issuer interface {
	Mint(ctx context.Context, r Request) (Credential, error)
}

// Claims are what an HMAC token says.
type Claims struct {
	Tenant  string `json:"ten"`
	Tool    string `json:"tool"`
	Name    string `json:"name"`
	Issued  int64  `json:"iat"`
	Expires int64  `json:"exp"`
	ID      string `json:"jti"`
}

// HMAC is an Issuer that signs claims with HMAC-SHA256.
type HMAC struct {
	key []byte
	now func() time.Time
}

// NewHMAC returns an HMAC issuer; the key must hold at least 32 bytes.
func NewHMAC(key []byte) (*HMAC, error) {
	if len(key) < 32 {
		return nil, fmt.Errorf("credential: the HMAC key has %d bytes; it needs at least 32", len(key))
	}
	return &HMAC{key: append([]byte(nil), key...), now: time.Now}, nil
}

// LoadHMAC reads an HMAC key file (raw bytes, or hex).
func LoadHMAC(path string) (*HMAC, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credential key: %w", err)
	}
	if h, err := hex.DecodeString(strings.TrimSpace(string(b))); err == nil {
		b = h
	}
	return NewHMAC(b)
}

// Mint implements Issuer: the TTL is clamped to [MinTTL, MaxTTL].
func (h *HMAC) Mint(_ context.Context, r Request) (Credential, error) {
	if r.Tenant == "" || r.Tool == "" || r.Name == "" {
		return Credential{}, errors.New("credential: tenant, tool and name are required")
	}
	ttl := min(max(r.TTL, MinTTL), MaxTTL)
	if r.TTL == 0 {
		ttl = DefaultTTL
	}
	now := h.now()
	id := make([]byte, 12)
	rand.Read(id)
	c := Claims{Tenant: r.Tenant, Tool: r.Tool, Name: r.Name, Issued: now.Unix(), Expires: now.Add(ttl).Unix(), ID: hex.EncodeToString(id)}
	body, _ := json.Marshal(c)
	enc := base64.RawURLEncoding
	payload := enc.EncodeToString(body)
	return Credential{Token: Prefix + payload + "." + enc.EncodeToString(h.mac(payload)), Expires: now.Add(ttl)}, nil
}

func (h *HMAC) mac(payload string) []byte {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(Prefix + payload))
	return m.Sum(nil)
}

// Verify checks a token: its MAC, its expiry, and (when not empty) its
// tenant and tool. It returns the claims.
func (h *HMAC) Verify(token, tenant, tool string) (Claims, error) {
	rest, ok := strings.CutPrefix(token, Prefix)
	if !ok {
		return Claims{}, errors.New("credential: not a token")
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok || len(token) > 4096 {
		return Claims{}, errors.New("credential: malformed token")
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	// A MAC of the wrong length is refused before one is computed: a
	// scan verifies every token-shaped string it meets.
	if err != nil || len(got) != sha256.Size || !hmac.Equal(got, h.mac(payload)) {
		return Claims{}, errors.New("credential: bad signature")
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Claims{}, errors.New("credential: malformed token")
	}
	var c Claims
	if err := json.Unmarshal(body, &c); err != nil {
		return Claims{}, errors.New("credential: malformed claims")
	}
	if h.now().Unix() >= c.Expires {
		return Claims{}, errors.New("credential: expired")
	}
	if tenant != "" && c.Tenant != tenant {
		return Claims{}, errors.New("credential: another tenant's")
	}
	if tool != "" && c.Tool != tool {
		return Claims{}, errors.New("credential: another tool's")
	}
	return c, nil
}

// EnvName is the environment variable a credential is handed in:
// AGENTHOST_CREDENTIAL_<NAME>, upper case, '-' as '_'.
func EnvName(name string) string {
	return "AGENTHOST_CREDENTIAL_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ValidName reports whether a credential name is valid: lower-case
// letters, digits, '_' and '-', starting with a letter, at most 32.
func ValidName(n string) bool {
	if n == "" || len(n) > 32 || n[0] < 'a' || n[0] > 'z' {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
