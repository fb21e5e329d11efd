package mcp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcp"
)

// serveHTTP serves a new server of h over Streamable HTTP on loopback;
// both are closed when the test ends.
func serveHTTP(tb testing.TB, h *host.Host, opts mcp.Options) (*mcp.Server, *httptest.Server) {
	srv := mcp.New(h, opts)
	ts := httptest.NewServer(srv.Handler())
	tb.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return srv, ts
}

// initialize is the first request of a raw client.
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawHTTP is a minimal Streamable HTTP client: JSON-RPC messages posted as
// bytes on one reused connection, the answers read as bytes.
type rawHTTP struct {
	url, session string
	c            *http.Client
}

// newRawHTTP initializes a session at url.
func newRawHTTP(tb testing.TB, url string) *rawHTTP {
	c := &rawHTTP{url: url, c: &http.Client{}}
	if _, body := c.post(tb, initialize, false); c.session == "" {
		tb.Fatalf("no session: %s", body)
	}
	c.post(tb, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
	return c
}

// post sends one message and returns the status and the body. With must,
// anything but a 200 result that is not an error fails tb.
func (c *rawHTTP) post(tb testing.TB, body string, must bool) (int, string) {
	req, err := http.NewRequest("POST", c.url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18") // what initialize asked for, as clients send
	}
	resp, err := c.c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	if must && (resp.StatusCode != 200 || !strings.Contains(string(b), `"result"`) || strings.Contains(string(b), `"isError":true`)) {
		tb.Fatalf("%d %.300s", resp.StatusCode, b)
	}
	return resp.StatusCode, string(b)
}

// rawStdio is a minimal stdio client of srv: newline-delimited JSON-RPC
// on pipes, served by RunIO as `agenthost mcp` serves stdin and stdout.
type rawStdio struct {
	w    io.WriteCloser
	r    *bufio.Reader
	stop func() // ends the session and waits for the server to see it
}

// newRawStdio serves one session of srv on pipes and initializes it.
func newRawStdio(tb testing.TB, srv *mcp.Server) *rawStdio {
	c := newRawStdioNoInit(tb, srv)
	c.roundTrip(tb, initialize, true)
	if _, err := io.WriteString(c.w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		tb.Fatal(err)
	}
	return c
}

// newRawStdioNoInit serves one session of srv on pipes.
func newRawStdioNoInit(tb testing.TB, srv *mcp.Server) *rawStdio {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.RunIO(ctx, inR, outW)
	}()
	stop := sync.OnceFunc(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-done
	})
	tb.Cleanup(stop)
	return &rawStdio{w: inW, r: bufio.NewReader(outR), stop: stop}
}

// roundTrip sends one request and returns its answer (notifications
// before it are skipped). With must, an error or a failed call fails tb.
func (c *rawStdio) roundTrip(tb testing.TB, msg string, must bool) string {
	tb.Helper()
	if _, err := io.WriteString(c.w, msg+"\n"); err != nil {
		tb.Fatal(err)
	}
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			tb.Fatal(err)
		}
		if strings.Contains(line, `"method":"notifications/`) {
			continue
		}
		if must && (!strings.Contains(line, `"result"`) || strings.Contains(line, `"isError":true`)) {
			tb.Fatalf("%.300s", line)
		}
		return line
	}
}

// connHTTP is the leanest Streamable HTTP client: HTTP/1.1 written and
// read on one kept-alive TCP connection by the calling goroutine, with no
// transport goroutines between the caller and the socket.
type connHTTP struct {
	conn    net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	host    string
	session string
}

// newConnHTTP dials url's host and initializes a session there.
func newConnHTTP(tb testing.TB, rawURL string) *connHTTP {
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	c := &connHTTP{conn: conn, r: bufio.NewReader(conn), w: bufio.NewWriter(conn), host: u.Host}
	if _, body := c.post(tb, initialize, false); c.session == "" {
		tb.Fatalf("no session: %s", body)
	}
	c.post(tb, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
	return c
}

// post is rawHTTP.post on the connection.
func (c *connHTTP) post(tb testing.TB, body string, must bool) (int, string) {
	fmt.Fprintf(c.w, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n", c.host, len(body))
	if c.session != "" {
		fmt.Fprintf(c.w, "Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\n", c.session)
	}
	c.w.WriteString("\r\n")
	c.w.WriteString(body)
	if err := c.w.Flush(); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	if must && (resp.StatusCode != 200 || !strings.Contains(string(b), `"result"`) || strings.Contains(string(b), `"isError":true`)) {
		tb.Fatalf("%d %.300s", resp.StatusCode, b)
	}
	return resp.StatusCode, string(b)
}
