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
	if err := h.Register(host.Func("app:greet", "Greets.", greet, host.WithTags("text", "app"))); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, k := range []string{host.KindWasm, host.KindExtism, host.KindScript, host.KindNative} {
		kinds[k] = len(h.ToolsOfKind(k))
	}
	if kinds[host.KindWasm] < 10 || kinds[host.KindExtism] != 2 || kinds[host.KindScript] != 2 || kinds[host.KindNative] != 1 {
		t.Fatalf("tools by kind %v", kinds)
	}
	if got := h.ToolsWithTags("text", "app"); len(got) != 1 || got[0].ToolID != "app:greet" {
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
