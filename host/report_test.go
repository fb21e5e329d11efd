package host_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
)

// TestLibrary pins the catalogue as a Go API: tools by kind and by tags,
// health per tool (call counts, last failure, load errors) and a batch of
// concurrent calls with one result each, in order.
func TestLibrary(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t), "../cmd/agenthost/testdata/badpack")
	if err := h.Register(host.Func(host.FuncSpec{ID: "app:greet", Description: "Greets.", Tags: []string{"text", "app"}}, greet)); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, k := range []string{host.KindWasm, host.KindExtism, host.KindScript, host.KindNative} {
		kinds[k] = len(h.Tools(host.Query{Kind: k, Uncallable: true}))
	}
	if kinds[host.KindWasm] < 10 || kinds[host.KindExtism] != 2 || kinds[host.KindScript] != 2 || kinds[host.KindNative] != 1 {
		t.Fatalf("tools by kind %v", kinds)
	}
	if got := h.Tools(host.Query{Tags: []string{"text", "app"}}); len(got) != 1 || got[0].ToolID != "app:greet" {
		t.Fatalf("tools with tags: %v", got)
	}
	ctx := context.Background()
	res := h.Batch(ctx, []host.BatchCall{
		{Tool: "core:echo", Args: json.RawMessage(`{"i":0}`)},
		{Tool: "text:stats", Args: json.RawMessage(`{"txt":"bad"}`)},
		{Tool: "app:greet", Args: json.RawMessage(`{"name":"Ada"}`)},
		{Tool: "core:echo", Args: json.RawMessage(`{"i":3}`)},
	})
	if len(res) != 4 || string(res[0].Output) != `{"i":0}` || res[1].Error == nil || res[1].Error.Code != abi.CodeInvalidArguments ||
		string(res[2].Output) != `{"text":"hello Ada"}` || string(res[3].Output) != `{"i":3}` {
		t.Fatalf("batch %+v", res)
	}
	byID := map[string]host.ToolHealth{}
	for _, th := range h.Health() {
		byID[th.ID] = th
	}
	if s := byID["text:stats"]; !s.Loaded || s.Calls != 1 || s.Failures != 1 || s.LastFailure == nil || s.LastFailure.Code != abi.CodeInvalidArguments {
		t.Fatalf("health of text:stats %+v", s)
	}
	if e := byID["core:echo"]; e.Calls != 2 || e.Failures != 0 || e.Kind != host.KindWasm {
		t.Fatalf("health of core:echo %+v", e)
	}
	if b := byID["bad:tool"]; b.Loaded || b.LoadError == "" {
		t.Fatalf("health of the broken manifest %+v", b)
	}
}

// TestToolsQuery pins what each field of a Query selects, and that only
// Uncallable adds the tools a model may not call (denied, or network
// tools with no host granted).
func TestToolsQuery(t *testing.T) {
	h := hosttest.NewHost(t, hosttest.Policy(t, `tools: {"core:echo": {deny: true}}`), hosttest.Toolpacks(t))
	tests := []struct {
		name    string
		q       host.Query
		present []string
		absent  []string
	}{
		{"zero value: the callable", host.Query{}, []string{"text:stats", "fs:read"}, []string{"core:echo", "web:fetch"}},
		{"uncallable too", host.Query{Uncallable: true}, []string{"text:stats", "core:echo", "web:fetch"}, nil},
		{"namespace", host.Query{Namespace: "text"}, []string{"text:stats"}, []string{"fs:read"}},
		{"namespace, uncallable", host.Query{Namespace: "core", Uncallable: true}, []string{"core:echo"}, []string{"text:stats"}},
		{"kind", host.Query{Kind: host.KindWasm}, []string{"text:stats"}, []string{"core:echo"}},
		{"no such kind", host.Query{Kind: "hologram"}, nil, []string{"text:stats", "fs:read"}},
		{"a tag nobody has", host.Query{Tags: []string{"no-such-tag"}}, nil, []string{"text:stats", "fs:read"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]bool{}
			for _, tl := range h.Tools(tc.q) {
				got[tl.ToolID] = true
			}
			for _, id := range tc.present {
				if !got[id] {
					t.Errorf("%s is missing", id)
				}
			}
			for _, id := range tc.absent {
				if got[id] {
					t.Errorf("%s is selected", id)
				}
			}
		})
	}
}
