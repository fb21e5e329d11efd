package mcp_test

import (
	"context"
	"net/http"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcp"
)

// ExampleWithApprover mounts the MCP handler behind an application's own
// authentication, so that the approvals a user gives over MCP are
// recorded as theirs ("<tenant>/<subject>") rather than under the name
// the MCP client gives itself; Approvers says where a client that cannot
// be asked gets its calls decided.
func ExampleWithApprover() {
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{})
	if err != nil {
		return
	}
	defer h.Close(ctx)
	srv := mcp.New(h, mcp.Options{Tenant: "acme", Approvers: "the admin page"})
	defer srv.Close()
	// The application's own tokens and who holds them.
	users := map[string]string{"Bearer s3cret-of-alice": "alice"}
	http.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := users[r.Header.Get("Authorization")]
		if !ok {
			http.Error(w, "unknown token", http.StatusUnauthorized)
			return
		}
		srv.Handler().ServeHTTP(w, r.WithContext(mcp.WithApprover(r.Context(), "acme/"+user)))
	}))
}
