package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// BenchmarkCall is tools/call of core:echo through the MCP server, over
// Streamable HTTP on loopback (one client, reused connection) and over an
// in-process transport (what stdio costs without the pipe), against
// host.Call of the same tool in the same run.
func BenchmarkCall(b *testing.B) {
	h := hosttest.NewHost(b, nil, hosttest.Toolpacks(b))
	srv := mcp.New(h, mcp.Options{})
	defer srv.Close()
	ctx := context.Background()
	args := map[string]any{"a": 1}
	call := func(b *testing.B, cs *sdk.ClientSession) {
		for b.Loop() {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "core__echo", Arguments: args})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	}
	b.Run("host", func(b *testing.B) {
		for b.Loop() {
			if env := h.Call(ctx, "core:echo", json.RawMessage(`{"a":1}`)); env.Error != nil {
				b.Fatal(env.Error)
			}
		}
	})
	b.Run("http", func(b *testing.B) {
		ts := httptest.NewServer(srv.Handler())
		defer ts.Close()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		call(b, cs)
	})
	b.Run("stream", func(b *testing.B) {
		st, ct := sdk.NewInMemoryTransports()
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go srv.Run(sctx, st)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		call(b, cs)
	})
}

// BenchmarkServe is the server's own cost: the same tools/call sent by a
// minimal client (JSON-RPC written and read as bytes, no SDK on the
// client side), over Streamable HTTP on loopback with a reused
// connection, with the fast path (the default) and without it (http-sdk:
// through the SDK's dispatch), and over stdio's newline-delimited JSON on
// pipes (with the fast path, and without it: stdio-sdk), against
// host.Call in the same run. The floors: the same client answered by a
// handler that writes a canned result (http-floor), by one that first
// spins for as long as host.Call takes (http-floor-spin), by one that
// makes the host.Call and writes its envelope (http-floor-call), and by
// a loop on the pipes (pipe). conn and conn-floor send the same call and
// floor from a client writing HTTP/1.1 on its own connection, without
// http.Client's transport goroutines. conn-process and conn-process-floor
// send them from that client in a process of its own.
func BenchmarkServe(b *testing.B) {
	h := hosttest.NewHost(b, nil, hosttest.Toolpacks(b))
	ctx := context.Background()
	const call = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"core__echo","arguments":{"a":1}}}`
	var hostCall time.Duration // host.Call's mean time in this run
	b.Run("host", func(b *testing.B) {
		t0, n := time.Now(), 0
		for b.Loop() {
			if env := h.Call(ctx, "core:echo", json.RawMessage(`{"a":1}`)); env.Error != nil {
				b.Fatal(env.Error)
			}
			n++
		}
		hostCall = time.Since(t0) / time.Duration(n)
	})
	srv := mcp.New(h, mcp.Options{})
	defer srv.Close()
	sdkOnly := mcp.New(h, mcp.Options{NoFastPath: true})
	defer sdkOnly.Close()
	// Each HTTP case: one client, sending the same call, to handler.
	type poster interface {
		post(tb testing.TB, body string, must bool) (int, string)
	}
	over := func(name string, handler http.Handler, client func(testing.TB, string) poster) {
		b.Run(name, func(b *testing.B) {
			ts := httptest.NewServer(handler)
			defer ts.Close()
			c := client(b, ts.URL)
			for i := 0; b.Loop(); i++ {
				c.post(b, fmt.Sprintf(call, i+2), true)
			}
		})
	}
	viaClient := func(tb testing.TB, url string) poster { return newRawHTTP(tb, url) }
	viaConn := func(tb testing.TB, url string) poster { return newConnHTTP(tb, url) }
	overHTTP := func(name string, handler http.Handler) { over(name, handler, viaClient) }
	overConn := func(name string, handler http.Handler) { over(name, handler, viaConn) }
	overHTTP("http", srv.Handler())
	overConn("conn", srv.Handler())
	// The conn client in a process of its own, as a real MCP client
	// is: this test binary again, running TestConnClientProcess.
	overProcess := func(name string, handler http.Handler) {
		b.Run(name, func(b *testing.B) {
			ts := httptest.NewServer(handler)
			defer ts.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^TestConnClientProcess$")
			cmd.Env = append(os.Environ(), connClientURL+"="+ts.URL, connClientCalls+"="+strconv.Itoa(b.N))
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("client process: %v\n%s", err, out)
			}
			_, after, ok := strings.Cut(string(out), connClientTook)
			ns, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0]), 10, 64)
			if !ok || err != nil {
				b.Fatalf("client process printed %q", out)
			}
			b.ReportMetric(float64(ns)/float64(b.N), "ns/op")
		})
	}
	overProcess("conn-process", srv.Handler())
	overHTTP("http-sdk", sdkOnly.Handler())
	// The floors of Streamable HTTP: a handler that reads the body and
	// writes back a canned result, and one that makes the host.Call and
	// writes its envelope (what a tool call costs inside any handler).
	floor := func(result func(*http.Request) []byte) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "floor")
			_, _ = w.Write(append(append([]byte(`{"jsonrpc":"2.0","id":2,"result":`), result(r)...), '}'))
		})
	}
	canned := []byte(`{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"a":1}}`)
	overHTTP("http-floor", floor(func(*http.Request) []byte { return canned }))
	overConn("conn-floor", floor(func(*http.Request) []byte { return canned }))
	overProcess("conn-process-floor", floor(func(*http.Request) []byte { return canned }))
	overHTTP("http-floor-spin", floor(func(*http.Request) []byte {
		// As long as host.Call takes, touching almost no memory: the
		// round trip a call would cost if it left the caches as it
		// found them.
		for t0 := time.Now(); time.Since(t0) < hostCall; {
		}
		return canned
	}))
	overHTTP("http-floor-call", floor(func(r *http.Request) []byte {
		out, _ := json.Marshal(h.Call(r.Context(), "core:echo", json.RawMessage(`{"a":1}`)))
		return out
	}))
	b.Run("pipe", func(b *testing.B) {
		// The floor of stdio: the same client and pipes, answered by a
		// loop that writes back a canned result line per line read.
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		go func() {
			r := bufio.NewReader(inR)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					outW.Close()
					return
				}
				_, _ = io.WriteString(outW, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"a":1}}}`+"\n")
			}
		}()
		c := &rawStdio{w: inW, r: bufio.NewReader(outR), stop: func() {}}
		defer inW.Close()
		for i := 0; b.Loop(); i++ {
			c.roundTrip(b, fmt.Sprintf(call, i+2), true)
		}
	})
	for name, s := range map[string]*mcp.Server{"stdio": srv, "stdio-sdk": sdkOnly} {
		b.Run(name, func(b *testing.B) {
			c := newRawStdio(b, s)
			for i := 0; b.Loop(); i++ {
				c.roundTrip(b, fmt.Sprintf(call, i+2), true)
			}
		})
	}
}

