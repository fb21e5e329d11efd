package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/host/receipt"
	"github.com/agenthost/agenthost/host/store"
)

// The history keeps each tenant's receipt chain: a recorder writes to
// it, replay reads a receipt back with its arguments, and the chain
// verifies end to end.
func ExampleStore_VerifyReceipts() {
	dir, _ := os.MkdirTemp("", "receipts")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, _ := store.Open(ctx, filepath.Join(dir, "agenthost.db"))
	defer st.Close()
	rec := receipt.NewRecorder(st, receipt.RecorderOptions{})
	for i := range 3 {
		args := []byte(fmt.Sprintf(`{"n":%d}`, i))
		rec.Record(ctx, &receipt.Receipt{Tenant: "acme", CallID: fmt.Sprint(i), Tool: "core:echo", ToolVersion: "1.0.0",
			Runner: "wasm:wasi-command", ArgsDigest: receipt.Digest(args), OutputDigest: receipt.Digest(args), Status: "success", Args: args})
	}
	rec.Close(ctx)
	r, _ := st.Receipt(ctx, "acme", 2)
	fmt.Println("receipt 2 ran", r.Tool, "on", string(r.Args))
	rep, _ := st.VerifyReceipts(ctx, "acme", nil)
	fmt.Println(rep.Receipts, "receipts, break:", rep.Break)
	// Output:
	// receipt 2 ran core:echo on {"n":1}
	// 3 receipts, break: <nil>
}
