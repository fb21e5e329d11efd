package profile

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		e, id string
		want  bool
	}{
		{"fs:*", "fs:read", true},
		{"fs:*", "fsx:read", false},
		{"mcp:github.*", "mcp:github.create_issue", true},
		{"mcp:github.*", "mcp:gitlab.x", false},
		{"core:echo", "core:echo", true},
		{"core:echo", "core:echoes", false},
		{"*", "a:b", true},
		{"text:?tats", "text:stats", true},
		{"*:*-*", "data:csv-to-json", true},
		{"a*b*c", "a:xbyc", true},
		{"a*b*c", "a:xbyd", false},
	}
	for _, tc := range tests {
		if got := Match(tc.e, tc.id); got != tc.want {
			t.Errorf("Match(%q, %q) = %v", tc.e, tc.id, got)
		}
	}
}

func TestParse(t *testing.T) {
	bad := []struct{ doc, want string }{
		{`{"id":"a","tool_ids_inventory":["core:echo"],"colour":1}`, `unknown field "colour"`},
		{`{"id":"A b","tool_ids_inventory":["core:echo"]}`, `id "A b"`},
		{`{"id":"a","mode":"chaos","tool_ids_inventory":["core:echo"]}`, `mode "chaos"`},
		{`{"id":"a","maxIterations":5000,"tool_ids_inventory":["core:echo"]}`, "maxIterations 5000"},
		{`{"id":"a","model":{"provider":"bard"},"tool_ids_inventory":["core:echo"]}`, `model.provider "bard"`},
		{`{"id":"a","model":{"provider":"replay"},"tool_ids_inventory":["core:echo"]}`, "needs model.replay"},
		{`{"id":"a","tool_ids_inventory":[]}`, "tool_ids_inventory is empty"},
		{`{"id":"a","tool_ids_inventory":["echo"]}`, "tool_ids_inventory[0]"},
		{`{"id":"a","tool_ids_inventory":["fs:[a]*"]}`, "a glob holds"},
		{`{"id":"a","tool_ids_inventory":["core:echo"]} {}`, "more than one value"},
	}
	for _, tc := range bad {
		if _, err := Parse([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
	p, err := Parse([]byte(`{"id":"helper","mode":"router","maxIterations":5,"model":{"provider":"openai","name":"m"},"tool_ids_inventory":["fs:*","text:stats"]}`))
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"core:echo", "fs:list", "fs:read", "text:stats", "text:diff"}
	got, err := p.Resolve(ids)
	if err != nil || strings.Join(got, ",") != "fs:list,fs:read,text:stats" {
		t.Fatalf("%v %v", got, err)
	}
	p.Inventory = []string{"text:stat", "web:*"}
	if _, err := p.Resolve(ids); err == nil || !strings.Contains(err.Error(), `"text:stat" matches no loaded tool (nearest: text:stats)`) || !strings.Contains(err.Error(), `"web:*" matches no loaded tool`) {
		t.Fatalf("unmatched entries: %v", err)
	}
}
