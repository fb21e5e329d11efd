package serve_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// authServer serves one tenant (acme, no tools) behind auth.
func authServer(t *testing.T, auth *serve.Authenticator) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(ctx, host.Options{CacheDir: hosttest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	api, err := serve.New(serve.Options{Tenants: map[string]*serve.Tenant{"acme": {Name: "acme", Host: h}}, Auth: auth, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		api.Close()
		st.Close()
		h.Close(ctx)
	})
	return srv
}

// TestAuthEmptyToken pins the empty token: its SHA-256 (what hashing an
// unset variable gives) is refused in an auth file, and "Bearer" followed
// by nothing but spaces, ASCII or Unicode, is no token even where that
// hash is listed. Only ASCII spaces and tabs around a token are trimmed.
func TestAuthEmptyToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.yaml")
	doc := "tokens:\n  - {sha256: " + hash("") + ", tenant: acme, scopes: [call]}\ntenants:\n  acme: {}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := serve.LoadAuthFile(path); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an auth file with the empty token's hash: %v", err)
	}
	srv := authServer(t, serve.NewAuthenticator([]serve.TokenEntry{
		{SHA256: hash(""), Tenant: "acme", Scopes: []string{"call"}},
		{SHA256: hash("acme-token"), Tenant: "acme", Scopes: []string{"call"}},
	}))
	for _, tc := range []struct {
		name, header string
		want         int
	}{
		{"ideographic space", "Bearer \u3000", 401},
		{"no-break space", "Bearer \u00a0", 401},
		{"next line", "Bearer \u0085", 401},
		{"em spaces", "Bearer \u2003\u2003", 401},
		{"tab", "Bearer \t", 401},
		{"nothing", "Bearer ", 401},
		{"token", "Bearer acme-token", 200},
		{"token in ASCII spaces and tabs", "Bearer \t acme-token \t", 200},
		{"token in a Unicode space", "Bearer \u00a0acme-token", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", srv.URL+"/v1/tools", nil)
			req.Header.Set("Authorization", tc.header)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("%q: %d, want %d", tc.header, resp.StatusCode, tc.want)
			}
		})
	}
}

// TestJWKSURL pins the key set's address: https anywhere, plain http
// only to a loopback host, judged on the parsed URL (a host name that
// starts like a loopback address, or user info before another host, is
// not loopback).
func TestJWKSURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://idp.example/.well-known/jwks.json", true},
		{"http://127.0.0.1:8080/jwks", true},
		{"http://127.1.2.3/jwks", true},
		{"http://localhost:9000/jwks", true},
		{"http://[::1]:9000/jwks", true},
		{"HTTP://127.0.0.1/jwks", true},
		{"http://127.0.0.1.evil.example/jwks", false},
		{"http://127.0.0.1@evil.example/jwks", false},
		{"http://localhost@evil.example/jwks", false},
		{"http://localhost.evil.example/jwks", false},
		{"http://[::1].evil.example/jwks", false},
		{"http://evil.example/jwks", false},
		{"http://10.0.0.1/jwks", false},
		{"https://user:pass@idp.example/jwks", false},
		{"https:///jwks", false},
		{"ftp://127.0.0.1/jwks", false},
		{"//127.0.0.1/jwks", false},
		{"127.0.0.1/jwks", false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := serve.NewAuthenticatorFile(&serve.AuthFile{JWT: &serve.JWTConfig{JWKS: tc.url, Issuer: "https://idp.example", Audience: "agenthost"}})
			if (err == nil) != tc.ok {
				t.Fatalf("%s: %v, want ok=%v", tc.url, err, tc.ok)
			}
		})
	}
}