// The client process of BenchmarkServe/conn-process reads the server's
// URL and its number of calls from these variables, and prints its time
// after connClientTook.
const (
	connClientURL   = "AGENTHOST_BENCH_CONN_URL"
	connClientCalls = "AGENTHOST_BENCH_CONN_CALLS"
	connClientTook  = "conn-process took ns: "
)

// TestConnClientProcess is BenchmarkServe/conn-process's client, run
// by that benchmark as another process of this binary (skipped
// otherwise). Its connHTTP sends tools/call of core:echo n times
// untimed, then n times timed, and it prints how long those took.
func TestConnClientProcess(t *testing.T) {
	url := os.Getenv(connClientURL)
	if url == "" {
		t.Skip("run by BenchmarkServe/conn-process")
	}
	n, err := strconv.Atoi(os.Getenv(connClientCalls))
	if err != nil || n < 1 {
		t.Fatalf("%s=%q", connClientCalls, os.Getenv(connClientCalls))
	}
	const call = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"core__echo","arguments":{"a":1}}}`
	c := newConnHTTP(t, url)
	for i := range n {
		c.post(t, fmt.Sprintf(call, i+2), true)
	}
	t0 := time.Now()
	for i := range n {
		c.post(t, fmt.Sprintf(call, n+i+2), true)
	}
	fmt.Printf("%s%d\n", connClientTook, time.Since(t0).Nanoseconds())
}

// statelessHTTP is rawHTTP for 2026-07-28: no session, the revision's
// headers and per-request _meta on every call.
type statelessHTTP struct {
	url string
	c   *http.Client
}

// post sends one tools/call of core__echo (body is its JSON-RPC request
// with the _meta already in) and checks the answer as rawHTTP.post does.
func (c *statelessHTTP) post(tb testing.TB, body string, must bool) (int, string) {
	req, err := http.NewRequest("POST", c.url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "core__echo")
	resp, err := c.c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if must && (resp.StatusCode != 200 || !strings.Contains(string(b), `"resultType":"complete"`) || strings.Contains(string(b), `"isError":true`)) {
		tb.Fatalf("%d %.300s", resp.StatusCode, b)
	}
	return resp.StatusCode, string(b)
}

// BenchmarkStateless is tools/call of core:echo over Streamable HTTP on
// loopback in both revisions, in the same run: with a session (2025-11-25,
// after initialize) and stateless (2026-07-28, headers and _meta on each
// call), each with the fast path (the default) and through the SDK
// (-sdk: NoFastPath). The stateless call must cost no more than the
// session's.
func BenchmarkStateless(b *testing.B) {
	h := hosttest.NewHost(b, nil, hosttest.Toolpacks(b))
	const session = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"core__echo","arguments":{"a":1}}}`
	const stateless = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"core__echo","arguments":{"a":1},` + modernMeta + `}}`
	for _, fast := range []bool{true, false} {
		srv := mcp.New(h, mcp.Options{NoFastPath: !fast})
		ts := httptest.NewServer(srv.Handler())
		suffix := ""
		if !fast {
			suffix = "-sdk"
		}
		b.Run("session"+suffix, func(b *testing.B) {
			c := newRawHTTP(b, ts.URL)
			for i := 0; b.Loop(); i++ {
				c.post(b, fmt.Sprintf(session, i+2), true)
			}
		})
		b.Run("stateless"+suffix, func(b *testing.B) {
			c := &statelessHTTP{url: ts.URL, c: &http.Client{}}
			for i := 0; b.Loop(); i++ {
				c.post(b, fmt.Sprintf(stateless, i+2), true)
			}
		})
		ts.Close()
		srv.Close()
	}
}
