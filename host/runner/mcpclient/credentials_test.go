package mcpclient_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner/mcpclient"
)

// tokenIssuer is an OAuth 2.1 authorization server of our own on
// loopback: RFC 8414 metadata and a token endpoint granting
// client_credentials to one client, for the resource asked for.
type tokenIssuer struct {
	*httptest.Server
	mu      sync.Mutex
	issued  map[string]string // token -> resource
	secrets []string          // client secrets it was sent
}

func newTokenIssuer(t *testing.T) *tokenIssuer {
	a := &tokenIssuer{issued: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": a.URL, "token_endpoint": a.URL + "/token", "grant_types_supported": []string{"client_credentials"}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		a.mu.Lock()
		defer a.mu.Unlock()
		a.secrets = append(a.secrets, secret)
		if id != "agent" || secret != "s3cret" || r.FormValue("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "unknown client or wrong secret"})
			return
		}
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		tok := hex.EncodeToString(b)
		a.issued[tok] = r.FormValue("resource")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 600})
	})
	a.Server = httptest.NewServer(mux)
	t.Cleanup(a.Close)
	return a
}

// protectedMCP is a real MCP server (the SDK's, one echo tool; stateless
// for 2026-07-28, with sessions for 2025-11-25) on loopback behind bearer
// tokens of issuer for its own URL, or behind an X-Token header; it
// records the Authorization headers it gets.
type protectedMCP struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newProtectedMCP(t *testing.T, issuer *tokenIssuer, stateless bool, xToken string) *protectedMCP {
	s := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes its text."}, func(_ context.Context, _ *sdk.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: stateless})
	m := &protectedMCP{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		meta := m.URL + "/.well-known/oauth-protected-resource/mcp"
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" && issuer != nil {
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": m.URL + "/mcp", "authorization_servers": []string{issuer.URL}})
			return
		}
		m.mu.Lock()
		m.auths = append(m.auths, r.Header.Get("Authorization"))
		m.mu.Unlock()
		ok := xToken != "" && r.Header.Get("X-Token") == xToken
		if tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && issuer != nil {
			issuer.mu.Lock()
			ok = issuer.issued[tok] == m.URL+"/mcp"
			issuer.mu.Unlock()
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+meta+`"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

// TestRemoteCredentials imports a remote server's tools with the
// credentials a policy may give, never a literal secret: a header from an
// environment variable, or OAuth 2.1 client credentials discovered from
// the server's protected resource metadata, against a server of each
// revision (2025-11-25 with sessions, 2026-07-28 stateless). The client
// secret goes to the authorization server only and the token to the MCP
// server only; an unset variable, a wrong secret and an authorization
// server outside the network ceiling are refused with the reason.
func TestRemoteCredentials(t *testing.T) {
	t.Setenv("AGENTHOST_TEST_XTOKEN", "from-env")
	t.Setenv("AGENTHOST_TEST_SECRET", "s3cret")
	t.Setenv("AGENTHOST_TEST_WRONG", "nope")
	for _, tc := range []struct {
		name      string
		stateless bool
		creds     string // the server entry's credential lines
		xToken    string // what the server wants in X-Token ("": OAuth)
		asOutside bool   // the authorization server is not in allowHosts
		version   string // negotiated; "" when refused
		refusal   string
	}{
		{name: "oauth, 2025-11-25", creds: "    oauth: {clientId: agent, clientSecretEnv: AGENTHOST_TEST_SECRET, scope: call}\n", version: "2025-11-25"},
		{name: "oauth, 2026-07-28", stateless: true, creds: "    oauth: {clientId: agent, clientSecretEnv: AGENTHOST_TEST_SECRET}\n", version: "2026-07-28"},
		{name: "header from env", creds: "    headersFromEnv: {X-Token: AGENTHOST_TEST_XTOKEN}\n", xToken: "from-env", version: "2025-11-25"},
		{name: "header from env, 2026-07-28", stateless: true, creds: "    headersFromEnv: {X-Token: AGENTHOST_TEST_XTOKEN}\n", xToken: "from-env", version: "2026-07-28"},
		{name: "header from an unset variable", creds: "    headersFromEnv: {X-Token: AGENTHOST_TEST_UNSET}\n", xToken: "from-env", refusal: "AGENTHOST_TEST_UNSET, which is not set"},
		{name: "wrong client secret", creds: "    oauth: {clientId: agent, clientSecretEnv: AGENTHOST_TEST_WRONG}\n", refusal: "refused the client credentials of agent"},
		{name: "secret from an unset variable", creds: "    oauth: {clientId: agent, clientSecretEnv: AGENTHOST_TEST_UNSET}\n", refusal: "AGENTHOST_TEST_UNSET, which is not set"},
		{name: "authorization server outside the ceiling", creds: "    oauth: {clientId: agent, clientSecretEnv: AGENTHOST_TEST_SECRET}\n", asOutside: true, refusal: "not in the allowlist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			issuer := newTokenIssuer(t)
			var srv *protectedMCP
			if tc.xToken != "" {
				srv = newProtectedMCP(t, nil, tc.stateless, tc.xToken)
			} else {
				srv = newProtectedMCP(t, issuer, tc.stateless, "")
			}
			hosts := `"` + srv.URL + `"`
			if !tc.asOutside {
				hosts += `, "` + issuer.URL + `"`
			}
			doc := "networkAccess: {allowHosts: [" + hosts + "], allowPrivateAddresses: true}\nmcpServers:\n  remote:\n    url: " + srv.URL + "/mcp\n" + tc.creds
			p, err := policy.Parse([]byte(doc), "")
			if err != nil {
				t.Fatal(err)
			}
			r := mcpclient.New(mcpclient.Options{Policy: p, Lock: &mcpclient.Lock{Version: 1, Servers: map[string]map[string]mcpclient.Pinned{}},
				Logger: hclog.NewNullLogger()})
			defer r.Close()
			cs, defs, stop, err := r.Connect(context.Background(), "remote")
			if tc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("want a refusal with %q, got %v", tc.refusal, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			if len(defs) != 1 || defs[0].Name != "echo" {
				t.Fatalf("definitions %+v", defs)
			}
			if v := cs.InitializeResult().ProtocolVersion; v != tc.version {
				t.Errorf("negotiated %s, want %s", v, tc.version)
			}
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "through"}})
			if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != "through" {
				t.Fatalf("call: %v %+v", err, res)
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			for _, a := range srv.auths {
				if strings.Contains(a, "s3cret") {
					t.Errorf("the MCP server got the client secret: %q", a)
				}
			}
			issuer.mu.Lock()
			defer issuer.mu.Unlock()
			if tc.xToken == "" && (len(issuer.secrets) == 0 || issuer.secrets[0] != "s3cret") {
				t.Errorf("the authorization server got secrets %q", issuer.secrets)
			}
		})
	}
}
