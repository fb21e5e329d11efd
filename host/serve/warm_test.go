package serve_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/serve"
)

// TestReadyz_warm: the server warms every tenant's tools in the
// background from its start; /readyz says how far that is (ready
// throughout) and /metrics says when it is done.
func TestReadyz_warm(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "db"))
	var h serve.Health
	for i := 0; ; i++ {
		status, body := f.do(t, "GET", "/readyz", "", "", "")
		if status != 200 {
			t.Fatalf("readyz %d while warming: %s", status, body)
		}
		if err := json.Unmarshal([]byte(body), &h); err != nil || h.Warm == nil {
			t.Fatalf("readyz body %s: %v", body, err)
		}
		if h.Warm.Done {
			break
		}
		if i == 2400 {
			t.Fatalf("the warm-up did not end: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if h.Status != "ready" || h.Warm.Ready == 0 || h.Warm.NoBudget != 0 || h.Warm.Failed != 0 {
		t.Fatalf("readyz once warm: %+v %+v", h, *h.Warm)
	}
	status, body := f.do(t, "GET", "/metrics", "admin-token", "", "")
	if status != 200 || !strings.Contains(body, `agenthost_pool_warm_done{tenant="acme"} 1`) {
		t.Fatalf("metrics %d: no finished warm-up in\n%s", status, body)
	}
	if strings.Contains(body, "agenthost_pool_warm_no_budget{") {
		t.Fatalf("metrics name a tool left without budget under the default budget")
	}
}
