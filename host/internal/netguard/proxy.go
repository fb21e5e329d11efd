package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/agenthost/agenthost/abi"
)

// DeniedHeader is set on the 403 response the proxy gives for a refused
// destination; its value is the refusal message.
const DeniedHeader = "X-Agenthost-Denied"

// hopHeaders are connection-specific and never forwarded.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// ServeProxy serves an HTTP forward proxy on l until l is closed (then it
// returns nil). It enforces the same rules as Client:
//   - CONNECT host:port is checked as https://host:port against the
//     allowlist, then dialed through DialContext; the tunnel lives at most
//     Timeout and carries at most MaxResponseBytes towards the client;
//   - absolute-form requests (GET http://host/path) are checked, sent
//     without following redirects (the client's next request for the
//     Location is checked again) and their body is capped.
//
// A refused destination gets 403 with the message in the body and in the
// DeniedHeader header; the refusal is counted as by CheckURL.
func (g *Guard) ServeProxy(l net.Listener) error {
	srv := &http.Server{
		Handler:           &proxy{g: g, rt: g.transport()},
		ReadHeaderTimeout: g.opts.Timeout,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	err := srv.Serve(l)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return fmt.Errorf("netguard proxy: %w", err)
}

// proxy is the forward proxy handler.
type proxy struct {
	g  *Guard
	rt *guardTransport
}

// ServeHTTP implements http.Handler.
func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(w, "netguard proxy: absolute URL required", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.g.opts.Timeout)
	defer cancel()
	out := r.Clone(ctx)
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if r.ContentLength == 0 {
		out.Body = nil
	}
	resp, err := p.rt.RoundTrip(out)
	if err != nil {
		p.fail(w, err, r.URL)
		return
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		// Headers are gone: abort the connection so the client sees a
		// truncated response, not a complete one.
		panic(http.ErrAbortHandler)
	}
}

// fail answers a refused or failed request.
func (p *proxy) fail(w http.ResponseWriter, err error, u *url.URL) {
	ae := p.g.Error(err, u)
	switch {
	case ae == nil:
		http.Error(w, "netguard proxy: "+err.Error(), http.StatusBadGateway)
	case ae.Code == abi.CodePermissionDenied:
		w.Header().Set(DeniedHeader, ae.Message)
		http.Error(w, ae.Message, http.StatusForbidden)
	case ae.Code == abi.CodeTimeout:
		http.Error(w, ae.Message, http.StatusGatewayTimeout)
	default:
		http.Error(w, ae.Message, http.StatusBadGateway)
	}
}

// connect serves a CONNECT tunnel.
func (p *proxy) connect(w http.ResponseWriter, r *http.Request) {
	u := &url.URL{Scheme: "https", Host: r.Host}
	if err := p.g.CheckURL(u); err != nil {
		p.fail(w, err, u)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.g.opts.Timeout)
	upstream, err := p.g.DialContext(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		p.fail(w, err, u)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "netguard proxy: hijacking not supported", http.StatusInternalServerError)
		return
	}
	client, rw, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	deadline := time.Now().Add(p.g.opts.Timeout)
	_ = client.SetDeadline(deadline)
	_ = upstream.SetDeadline(deadline)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		// Bytes the client sent after its CONNECT line are buffered in rw.
		_, _ = io.Copy(upstream, rw)
		closeWrite(upstream)
	}()
	go func() {
		defer wg.Done()
		_, _ = io.CopyN(client, upstream, p.g.opts.MaxResponseBytes)
		closeWrite(client)
	}()
	wg.Wait()
	client.Close()
	upstream.Close()
}

// closeWrite half-closes c when it supports it, else closes it.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
