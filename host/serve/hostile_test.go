package serve_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/profile"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// TestHostileClients pins what slow and vanishing clients get: a client
// that sends its headers too slowly is disconnected; a client that goes
// away during an agent run cancels the run (the running tool sees its
// context end); and no log line holds a bearer token.
func TestHostileClients(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	type none struct{}
	started, stopped := make(chan struct{}, 1), make(chan struct{}, 1)
	wait := host.Func(host.FuncSpec{ID: "app:wait", Description: "Waits for its context."}, func(ctx context.Context, _ none) (map[string]int, error) {
		started <- struct{}{}
		<-ctx.Done()
		stopped <- struct{}{}
		return nil, ctx.Err()
	})
	h, err := host.New(ctx, host.Options{CacheDir: hosttest.CacheDir(t), Tools: []host.Tool{wait}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	prof, _ := profile.Parse([]byte(`{"id":"waiter","tool_ids_inventory":["app:wait"]}`))
	var logs bytes.Buffer
	api, err := serve.New(serve.Options{
		Tenants: map[string]*serve.Tenant{"acme": {Name: "acme", Host: h, Profiles: map[string]*profile.Profile{"waiter": prof},
			Provider: func(*profile.Profile) (llm.Provider, string, error) {
				p, err := llm.ParseReplay([]byte(`{"tool_calls":[{"id":"w","name":"app__wait","arguments":{}}]}` + "\n" + `{"content":"never"}`))
				return p, "replay", err
			}}},
		Auth:          serve.NewAuthenticator([]serve.TokenEntry{{SHA256: hash("secret-bearer-token"), Tenant: "acme", Scopes: []string{"call", "sessions"}}}),
		Store:         st,
		Logger:        hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace}),
		HeaderTimeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := api.HTTPServer()
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()

	// Slow loris: half a request line, then nothing.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("GET /v1/tools HTTP/1.1\r\nHost: x\r\n"))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	b, _ := io.ReadAll(conn)
	if time.Since(start) > 5*time.Second {
		t.Fatalf("a slow client held its connection (%s)", b)
	}
	conn.Close()

	// A client that goes away mid-run.
	rctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(rctx, "POST", base+"/v1/agents/waiter/runs", strings.NewReader(`{"threadId":"t","messages":[{"id":"1","role":"user","content":"wait"}]}`))
	req.Header.Set("Authorization", "Bearer secret-bearer-token")
	req.Header.Set("Content-Type", "application/json")
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool did not start")
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the run went on after its client left")
	}
	if err := api.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "secret-bearer-token") {
		t.Fatalf("a log line holds the token:\n%s", logs.String())
	}
}
