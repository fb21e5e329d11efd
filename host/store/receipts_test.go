package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/agenthost/agenthost/host/receipt"
	"github.com/agenthost/agenthost/host/store"
)

func receiptDraft(tenant string, i int) *receipt.Receipt {
	args := []byte(fmt.Sprintf(`{"n":%d}`, i))
	return &receipt.Receipt{V: receipt.Version, Tenant: tenant, CallID: fmt.Sprintf("%016x", i), Tool: "core:echo", ToolVersion: "1.0.0",
		Runner: "wasm:wasi-command", ArgsDigest: receipt.Digest(args), OutputDigest: receipt.Digest(args), Status: "success", Args: args,
		Inputs: []byte(`{"clock":[1]}`), InputsDigest: receipt.Digest([]byte(`{"clock":[1]}`))}
}

// TestReceipts stores chains on SQLite and PostgreSQL: they read back
// with their arguments and inputs, verify with their signatures, and a
// row changed in the database is named at its first bad link.
func TestReceipts(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { receiptsSuite(t, filepath.Join(t.TempDir(), "agenthost.db")) })
	t.Run("postgres", func(t *testing.T) { receiptsSuite(t, startPostgres(t)) })
}

func receiptsSuite(t *testing.T, path string) {
	ctx := context.Background()
	s := open(t, path)
	defer s.Close()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := ssh.NewSignerFromKey(priv)
	rec := receipt.NewRecorder(s, receipt.RecorderOptions{Signer: key, SignEvery: 500, Batch: 64})
	const n = 1200 // more than two pages of a walk
	for i := range n {
		if err := rec.Record(ctx, receiptDraft([]string{"acme", "beta"}[i%2], i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tenants, err := s.ReceiptTenants(ctx)
	if err != nil || len(tenants) != 2 || tenants[0] != "acme" {
		t.Fatalf("tenants: %v %v", tenants, err)
	}
	for _, tenant := range tenants {
		rep, err := s.VerifyReceipts(ctx, tenant, nil)
		if err != nil || rep.Break != nil || rep.Receipts != n/2 || rep.Signed != n/2 || rep.Signatures != 2 {
			t.Fatalf("%s: %+v %v", tenant, rep, err)
		}
	}
	r, err := s.Receipt(ctx, "acme", 7)
	if err != nil || r.Seq != 7 || string(r.Args) != `{"n":12}` || string(r.Inputs) != `{"clock":[1]}` || r.Sum() != r.Hash {
		t.Fatalf("receipt 7: %+v %v", r, err)
	}
	if byCall, err := s.ReceiptByCall(ctx, "acme", r.CallID); err != nil || byCall.Hash != r.Hash {
		t.Fatalf("by call: %+v %v", byCall, err)
	}
	if _, err := s.Receipt(ctx, "beta", 100000); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a missing receipt: %v", err)
	}
	if _, err := s.Receipt(ctx, "nobody", 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another tenant's receipt: %v", err)
	}
	since := 0
	for r, err := range s.Receipts(ctx, "beta", 590) {
		if err != nil || r.Seq != uint64(590+since) {
			t.Fatalf("since: %+v %v", r, err)
		}
		since++
	}
	if since != 11 {
		t.Fatalf("since 590: %d receipts", since)
	}
	// Tampering with the rows, from the end backwards: each case's link
	// comes before the previous one's, so it is the first bad one.
	cases := []struct {
		sql  string
		kind receipt.Kind
		seq  uint64
	}{
		{`DELETE FROM receipts WHERE tenant = 'acme' AND seq > 590`, receipt.Truncated, 591},
		{`UPDATE receipts SET seq = 1000 WHERE tenant = 'acme' AND seq = 50`, receipt.Gap, 50},
		{`DELETE FROM receipts WHERE tenant = 'acme' AND seq = 40`, receipt.Gap, 40},
		{`UPDATE receipts SET record = 'not json' WHERE tenant = 'acme' AND seq = 30`, receipt.Malformed, 30},
		{`UPDATE receipts SET record = replace(record, 'status 7:success', 'status 7:failure') WHERE tenant = 'acme' AND seq = 20`, receipt.Edited, 20},
		{`UPDATE receipts SET args = '{"n":-1}' WHERE tenant = 'acme' AND seq = 10`, receipt.Edited, 10},
	}
	for _, tc := range cases {
		if err := s.Exec(ctx, tc.sql); err != nil {
			t.Fatal(err)
		}
		rep, err := s.VerifyReceipts(ctx, "acme", nil)
		if err != nil || rep.Break == nil || rep.Break.Kind != tc.kind || rep.Break.Seq != tc.seq {
			t.Fatalf("%s: want %s at %d, got %+v %v", tc.sql, tc.kind, tc.seq, rep.Break, err)
		}
	}
	if rep, err := s.VerifyReceipts(ctx, "beta", nil); err != nil || rep.Break != nil {
		t.Fatalf("beta: %+v %v", rep, err)
	}
	// Every receipt of a tenant deleted: its signatures still name it.
	if err := s.Exec(ctx, `DELETE FROM receipts WHERE tenant = 'beta'`); err != nil {
		t.Fatal(err)
	}
	if tenants, err := s.ReceiptTenants(ctx); err != nil || len(tenants) != 2 || tenants[1] != "beta" {
		t.Fatalf("tenants after beta's receipts were deleted: %v %v", tenants, err)
	}
	if rep, err := s.VerifyReceipts(ctx, "beta", nil); err != nil || rep.Break == nil || rep.Break.Kind != receipt.Truncated || rep.Break.Seq != 1 {
		t.Fatalf("beta without receipts: %+v %v", rep.Break, err)
	}
}

// TestReceiptsConcurrentServers appends from two stores on one
// PostgreSQL database (two serve instances) and from several writers of
// each at once: every tenant keeps one chain, numbered without a gap.
func TestReceiptsConcurrentServers(t *testing.T) {
	url := startPostgres(t)
	ctx := context.Background()
	a, b := open(t, url), open(t, url)
	defer a.Close()
	defer b.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		s := []*store.Store{a, b}[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				batch := []*receipt.Receipt{receiptDraft("acme", w*1000+i), receiptDraft("beta", w*1000+i), receiptDraft("acme", w*1000+i+500)}
				if err := s.AppendReceipts(ctx, batch); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for tenant, want := range map[string]uint64{"acme": 400, "beta": 200} {
		rep, err := a.VerifyReceipts(ctx, tenant, nil)
		if err != nil || rep.Break != nil || rep.Receipts != want {
			t.Fatalf("%s: %+v %v", tenant, rep, err)
		}
	}
}
