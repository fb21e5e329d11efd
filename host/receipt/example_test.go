package receipt_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"

	"golang.org/x/crypto/ssh"

	"github.com/agenthost/agenthost/host/receipt"
)

// A recorder links the receipts of calls into a chain per tenant, signs
// its head, and the chain verifies end to end.
func Example() {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := ssh.NewSignerFromKey(priv)
	mem := receipt.NewMemory(1000)
	rec := receipt.NewRecorder(mem, receipt.RecorderOptions{Signer: key})
	ctx := context.Background()
	for i := range 3 {
		args := []byte(fmt.Sprintf(`{"text":"hello %d"}`, i))
		rec.Record(ctx, &receipt.Receipt{Tenant: "acme", CallID: fmt.Sprint(i), Tool: "core:echo", ToolVersion: "1.0.0",
			Runner: "wasm:wasi-command", ArgsDigest: receipt.Digest(args), OutputDigest: receipt.Digest(args), Status: "success", Args: args})
	}
	rec.Close(ctx) // writes what is queued and signs the head
	rep, _ := receipt.Verify("acme", mem.Receipts("acme"), mem.Signatures("acme"), nil)
	fmt.Println(rep.Receipts, "receipts, signed up to", rep.Signed, "break:", rep.Break)
	// Output: 3 receipts, signed up to 3 break: <nil>
}
