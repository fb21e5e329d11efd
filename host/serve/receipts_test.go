package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/receipt"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// TestRemoteCallReceipts: a call that serve hands to a remote executor
// (queue workers) still leaves a receipt in the tenant's chain, made by
// serve's host from the worker's answer.
func TestRemoteCallReceipts(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := receipt.NewRecorder(st, receipt.RecorderOptions{})
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t), Tenant: "acme", Receipts: rec})
	if err != nil {
		t.Fatal(err)
	}
	worker := hosttest.NewHost(t, nil, hosttest.Toolpacks(t)) // the worker's own host, without receipts
	remote := func(ctx context.Context, tenant, id string, args json.RawMessage) (abi.Envelope, error) {
		return worker.Call(ctx, id, args), nil
	}
	auth := serve.NewAuthenticator([]serve.TokenEntry{{SHA256: hash("acme-token"), Tenant: "acme", Scopes: []string{"call"}}})
	api, err := serve.New(serve.Options{Tenants: map[string]*serve.Tenant{"acme": {Name: "acme", Host: h}}, Auth: auth, Store: st, Remote: remote})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	req, _ := http.NewRequest("POST", srv.URL+"/v1/tools/core:echo/call", strings.NewReader(`{"x":"remote"}`))
	req.Header.Set("Authorization", "Bearer acme-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var env abi.Envelope
	json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	srv.Close()
	api.Close()
	h.Close(ctx)
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if env.Status != abi.StatusSuccess {
		t.Fatalf("call: %+v", env)
	}
	r, err := st.Receipt(ctx, "acme", 1)
	if err != nil || r.Runner != host.RunnerRemote || r.Tool != "core:echo" || string(r.Args) != `{"x":"remote"}` || r.OutputDigest != receipt.Digest(env.Output) {
		t.Fatalf("receipt: %+v %v", r, err)
	}
	if rep, err := st.VerifyReceipts(ctx, "acme", nil); err != nil || rep.Break != nil || rep.Receipts != 1 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
