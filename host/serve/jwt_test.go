package serve_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// TestJWT pins JWTs checked against a JWKS on loopback: a valid token is
// its tenant with its scopes; an expired one, one for another audience
// or issuer, one signed by an unknown key, an unsigned one are 401; a
// tenant the server does not serve is 403.
func TestJWT(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	}))
	defer jwks.Close()
	sign := func(k *rsa.PrivateKey, kid string, claims map[string]any) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", kid))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(s).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	now := time.Now()
	claims := func(mod func(map[string]any)) map[string]any {
		c := map[string]any{"iss": "https://idp.example", "aud": "agenthost", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "tenant": "acme", "scope": "call sessions"}
		if mod != nil {
			mod(c)
		}
		return c
	}
	ctx := context.Background()
	st, _ := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	defer st.Close()
	h, _ := host.New(ctx, host.Options{CacheDir: hosttest.CacheDir(t)})
	defer h.Close(ctx)
	auth, err := serve.NewAuthenticatorFile(&serve.AuthFile{JWT: &serve.JWTConfig{JWKS: jwks.URL, Issuer: "https://idp.example", Audience: "agenthost"}})
	if err != nil {
		t.Fatal(err)
	}
	api, _ := serve.New(serve.Options{Tenants: map[string]*serve.Tenant{"acme": {Name: "acme", Host: h}}, Auth: auth, Store: st})
	defer api.Close()
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	get := func(tok string) int {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/tools", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	unsigned := strings.Join([]string{"eyJhbGciOiJub25lIn0", strings.Split(sign(key, "k1", claims(nil)), ".")[1], ""}, ".")
	for name, tc := range map[string]struct {
		tok  string
		want int
	}{
		"valid":          {sign(key, "k1", claims(nil)), 200},
		"expired":        {sign(key, "k1", claims(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() })), 401},
		"other audience": {sign(key, "k1", claims(func(c map[string]any) { c["aud"] = "someone-else" })), 401},
		"other issuer":   {sign(key, "k1", claims(func(c map[string]any) { c["iss"] = "https://evil.example" })), 401},
		"unknown key":    {sign(other, "k2", claims(nil)), 401},
		"forged with k1": {sign(other, "k1", claims(nil)), 401},
		"unsigned":       {unsigned, 401},
		"no expiry":      {sign(key, "k1", claims(func(c map[string]any) { delete(c, "exp") })), 401},
		"other tenant":   {sign(key, "k1", claims(func(c map[string]any) { c["tenant"] = "beta" })), 403},
		"no call scope":  {sign(key, "k1", claims(func(c map[string]any) { c["scope"] = "sessions" })), 403},
	} {
		if got := get(tc.tok); got != tc.want {
			t.Errorf("%s: %d, want %d", name, got, tc.want)
		}
	}
}
