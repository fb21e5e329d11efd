package audit_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/audit"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
)

// TestSchemaRewrites pins that a tool whose parameter schema providers
// refuse (a top-level oneOf) is flagged in every format, and one they
// take as written is not.
func TestSchemaRewrites(t *testing.T) {
	oneOf := &manifest.Tool{ToolID: "hash:digest", Version: "1.0.0",
		Parameters: json.RawMessage(`{"type":"object","oneOf":[{"required":["text"]},{"required":["path"]}],"properties":{"text":{},"path":{}}}`)}
	plain := &manifest.Tool{ToolID: "text:stats", Version: "1.0.0",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
	r := audit.Build([]audit.Entry{{Tool: oneOf, Grant: &policy.Grant{}}, {Tool: plain, Grant: &policy.Grant{}}}, audit.Environment{})
	byID := map[string]audit.Tool{}
	for _, tl := range r.Tools {
		byID[tl.ID] = tl
	}
	if got := byID["hash:digest"].SchemaRewrites; len(got) != 1 || !strings.Contains(got[0], "top-level oneOf") {
		t.Fatalf("hash:digest rewrites %q", got)
	}
	if got := byID["text:stats"].SchemaRewrites; len(got) != 0 {
		t.Fatalf("text:stats rewrites %q", got)
	}
	for format, want := range map[string]string{"text": "schema rewritten for model providers", "markdown": "Schema rewritten for model providers", "json": `"schemaRewrites":["top-level oneOf`} {
		var b bytes.Buffer
		if err := r.Write(&b, format); err != nil {
			t.Fatal(err)
		}
		out := strings.ReplaceAll(b.String(), `": [`+"\n", `":[`)
		out = strings.Join(strings.Fields(out), "")
		if !strings.Contains(out, strings.Join(strings.Fields(want), "")) || strings.Count(b.String(), "top-level oneOf") != 1 {
			t.Errorf("%s:\n%s", format, b.String())
		}
	}
}
