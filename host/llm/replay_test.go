package llm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/llm"
)

func TestReplay(t *testing.T) {
	r, err := llm.ParseReplay([]byte(`{"content":"a","tool_calls":[{"id":"1","name":"x","arguments":{"k":1}},{"name":"y","arguments":"{\"k\":2}"}]}

{"content":"done"}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, _ := r.Complete(ctx, llm.Request{})
	if len(first.ToolCalls) != 2 || first.ToolCalls[0].Arguments != `{"k":1}` || first.ToolCalls[1].Arguments != `{"k":2}` || first.ToolCalls[1].ID == "" {
		t.Fatalf("%+v", first)
	}
	if second, _ := r.Complete(ctx, llm.Request{}); second.Content != "done" {
		t.Fatalf("%+v", second)
	}
	if _, err := r.Complete(ctx, llm.Request{}); err == nil || !strings.Contains(err.Error(), "no turn 3") {
		t.Fatalf("past the end: %v", err)
	}
	for _, bad := range []string{`{"content": 1}`, `not json`, `{"content":"x","extra":true}`} {
		if _, err := llm.ParseReplay([]byte(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
