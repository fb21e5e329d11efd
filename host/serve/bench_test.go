package serve_test

import (
	"context"
	"encoding/json"
	"github.com/agenthost/agenthost/host/hosttest"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkCall is POST /v1/tools/core:echo/call on loopback with a
// reused connection, against host.Call of the same tool in the same run.
func BenchmarkCall(b *testing.B) {
	fixtureMaxConcurrent = 64
	defer func() { fixtureMaxConcurrent = 2 }()
	f := newFixture(b, filepath.Join(b.TempDir(), "db"))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	call := func() {
		req, _ := http.NewRequest("POST", f.srv.URL+"/v1/tools/core:echo/call", strings.NewReader(`{"a":1}`))
		req.Header.Set("Authorization", "Bearer acme-token")
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
	}
	call()
	b.Run("http", func(b *testing.B) {
		for b.Loop() {
			call()
		}
	})
	b.Run("host", func(b *testing.B) {
		h := f.hosts["acme"]
		for b.Loop() {
			h.Call(context.Background(), "core:echo", json.RawMessage(`{"a":1}`))
		}
	})
	b.Run("load", func(b *testing.B) {
		// 16 clients: calls per second and the latency percentiles.
		hosttest.Load(b, 16, func() error { call(); return nil })
	})
}
