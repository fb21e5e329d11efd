package serve_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/profile"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// exampleServer serves the documented replay example (the text-analyst
// profile and its transcript) for one tenant, acme; every run replays
// the transcript from its start, as a model answering alike would. The
// replays are returned for a look at what the model was sent.
func exampleServer(t *testing.T) (*httptest.Server, *[]*llm.Replay) {
	t.Helper()
	ctx := context.Background()
	root := hosttest.Root(t)
	prof, err := profile.Load(filepath.Join(root, "examples", "agent", "text-analyst.profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	transcript, err := os.ReadFile(filepath.Join(root, "examples", "agent", "text-analyst.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var replays []*llm.Replay
	tenant := &serve.Tenant{Name: "acme", Host: h, Profiles: map[string]*profile.Profile{prof.ID: prof},
		Provider: func(*profile.Profile) (llm.Provider, string, error) {
			p, err := llm.ParseReplay(transcript)
			mu.Lock()
			replays = append(replays, p)
			mu.Unlock()
			return p, "replay", err
		}}
	auth := serve.NewAuthenticator([]serve.TokenEntry{{SHA256: hash("acme-token"), Tenant: "acme", Scopes: []string{"call", "sessions"}}})
	api, err := serve.New(serve.Options{Tenants: map[string]*serve.Tenant{"acme": tenant}, Auth: auth, Store: st, MaxBody: 1 << 20, MaxConcurrent: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		api.Close()
		st.Close()
		h.Close(ctx)
	})
	return srv, &replays
}

// TestAGUIUniqueCallIDs runs the documented replay example twice on one
// thread with the official @ag-ui/client: the transcript's model IDs
// (call_1, call_2) repeat, the IDs the client sees do not, and the second
// run's model request holds the first run's whole conversation (its tool
// calls and results under those IDs), as the client sent it.
func TestAGUIUniqueCallIDs(t *testing.T) {
	node, err := exec.LookPath("node")
	_, modErr := os.Stat("testdata/agui/node_modules/@ag-ui/client")
	if err != nil || modErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or @ag-ui/client missing (.ci/run runs npm ci in host/serve/testdata/agui): %v %v", err, modErr)
		}
		t.Skip("node or @ag-ui/client is not installed (npm ci in host/serve/testdata/agui)")
	}
	srv, replays := exampleServer(t)
	cmd := exec.Command(node, "two-runs.mjs", srv.URL, "acme-token", "text-analyst", "two-runs")
	cmd.Dir = "testdata/agui"
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Runs []struct {
			Events      []string `json:"events"`
			ToolCallIDs []string `json:"toolCallIds"`
		} `json:"runs"`
		Messages []struct {
			Role       string  `json:"role"`
			ToolCallID *string `json:"toolCallId"`
			ToolCalls  []struct {
				ID, Name, Arguments string
			} `json:"toolCalls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	seen := map[string]bool{}
	for i, r := range got.Runs {
		if len(r.Events) == 0 || r.Events[len(r.Events)-1] != "RUN_FINISHED" {
			t.Fatalf("run %d events %v", i+1, r.Events)
		}
		if len(r.ToolCallIDs) != 2 {
			t.Fatalf("run %d tool calls %v", i+1, r.ToolCallIDs)
		}
		for _, id := range r.ToolCallIDs {
			if seen[id] || id == "call_1" || id == "call_2" {
				t.Fatalf("tool call ID %q repeats across runs or is the model's: %s", id, out)
			}
			seen[id] = true
		}
	}
	// The client merged nothing: each of its assistant tool calls keeps
	// the arguments of its own run.
	var calls int
	for _, m := range got.Messages {
		for _, c := range m.ToolCalls {
			calls++
			if !json.Valid([]byte(c.Arguments)) {
				t.Fatalf("merged arguments %q", c.Arguments)
			}
		}
	}
	if calls != 4 {
		t.Fatalf("the client holds %d tool calls, want 4: %s", calls, out)
	}
	// What the model got in the second run: the first run's tool calls
	// and results, paired, under the host's IDs.
	if len(*replays) != 2 {
		t.Fatalf("%d provider instances", len(*replays))
	}
	first := (*replays)[1].Requests[0].Messages
	var ids []string
	for _, m := range first {
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) != 2 || ids[0] != got.Runs[0].ToolCallIDs[0] || ids[1] != got.Runs[0].ToolCallIDs[1] {
		t.Fatalf("the second run's history holds calls %v, the first run showed %v", ids, got.Runs[0].ToolCallIDs)
	}
}
