// Command connclient is BenchmarkServe's client in a process of its own.
// It opens one kept-alive HTTP/1.1 connection to an MCP server's
// Streamable HTTP endpoint and initializes a session. Then it sends
// tools/call of core:echo -n times untimed (warm-up), then -n times
// timed, and prints how long the timed calls took in nanoseconds.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

func main() {
	rawURL := flag.String("url", "", "the server's MCP endpoint")
	n := flag.Int("n", 1000, "calls to time")
	flag.Parse()
	if err := run(*rawURL, *n); err != nil {
		fmt.Fprintln(os.Stderr, "connclient:", err)
		os.Exit(1)
	}
}

func run(rawURL string, n int) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		return err
	}
	defer conn.Close()
	c := &client{r: bufio.NewReader(conn), w: bufio.NewWriter(conn), host: u.Host, path: u.Path}
	if _, err := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"connclient","version":"1"}}}`); err != nil {
		return err
	}
	if c.session == "" {
		return fmt.Errorf("no session")
	}
	if _, err := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return err
	}
	call := func(i int) error {
		body, err := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"core__echo","arguments":{"a":1}}}`, i+2))
		if err != nil {
			return err
		}
		if !strings.Contains(body, `"result"`) || strings.Contains(body, `"isError":true`) {
			return fmt.Errorf("call %d: %.300s", i, body)
		}
		return nil
	}
	for i := range n {
		if err := call(i); err != nil {
			return err
		}
	}
	t0 := time.Now()
	for i := range n {
		if err := call(n + i); err != nil {
			return err
		}
	}
	fmt.Println(time.Since(t0).Nanoseconds())
	return nil
}

// client writes HTTP/1.1 requests on one connection and reads each
// answer on the calling goroutine.
type client struct {
	r          *bufio.Reader
	w          *bufio.Writer
	host, path string
	session    string
}

// post sends body and returns the answer's body.
func (c *client) post(body string) (string, error) {
	path := c.path
	if path == "" {
		path = "/"
	}
	fmt.Fprintf(c.w, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n", path, c.host, len(body))
	if c.session != "" {
		fmt.Fprintf(c.w, "Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\n", c.session)
	}
	c.w.WriteString("\r\n")
	c.w.WriteString(body)
	if err := c.w.Flush(); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("status %d: %.300s", resp.StatusCode, b)
	}
	return string(b), nil
}
