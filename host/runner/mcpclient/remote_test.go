package mcpclient_test

import (
	"bytes"
	"context"
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

// syncBuffer is a bytes.Buffer for a logger written from several
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mcpServer is a real MCP server over Streamable HTTP (the official SDK's
// handler, one echo tool) on loopback that records the X-Token header of
// every request it gets.
type mcpServer struct {
	*httptest.Server
	mu     sync.Mutex
	tokens []string
}

func newMCPServer(t *testing.T, redirect map[string]func() string) *mcpServer {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "remote-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes its text."}, func(_ context.Context, _ *sdk.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	m := &mcpServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.tokens = append(m.tokens, r.Header.Get("X-Token"))
		m.mu.Unlock()
		if to, ok := redirect[r.URL.Path]; ok {
			http.Redirect(w, r, to(), http.StatusTemporaryRedirect)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

// got returns the X-Token headers received so far.
func (m *mcpServer) got() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.tokens...)
}

// TestRemoteRedirects: a remote server's redirects are followed only
// where the policy's network ceiling and address rules allow, every hop
// checked; the configured headers go to the configured origin only; a
// refused redirect reaches nothing and is logged.
func TestRemoteRedirects(t *testing.T) {
	for _, tc := range []struct {
		name string
		// path is where the configured url points on the first server.
		path string
		// allowOther puts the other server in allowHosts; private sets
		// allowPrivateAddresses.
		allowOther, private bool
		// ok: the session starts; otherGets: the other server gets
		// requests (never with the secret); refusal: in the error and
		// the log.
		ok, otherGets bool
		refusal       string
	}{
		{name: "no redirect", path: "/mcp", ok: true},
		{name: "same origin", path: "/old", ok: true},
		{name: "other origin outside the ceiling", path: "/away", refusal: "not in the allowlist"},
		{name: "other origin, a loopback address", path: "/away", allowOther: true, refusal: "loopback address"},
		{name: "other origin allowed, private addresses allowed", path: "/away", allowOther: true, private: true, ok: true, otherGets: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := newMCPServer(t, nil)
			first := newMCPServer(t, map[string]func() string{
				"/old":  func() string { return "/mcp" },
				"/away": func() string { return other.URL + "/mcp" },
			})
			hosts := `["` + first.URL + `"`
			if tc.allowOther {
				hosts += `, "` + other.URL + `"`
			}
			doc := "networkAccess: {allowHosts: " + hosts + "], allowPrivateAddresses: " + map[bool]string{true: "true", false: "false"}[tc.private] + "}\n" +
				"mcpServers:\n  remote:\n    url: " + first.URL + tc.path + "\n    headers: {X-Token: SECRET-TOKEN}\n"
			p, err := policy.Parse([]byte(doc), "")
			if err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			r := mcpclient.New(mcpclient.Options{Policy: p, Lock: &mcpclient.Lock{Version: 1, Servers: map[string]map[string]mcpclient.Pinned{}},
				Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})})
			defer r.Close()
			_, defs, stop, err := r.Connect(context.Background(), "remote")
			if err == nil {
				stop()
			}
			if tc.ok != (err == nil) {
				t.Fatalf("connect: %v (want ok %v)", err, tc.ok)
			}
			if tc.ok && (len(defs) != 1 || defs[0].Name != "echo") {
				t.Fatalf("definitions %+v", defs)
			}
			if tc.refusal != "" && (!strings.Contains(err.Error(), tc.refusal) || !strings.Contains(logs.String(), tc.refusal)) {
				t.Fatalf("refusal %q: error %v; log %q", tc.refusal, err, logs.String())
			}
			for _, tok := range first.got() {
				if tok != "SECRET-TOKEN" {
					t.Errorf("the configured origin got X-Token %q", tok)
				}
			}
			got := other.got()
			if (len(got) > 0) != tc.otherGets {
				t.Errorf("the other server got %d requests", len(got))
			}
			for _, tok := range got {
				if tok != "" {
					t.Errorf("the secret header followed a redirect to another origin: %q", tok)
				}
			}
		})
	}
}
