package wire_test

import (
	"reflect"
	"testing"

	"github.com/agenthost/agenthost/host/wire"
)

func TestCollisions(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []string
		want map[string][]string
	}{
		{"none", []string{"core:echo", "mcp:demo.add"}, map[string][]string{}},
		{"dot and underscore", []string{"mcp:demo.a_b", "core:echo", "mcp:demo.a.b"},
			map[string][]string{"mcp__demo_a_b": {"mcp:demo.a.b", "mcp:demo.a_b"}}},
		{"across servers", []string{"mcp:s1.a.b", "mcp:s1_a.b", "mcp:s1.a_b"},
			map[string][]string{"mcp__s1_a_b": {"mcp:s1.a.b", "mcp:s1.a_b", "mcp:s1_a.b"}}},
		{"an ID twice is not a collision", []string{"core:echo", "core:echo"}, map[string][]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wire.Collisions(tc.ids); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
