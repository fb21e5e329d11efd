package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner/mcpclient"
)

// descriptors returns this process's open descriptors: number → what it
// is (a path, pipe:[…], socket:[…], user:[…]).
func descriptors(t *testing.T) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	m := map[string]string{}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			m[e.Name()] = l
		}
	}
	return m
}

// TestCloseReleasesDescriptors: a host that ran script tools (Python and
// Node.js, some ending at their timeout), WebAssembly tools and a stdio
// MCP server, concurrently, leaves no descriptor open after Close: no
// user namespace, pipe, socket or file it made. The allowance is zero:
// what the Go runtime keeps open (its network poller, the cgroup files
// it reads GOMAXPROCS from) is open before the test starts.
func TestCloseReleasesDescriptors(t *testing.T) {
	before := descriptors(t)
	tp := hosttest.Toolpacks(t)
	bin, defs := mcpTestServer(t)
	pdir := t.TempDir()
	pol := filepath.Join(pdir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("limits: {default: {timeoutMs: 10000}}\nmcpServers:\n  demo:\n    command: "+bin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lock, err := mcpclient.ReadLock(mcpclient.LockPath(pol))
	if err != nil {
		t.Fatal(err)
	}
	lock.Pin("demo", defs)
	if err := lock.Write(mcpclient.LockPath(pol)); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(pol)
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{filepath.Join(tp, "core"), filepath.Join(tp, "text"), filepath.Join(tp, "scripts"), sleepPack(t, 100)}
	calls := []struct{ id, args string }{
		{"node:semver-compare", `{"a":"1.0.0","b":"1.0.1"}`},
		{"py:markdown-outline", `{"markdown":"# a\n## b"}`},
		{"core:echo", `{"a":1}`},
		{"text:stats", `{"text":"one two"}`},
		{"t:sleep", `{}`}, // TIMEOUT
		{"mcp:demo.echo", `{"text":"hi"}`},
		{"mcp:demo.hang", `{}`}, // cancelled by the caller
	}
	ctx := context.Background()
	round := func() {
		h, err := host.New(ctx, host.Options{Dirs: dirs, Policy: p, CacheDir: hosttest.CacheDir(t)})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 2 * len(calls) {
					c := calls[(w+i)%len(calls)]
					cctx, cancel := context.WithCancel(ctx)
					if strings.HasSuffix(c.id, ".hang") {
						cancel()
					}
					env := h.Call(cctx, c.id, json.RawMessage(c.args))
					cancel()
					if env.Error != nil && env.Error.Code == "INTERNAL" {
						t.Errorf("%s: %v", c.id, env.Error)
					}
				}
			}()
		}
		wg.Wait()
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		round()
	}
	after := descriptors(t)
	var extra []string
	for fd, what := range after {
		if before[fd] != what {
			extra = append(extra, fd+" → "+what)
		}
	}
	sort.Strings(extra)
	if len(after) > len(before) {
		t.Fatalf("%d descriptors before, %d after Close; new:\n%s", len(before), len(after), strings.Join(extra, "\n"))
	}
}
