package serve_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
)

// TestConsoleApprovals drives the console's Approvals view in Chromium:
// two calls wait; one is allowed once, the other (with markup in its
// arguments, shown as text) denied, through the buttons.
func TestConsoleApprovals(t *testing.T) {
	dir, node := consoleBrowser(t)
	srv, b := approvalServer(t)
	allowed := startCall(t, srv, `{"path":"secrets/key"}`)
	denied := startCall(t, srv, `{"note":"<img src=x onerror=alert(1)>"}`)
	for len(b.Pending("acme")) < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "approvals.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BASE="+srv.URL, "TOKEN=admin-token", "CHROMIUM="+chromium, "SHOTS="+t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the approvals script failed: %v", err)
	}
	if env := <-allowed; env.Error != nil {
		t.Errorf("the call allowed in the console failed: %v", env.Error)
	}
	if env := <-denied; env.Error == nil || env.Error.Code != abi.CodePermissionDenied || !strings.Contains(env.Error.Message, "denied by acme/") {
		t.Errorf("the call denied in the console: %+v", env.Error)
	}
}
