package serve_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// oauthServer is an OAuth 2.1 authorization server of our own, on
// loopback: RFC 8414 metadata, a JWKS, and a token endpoint that grants
// client_credentials to one client, signing real ES256 JWTs for the
// resource (RFC 8707) and scopes asked for. Its clock can be turned back
// to issue an expired token.
type oauthServer struct {
	*httptest.Server
	key     *ecdsa.PrivateKey
	age     time.Duration // how long ago tokens were issued
	tenants map[string]string
}

func newOAuthServer(t *testing.T) *oauthServer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	a := &oauthServer{key: key, tenants: map[string]string{"acme-agent": "acme"}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": a.URL, "token_endpoint": a.URL + "/token", "jwks_uri": a.URL + "/jwks",
			"grant_types_supported": []string{"client_credentials"}, "token_endpoint_auth_methods_supported": []string{"client_secret_basic"}})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "as-1", Algorithm: "ES256", Use: "sig"}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		tenant := a.tenants[id]
		if !ok || tenant == "" || secret != "s3cret" || r.FormValue("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client"})
			return
		}
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: a.key}, (&jose.SignerOptions{}).WithHeader("kid", "as-1"))
		if err != nil {
			t.Error(err)
			return
		}
		iat := time.Now().Add(-a.age)
		tok, err := jwt.Signed(s).Claims(map[string]any{"iss": a.URL, "sub": id, "aud": r.FormValue("resource"), "iat": iat.Unix(),
			"exp": iat.Add(10 * time.Minute).Unix(), "scope": r.FormValue("scope"), "org": tenant}).Serialize()
		if err != nil {
			t.Error(err)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 600})
	})
	a.Server = httptest.NewServer(mux)
	t.Cleanup(a.Close)
	return a
}

// token asks the authorization server for a token, as an MCP client with
// client credentials does.
func (a *oauthServer) token(t *testing.T, tokenURL, resource, scope string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", tokenURL, strings.NewReader(url.Values{"grant_type": {"client_credentials"}, "resource": {resource}, "scope": {scope}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("acme-agent", "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %v", resp.StatusCode, err)
	}
	return tok.AccessToken
}

// TestOAuthProtectedResource walks the MCP authorization flow against
// serve as an OAuth 2.1 protected resource, with a local authorization
// server issuing real signed JWTs: the 401 points to the resource
// metadata, which names the authorization server, whose token for this
// resource opens /mcp; a token for another audience, an expired one, one
// of another issuer and one without the call scope are refused with the
// reason in WWW-Authenticate.
func TestOAuthProtectedResource(t *testing.T) {
	as := newOAuthServer(t)
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t))

	// The resource's URL is the audience: the listener comes first.
	srv := httptest.NewUnstartedServer(nil)
	resource := "http://" + srv.Listener.Addr().String() + "/mcp"
	auth, err := serve.NewAuthenticatorFile(&serve.AuthFile{JWT: &serve.JWTConfig{JWKS: as.URL + "/jwks", Issuer: as.URL, Audience: resource, TenantClaim: "org"}})
	if err != nil {
		t.Fatal(err)
	}
	api, err := serve.New(serve.Options{Tenants: map[string]*serve.Tenant{"acme": {Name: "acme", Host: h}}, Auth: auth, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	srv.Config.Handler = api.Handler()
	srv.Start()
	defer srv.Close()

	post := func(tok string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/list")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	getJSON := func(u string, v any) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", u, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}

	// Discovery, as a client does it: 401 → resource metadata →
	// authorization server metadata → token endpoint.
	resp, _ := post("")
	challenge := resp.Header.Get("WWW-Authenticate")
	m := regexp.MustCompile(`resource_metadata="([^"]+)"`).FindStringSubmatch(challenge)
	if resp.StatusCode != 401 || m == nil || strings.Contains(challenge, "error=") {
		t.Fatalf("no token: %d %q", resp.StatusCode, challenge)
	}
	if m[1] != srv.URL+"/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("resource_metadata %s", m[1])
	}
	var meta serve.ProtectedResource
	getJSON(m[1], &meta)
	var root serve.ProtectedResource
	getJSON(srv.URL+"/.well-known/oauth-protected-resource", &root)
	if meta.Resource != resource || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != as.URL || root.Resource != resource {
		t.Fatalf("metadata %+v / %+v", meta, root)
	}
	var asMeta struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	getJSON(meta.AuthorizationServers[0]+"/.well-known/oauth-authorization-server", &asMeta)

	tok := as.token(t, asMeta.TokenEndpoint, resource, "call")
	if resp, body := post(tok); resp.StatusCode != 200 || !strings.Contains(body, "core__echo") {
		t.Fatalf("with the token: %d %s", resp.StatusCode, body)
	}

	for _, tc := range []struct {
		name   string
		tok    func() string
		status int
		want   []string
	}{
		{"another audience", func() string { return as.token(t, asMeta.TokenEndpoint, "https://other.example/mcp", "call") }, 401,
			[]string{`error="invalid_token"`, `for the audience \"https://other.example/mcp\", not this server`}},
		{"expired", func() string {
			as.age = time.Hour
			defer func() { as.age = 0 }()
			return as.token(t, asMeta.TokenEndpoint, resource, "call")
		}, 401, []string{`error="invalid_token"`, "expired"}},
		{"another issuer", func() string {
			other := newOAuthServer(t)
			other.key = as.key // signed by a known key, but not the issuer's token
			return other.token(t, other.URL+"/token", resource, "call")
		}, 401, []string{`error="invalid_token"`, "issuer"}},
		{"without the call scope", func() string { return as.token(t, asMeta.TokenEndpoint, resource, "sessions") }, 403,
			[]string{`error="insufficient_scope"`, `scope="call"`}},
		{"not a token", func() string { return "garbage" }, 401, []string{`error="invalid_token"`, "unknown token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(tc.tok())
			challenge := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != tc.status || !strings.Contains(challenge, `resource_metadata="`+m[1]+`"`) {
				t.Fatalf("%d %q %s", resp.StatusCode, challenge, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(challenge, w) {
					t.Errorf("no %s in %q", w, challenge)
				}
			}
		})
	}
}