// TestJWKSRedirect pins redirects of the key set's address: each hop is
// held to the same rule as the address, so a loopback key set that
// redirects to an address the rule refuses (here one with user info)
// yields no keys and its tokens are refused.
func TestJWKSRedirect(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	var srvURL string
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, strings.Replace(srvURL, "http://", "http://someone@", 1)+"/keys", http.StatusFound)
		case "/elsewhere":
			http.Redirect(w, r, "/keys", http.StatusFound)
		default:
			json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
		}
	}))
	defer jwks.Close()
	srvURL = jwks.URL
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(map[string]any{"iss": "https://idp.example", "aud": "agenthost", "exp": time.Now().Add(time.Hour).Unix(), "tenant": "acme", "scope": "call"}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want int
	}{{"/elsewhere", 200}, {"/moved", 401}} {
		t.Run(tc.path, func(t *testing.T) {
			auth, err := serve.NewAuthenticatorFile(&serve.AuthFile{JWT: &serve.JWTConfig{JWKS: jwks.URL + tc.path, Issuer: "https://idp.example", Audience: "agenthost"}})
			if err != nil {
				t.Fatal(err)
			}
			srv := authServer(t, auth)
			req, _ := http.NewRequest("GET", srv.URL+"/v1/tools", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("%d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// TestTrailingJSON pins request bodies: one JSON value, then nothing but
// white space; anything after it is a 400 with a structured error.
func TestTrailingJSON(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "db"))
	const js = "application/json"
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"call, second object", "/v1/tools/core:echo/call", `{"a":1}{"b":2}`, 400, `"code":"INVALID_JSON"`},
		{"call, second value", "/v1/tools/core:echo/call", `{"a":1} 2`, 400, `"code":"INVALID_JSON"`},
		{"call, garbage", "/v1/tools/core:echo/call", `{"a":1}x`, 400, `"code":"INVALID_JSON"`},
		{"exec, second object", "/v1/exec", `{"output":"x"} {"output":"y"}`, 400, `"code":"INVALID_JSON"`},
		{"session, array after", "/v1/sessions", `{"profile":"counter"}[]`, 400, `"code":"INVALID_JSON"`},
		{"call, trailing white space", "/v1/tools/core:echo/call", "{\"a\":1} \n\t", 200, `"status":"success"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.do(t, "POST", tc.path, "acme-token", js, tc.body)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s; want %d with %s", status, body, tc.status, tc.want)
			}
		})
	}
}

// TestMetricsUnknownTools pins the tool label: loaded tools by their ID,
// any other ID a client sends (direct call, exec, a version that does not
// exist) folded into "other", so made-up IDs cannot grow the metrics.
func TestMetricsUnknownTools(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "db"))
	for i := range 20 {
		f.do(t, "POST", fmt.Sprintf("/v1/tools/made-up:tool%d/call", i), "acme-token", "application/json", `{}`)
	}
	f.do(t, "POST", "/v1/exec", "acme-token", "application/json", `{"output":"<ACTION><made-up:exec><a>1</a></made-up:exec></ACTION>"}`)
	f.do(t, "POST", "/v1/tools/core:echo@9.9.9/call", "acme-token", "application/json", `{}`)
	f.do(t, "POST", "/v1/tools/core:echo@1.0.0/call", "acme-token", "application/json", `{}`)
	status, body := f.do(t, "GET", "/metrics", "admin-token", "", "")
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	for _, bad := range []string{"made-up", "9.9.9", "core:echo@"} {
		if strings.Contains(body, bad) {
			t.Errorf("the metrics hold %q", bad)
		}
	}
	for _, want := range []string{`agenthost_tool_calls_total{code="UNKNOWN_TOOL",status="failure",tenant="acme",tool="other"}`,
		`agenthost_tool_calls_total{code="",status="success",tenant="acme",tool="core:echo"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("the metrics lack %s", want)
		}
	}
}

// TestMetricsScope pins who sees which metrics: a tenant's admin token
// sees its own tenant's series only (no other tenant's, nothing of the
// process); the operator scope sees everything.
func TestMetricsScope(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "db"))
	f.do(t, "POST", "/v1/tools/core:echo/call", "acme-token", "application/json", `{}`)
	f.do(t, "POST", "/v1/tools/text:stats/call", "beta-token", "application/json", `{"text":"a b"}`)
	for _, tc := range []struct {
		token     string
		want, not []string
	}{
		{"admin-token", []string{`tenant="acme",tool="core:echo"`}, []string{`tenant="beta"`, "go_goroutines", "process_", "agenthost_http_requests_total"}},
		{"beta-admin-token", []string{`tenant="beta",tool="text:stats"`}, []string{`tenant="acme"`, "go_goroutines", "agenthost_http_requests_total"}},
		{"operator-token", []string{`tenant="acme",tool="core:echo"`, `tenant="beta",tool="text:stats"`, "go_goroutines", "agenthost_http_requests_total"}, nil},
	} {
		t.Run(tc.token, func(t *testing.T) {
			status, body := f.do(t, "GET", "/metrics", tc.token, "", "")
			if status != 200 {
				t.Fatalf("%d %s", status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("lacks %s", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(body, n) {
					t.Errorf("holds %s", n)
				}
			}
		})
	}
	// The operator scope opens /metrics only.
	if status, _ := f.do(t, "GET", "/v1/tools", "operator-token", "", ""); status != 403 {
		t.Errorf("the operator token lists a tenant's tools: %d", status)
	}
}

// TestThreadIDsPerTenant pins thread and session IDs as a namespace per
// tenant: a thread ID another tenant uses answers exactly as an unused
// one (and is a separate session), and clients creating the same thread
// at the same moment all get it.
func TestThreadIDsPerTenant(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "db"))
	const js = "application/json"
	runOn := func(token, thread, message string) (int, string) {
		return f.do(t, "POST", "/v1/agents/counter/runs", token, js,
			`{"threadId":"`+thread+`","messages":[{"id":"1","role":"user","content":"`+message+`"}]}`)
	}
	if status, body := runOn("acme-token", "same-id", "acme asks"); status != 200 || !strings.Contains(body, "RUN_FINISHED") {
		t.Fatalf("acme's run: %d %s", status, body)
	}
	// Another tenant's thread and an unused one answer the same.
	for _, thread := range []string{"same-id", "unused"} {
		if status, body := f.do(t, "GET", "/v1/sessions/"+thread+"/history", "beta-token", "", ""); status != 404 || !strings.Contains(body, `"NOT_FOUND"`) {
			t.Errorf("beta reads %s: %d %s", thread, status, body)
		}
	}
	for _, thread := range []string{"same-id", "unused"} {
		if status, body := runOn("beta-token", thread, "beta asks"); status != 200 || !strings.Contains(body, "RUN_FINISHED") {
			t.Errorf("beta runs on %s: %d %s", thread, status, body)
		}
	}
	_, acme := f.do(t, "GET", "/v1/sessions/same-id/history", "acme-token", "", "")
	_, beta := f.do(t, "GET", "/v1/sessions/same-id/history", "beta-token", "", "")
	if !strings.Contains(acme, "acme asks") || strings.Contains(acme, "beta asks") || !strings.Contains(beta, "beta asks") || strings.Contains(beta, "acme asks") {
		t.Fatalf("the tenants' sessions mix:\nacme %s\nbeta %s", acme, beta)
	}
	// Two clients create one thread at once (the fixture allows two
	// requests in progress per tenant).
	for i := range 5 {
		thread := fmt.Sprintf("together-%d", i)
		var wg sync.WaitGroup
		codes := make([]int, 2)
		bodies := make([]string, 2)
		for j := range 2 {
			wg.Go(func() { codes[j], bodies[j] = runOn("acme-token", thread, "at once") })
		}
		wg.Wait()
		for j := range 2 {
			if codes[j] != 200 {
				t.Fatalf("%s: %d %s", thread, codes[j], bodies[j])
			}
		}
	}
}

// TestConsoleHeaders pins the console's Content-Security-Policy: images
// from the server itself or carried in the page (data:), never from
// another host.
func TestConsoleHeaders(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "db"))
	for _, path := range []string{"/", "/console/app.js"} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		var img string
		for _, d := range strings.Split(csp, ";") {
			if f := strings.Fields(d); len(f) > 0 && f[0] == "img-src" {
				img = strings.Join(f[1:], " ")
			}
		}
		if img != "'self' data:" {
			t.Errorf("%s: img-src %q in %q", path, img, csp)
		}
	}
}
