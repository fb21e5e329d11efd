package netguard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agenthost/agenthost/host/internal/netguard"
)

// BenchmarkRequest compares one loopback GET through the guard with the
// same GET through a plain client (both without keep-alive, as the guard
// runs): the difference is the guard's per-request cost.
func BenchmarkRequest(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	guarded := netguard.New(hosts{"127.0.0.1"}, netguard.Options{AllowPrivate: true, Dial: loopbackDial(nil)}).Client()
	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, c := range []struct {
		name   string
		client *http.Client
	}{{"plain", plain}, {"guarded", guarded}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
				resp, err := c.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
