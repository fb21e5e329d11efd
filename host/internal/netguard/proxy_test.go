package netguard_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/netguard"
)

// startProxy serves g's proxy on a loopback listener until the test ends.
func startProxy(t *testing.T, g *netguard.Guard) *url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.ServeProxy(l) }()
	t.Cleanup(func() {
		l.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeProxy = %v, want nil after close", err)
		}
	})
	return &url.URL{Scheme: "http", Host: l.Addr().String()}
}

func proxyClient(proxy *url.URL, roots *tls.Config) *http.Client {
	return &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: roots, DisableKeepAlives: true},
		Timeout:   5 * time.Second,
	}
}

func TestProxy(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://forbidden.test/", http.StatusFound)
			return
		}
		fmt.Fprint(w, "plain "+r.URL.Path)
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "tls "+r.URL.Path)
	}))
	defer tlsSrv.Close()
	big := bigServer(300<<20, false)
	defer big.Close()
	roots := tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig

	g := netguard.New(hosts{"127.0.0.1"}, netguard.Options{AllowPrivate: true, Dial: loopbackDial(nil), MaxResponseBytes: 1 << 20, Timeout: 2 * time.Second})
	client := proxyClient(startProxy(t, g), roots)
	strict := netguard.New(hosts{"*"}, netguard.Options{Dial: loopbackDial(nil)})
	strictClient := proxyClient(startProxy(t, strict), roots)

	tests := []struct {
		name   string
		client *http.Client
		url    string
		want   string // body prefix on success
		denied string // substring of the 403 message
		fails  bool   // a transport error is expected (cap)
	}{
		{name: "plain allowed", client: client, url: plain.URL + "/a", want: "plain /a"},
		{name: "CONNECT allowed", client: client, url: tlsSrv.URL + "/b", want: "tls /b"},
		{name: "plain outside the grant", client: client, url: "http://example.org/", denied: "example.org denied"},
		{name: "redirect re-checked by the next request", client: client, url: plain.URL + "/redirect", denied: "forbidden.test denied"},
		{name: "loopback when private is refused", client: strictClient, url: plain.URL + "/", denied: "loopback address"},
		{name: "CONNECT to loopback when private is refused", client: strictClient, url: tlsSrv.URL + "/", denied: "Forbidden"},
		{name: "response over the cap", client: client, url: big.URL, fails: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, tc.url, nil)
			resp, err := tc.client.Do(req)
			if tc.denied != "" && strings.HasPrefix(tc.url, "https") {
				if err == nil || !strings.Contains(err.Error(), tc.denied) {
					t.Fatalf("CONNECT err = %v, want %q", err, tc.denied)
				}
				return
			}
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			switch {
			case tc.fails:
				if err == nil && int64(len(body)) > 1<<20 {
					t.Fatalf("read %d bytes through the proxy, cap is 1 MiB", len(body))
				}
				if err == nil {
					t.Fatalf("capped response read without error (%d bytes)", len(body))
				}
			case tc.denied != "":
				if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), tc.denied) || resp.Header.Get(netguard.DeniedHeader) == "" {
					t.Fatalf("got %d %q, want 403 containing %q", resp.StatusCode, body, tc.denied)
				}
			default:
				if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(string(body), tc.want) {
					t.Fatalf("got %d %q %v, want %q", resp.StatusCode, body, err, tc.want)
				}
			}
		})
	}
	if g.Denials() != 2 || strict.Denials() != 2 {
		t.Fatalf("denials = %d, %d; want 2, 2", g.Denials(), strict.Denials())
	}
}
